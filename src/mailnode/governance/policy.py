"""The policy plane's pure half: outcomes, conditions, evaluation, the stage fold, the canonical hash.

A published policy version says: when these conditions hold (each NULL = unconstrained), the send's
outcome is at least this. Outcomes are ranked ``allow < hold < require_approval < deny``; the result is
the maximum over every matching live version, ``allow`` when none matches (spec/outbound.md §5.2, §5.4).
``require_approval`` carries stages (a count, optionally a team, per ordinal); the stages of every
matching ``require_approval`` version fold into one chain: per ordinal the largest count, a version
without stage rows counting as ``[1]``; a team beats no team; two different teams at one ordinal is
``E_POLICY_STAGE_TEAM_CONFLICT``.

Conditions: ``mailbox_id``, ``actor_id``, ``actor_kind`` (``user | butler | application``),
``recipient_external`` (True: any recipient's domain is not one of the organisation's; False: none is),
``is_reply``, ``org_daily_volume_min`` (matches when the organisation handed over at least that many
recipients in ``budgets.POLICY_DAILY_VOLUME_WINDOW_SECONDS``, counted from recipient rows). No I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mailnode.errors import MailnodeError, invalid


class Outcome(StrEnum):
    """A policy outcome; ``RANK`` orders them."""

    ALLOW = "allow"
    HOLD = "hold"
    REQUIRE_APPROVAL = "require_approval"
    DENY = "deny"


#: Rank of each outcome (higher is stricter). Total over ``Outcome``.
RANK: dict[Outcome, int] = {Outcome.ALLOW: 0, Outcome.HOLD: 1, Outcome.REQUIRE_APPROVAL: 2, Outcome.DENY: 3}

#: Actor kinds a condition may name (``audit.actor_kind_of`` of the author).
ACTOR_KINDS: tuple[str, ...] = ("user", "butler", "application")


def parse_outcome(value: object) -> Outcome:
    """The stored outcome ``value``; anything else raises ``E_POLICY_OUTCOME_UNKNOWN`` (500, fail closed)."""
    try:
        return Outcome(str(value))
    except ValueError:
        raise MailnodeError(code="E_POLICY_OUTCOME_UNKNOWN", what=f"A live policy has the outcome {value!r}.",
                            why="Outcomes are allow, hold, require_approval or deny; nothing is sent on a guess.",
                            fix="Publish a corrected version of the policy (POST /api/policies/{id}/draft, then "
                                "/publish).", status=500, detail={"outcome": str(value)}) from None


def stricter(current: Outcome, bound: str | None) -> bool:
    """True when ``current`` outranks the outcome bound at seal (None or unknown bound counts as ``allow``)."""
    try:
        bound_outcome = Outcome(bound) if bound is not None else Outcome.ALLOW
    except ValueError:
        bound_outcome = Outcome.ALLOW
    return RANK[current] > RANK[bound_outcome]


@dataclass(frozen=True)
class Stage:
    """One approval stage: ``count`` distinct approvers at ``ordinal`` (1-based), optionally from a team."""

    ordinal: int
    count: int
    team_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The API shape."""
        return {"ordinal": self.ordinal, "count": self.count, "team_id": self.team_id}


@dataclass(frozen=True)
class Conditions:
    """When a version applies; None = unconstrained (all None: every send)."""

    mailbox_id: str | None = None
    actor_id: str | None = None
    actor_kind: str | None = None
    recipient_external: bool | None = None
    is_reply: bool | None = None
    org_daily_volume_min: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The API shape."""
        return {"mailbox_id": self.mailbox_id, "actor_id": self.actor_id, "actor_kind": self.actor_kind,
                "recipient_external": self.recipient_external, "is_reply": self.is_reply,
                "org_daily_volume_min": self.org_daily_volume_min}


@dataclass(frozen=True)
class LiveVersion:
    """A published version as the evaluator sees it."""

    policy_id: str
    policy_name: str
    version_id: str
    version: int
    outcome: str
    conditions: Conditions
    stages: tuple[Stage, ...] = ()


@dataclass(frozen=True)
class SendFacts:
    """What a send looks like to the policy plane.

    Attributes:
        mailbox_id: the sending mailbox.
        actor_id: the author (``usr_``, ``btl_``, ``app_``).
        actor_kind: ``user | butler | application``.
        any_external: some recipient's domain is not one of the organisation's.
        is_reply: the send answers a message.
        org_daily_volume: recipients handed over in the daily window.
    """

    mailbox_id: str
    actor_id: str
    actor_kind: str
    any_external: bool
    is_reply: bool
    org_daily_volume: int


@dataclass(frozen=True)
class Matched:
    """A version that matched a send."""

    policy_id: str
    policy_name: str
    version_id: str
    version: int
    outcome: Outcome

    def to_json(self) -> dict[str, Any]:
        """The API and audit shape."""
        return {"policy_id": self.policy_id, "policy_name": self.policy_name, "version_id": self.version_id,
                "version": self.version, "outcome": self.outcome.value}


@dataclass(frozen=True)
class PolicyResult:
    """The outcome for a send, the versions that matched and, for ``require_approval``, the folded stages."""

    outcome: Outcome
    matched: tuple[Matched, ...]
    stages: tuple[Stage, ...]

    @property
    def version_ids(self) -> list[str]:
        """The matched version ids (bound on the manifest as ``policy_versions``)."""
        return [m.version_id for m in self.matched]


def matches(c: Conditions, f: SendFacts) -> bool:
    """True when every constrained condition of ``c`` holds for ``f``."""
    return ((c.mailbox_id is None or c.mailbox_id == f.mailbox_id)
            and (c.actor_id is None or c.actor_id == f.actor_id)
            and (c.actor_kind is None or c.actor_kind == f.actor_kind)
            and (c.recipient_external is None or c.recipient_external == f.any_external)
            and (c.is_reply is None or c.is_reply == f.is_reply)
            and (c.org_daily_volume_min is None or f.org_daily_volume >= c.org_daily_volume_min))


def fold_stages(stage_lists: Iterable[Sequence[Stage]]) -> tuple[Stage, ...]:
    """Fold the stages of several ``require_approval`` versions into one chain (see the module docstring).

    Raises ``E_POLICY_STAGE_TEAM_CONFLICT`` (500) when two versions name different teams at one ordinal.
    """
    by_ordinal: dict[int, Stage] = {}
    for stages in stage_lists:
        for s in (stages or (Stage(1, 1),)):
            old = by_ordinal.get(s.ordinal)
            if old is None:
                by_ordinal[s.ordinal] = s
                continue
            if old.team_id and s.team_id and old.team_id != s.team_id:
                raise MailnodeError(code="E_POLICY_STAGE_TEAM_CONFLICT",
                                    what=f"Two live policies name different teams at approval stage {s.ordinal}.",
                                    why=f"Stage {s.ordinal} cannot be both {old.team_id} and {s.team_id}.",
                                    fix="Publish a version of one policy without the clash "
                                        "(POST /api/policies/{id}/draft, then /publish).", status=500,
                                    detail={"ordinal": s.ordinal, "teams": [old.team_id, s.team_id]})
            by_ordinal[s.ordinal] = Stage(s.ordinal, max(old.count, s.count), old.team_id or s.team_id)
    return tuple(by_ordinal[k] for k in sorted(by_ordinal))


def evaluate(versions: Iterable[LiveVersion], facts: SendFacts) -> PolicyResult:
    """The outcome for ``facts``: the maximum over matching live versions (``allow`` when none matches).

    Raises ``E_POLICY_OUTCOME_UNKNOWN`` (500) for a stored outcome outside the four, and
    ``E_POLICY_STAGE_TEAM_CONFLICT`` (500) from the stage fold.
    """
    matched: list[Matched] = []
    approval_stages: list[Sequence[Stage]] = []
    for v in versions:
        outcome = parse_outcome(v.outcome)
        if not matches(v.conditions, facts):
            continue
        matched.append(Matched(v.policy_id, v.policy_name, v.version_id, v.version, outcome))
        if outcome is Outcome.REQUIRE_APPROVAL:
            approval_stages.append(v.stages)
    result = max((m.outcome for m in matched), key=RANK.__getitem__, default=Outcome.ALLOW)
    stages = fold_stages(approval_stages) if result is Outcome.REQUIRE_APPROVAL else ()
    return PolicyResult(result, tuple(matched), stages)


def canonical_sha256(outcome: Outcome, conditions: Conditions, stages: Sequence[Stage]) -> str:
    """SHA-256 (hex) of a version's meaning: outcome, conditions and stages, U+001F-separated.

    Two versions with the same hash mean the same thing; publishing one is refused (``E_POLICY_UNCHANGED``).
    """
    def part(v: object) -> str:
        return "" if v is None else str(v).lower() if isinstance(v, bool) else str(v)

    c = conditions
    fields = [outcome.value, part(c.mailbox_id), part(c.actor_id), part(c.actor_kind), part(c.recipient_external),
              part(c.is_reply), part(c.org_daily_volume_min)]
    text = "\x1f".join(fields)
    if stages:
        text += "|" + ",".join(f"{s.count}@{s.team_id or ''}" for s in sorted(stages, key=lambda s: s.ordinal))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def validate(outcome: object, conditions: Conditions,
             stages: Sequence[dict[str, Any]]) -> tuple[Outcome, tuple[Stage, ...]]:
    """Check a draft's outcome, conditions and stages; return the outcome and normalised stages.

    ``[{"count": 1}]`` with no team normalises to no stages (the implicit single approver). Raises (422):
    ``E_BAD_POLICY_OUTCOME``, ``E_BAD_POLICY_VOLUME``, ``E_BAD_ACTOR_KIND``, ``E_STAGES_WITHOUT_APPROVAL``,
    ``E_BAD_APPROVAL_STAGE``, ``E_BAD_APPROVAL_STAGE_TEAM``.
    """
    try:
        out = Outcome(str(outcome))
    except ValueError:
        raise invalid("E_BAD_POLICY_OUTCOME", f"{outcome!r} is not a policy outcome.",
                      "Outcomes are allow, hold, require_approval and deny.",
                      "Send outcome as one of allow, hold, require_approval, deny.", outcome=str(outcome)) from None
    vol = conditions.org_daily_volume_min
    if vol is not None and (isinstance(vol, bool) or not isinstance(vol, int) or vol < 1):
        raise invalid("E_BAD_POLICY_VOLUME", f"org_daily_volume_min {vol!r} is not a whole number of at least 1.",
                      "The condition compares a count of recipients.", "Give a whole number >= 1, or null.",
                      org_daily_volume_min=vol)
    if conditions.actor_kind is not None and conditions.actor_kind not in ACTOR_KINDS:
        raise invalid("E_BAD_ACTOR_KIND", f"{conditions.actor_kind!r} is not an actor kind.",
                      "Actor kinds are user, butler and application.", "Give one of them, or null.",
                      actor_kind=conditions.actor_kind)
    if stages and out is not Outcome.REQUIRE_APPROVAL:
        raise invalid("E_STAGES_WITHOUT_APPROVAL", f"Stages were given with the outcome {out.value}.",
                      "Only require_approval has approval stages.", "Drop stages, or use require_approval.")
    parsed: list[Stage] = []
    for i, raw in enumerate(stages, start=1):
        count = raw.get("count")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise invalid("E_BAD_APPROVAL_STAGE", f"Stage {i} asks for {count!r} approvers.",
                          "A stage needs a whole number of approvers, at least 1.",
                          "Give each stage {\"count\": n} with n >= 1.", ordinal=i)
        team = raw.get("team_id")
        if team is not None and (not isinstance(team, str) or not team.strip()):
            raise invalid("E_BAD_APPROVAL_STAGE_TEAM", f"Stage {i} names the team {team!r}.",
                          "A stage's team is a team id or null.", "Copy the id from GET /api/teams.", ordinal=i)
        parsed.append(Stage(i, count, team.strip() if isinstance(team, str) else None))
    if len(parsed) == 1 and parsed[0].count == 1 and parsed[0].team_id is None:
        parsed = []
    return out, tuple(parsed)
