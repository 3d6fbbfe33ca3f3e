"""The policy lifecycle (draft -> published -> superseded) and the loader of live versions.

All acts are administrators' (``E_NOT_AN_ADMINISTRATOR``, 403; the listing answers 404 to others so a
non-administrator learns nothing about the rules). A policy has at most one draft and one published
version (partial unique indexes). Editing replaces the draft; publishing supersedes the live version and
promotes the draft with the next version number, both guarded on the draft still being a draft
(``E_POLICY_PUBLISH_RACED``). Published content never changes. Publishing a version whose canonical hash
equals the live one is refused (``E_POLICY_UNCHANGED``). A ``require_approval`` version is checked at
publication: every team it names exists (``E_NO_SUCH_TEAM``), its stages can be filled on the mailbox it
names or, when it names none, on every mailbox (``E_APPROVAL_UNSATISFIABLE``; no actor is known yet, so
nobody is excluded), and it names no different team at an ordinal where an overlapping live version names
one (``E_POLICY_STAGE_TEAM_CONFLICT``). Audit: ``policy.drafted``, ``policy.published``.

``load_live(conn, org_id)`` reads every published version with its stages in one statement for
``policy.evaluate`` (spec/outbound.md §5).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select, update
from sqlalchemy.exc import IntegrityError

from mailnode import audit
from mailnode.authz import is_admin, require_admin
from mailnode.errors import conflict, invalid, not_found
from mailnode.governance import approvals as ap
from mailnode.governance.matching import shortfall
from mailnode.governance.policy import Conditions, LiveVersion, Outcome, Stage, canonical_sha256, validate
from mailnode.ids import is_id, new_id, parse_id
from mailnode.schema.directory import teams
from mailnode.schema.governance import policies, policy_stages, policy_versions
from mailnode.schema.mail import mailboxes

DRAFT = "draft"
PUBLISHED = "published"
SUPERSEDED = "superseded"


def _no_policy(policy_id: str) -> Any:
    return not_found("E_NO_SUCH_POLICY", f"No policy {policy_id}.", fix="List policies with GET /api/policies.",
                     policy_id=policy_id)


def _check_conditions(conn: Connection, org_id: str, c: Conditions) -> None:
    if c.mailbox_id is not None:
        parse_id(c.mailbox_id, "mbx", "conditions.mailbox_id")
        found = conn.execute(select(mailboxes.c.id).where(mailboxes.c.id == c.mailbox_id,
                                                          mailboxes.c.org_id == org_id)).first()
        if found is None:
            raise not_found("E_NO_SUCH_MAILBOX", f"No mailbox {c.mailbox_id}.",
                            fix="List mailboxes with GET /api/mailboxes.", mailbox_id=c.mailbox_id)
    if c.actor_id is not None and not any(is_id(c.actor_id, p) for p in ("usr", "btl", "app")):
        raise invalid("E_ID_MALFORMED", f"conditions.actor_id {c.actor_id!r} is not a user, Butler or application id.",
                      "An actor is usr_..., btl_... or app_....", "Copy the id from GET /api/users.",
                      actor_id=c.actor_id)


def _insert_version(conn: Connection, *, org_id: str, policy_id: str, actor_id: str, outcome: Outcome,
                    c: Conditions, stages: Sequence[Stage], now: datetime) -> str:
    vid = new_id("plv")
    conn.execute(policy_versions.insert().values(
        id=vid, org_id=org_id, policy_id=policy_id, version=None, state=DRAFT, outcome=outcome.value,
        when_mailbox_id=c.mailbox_id, when_actor_id=c.actor_id, when_actor_kind=c.actor_kind,
        when_recipient_external=c.recipient_external, when_is_reply=c.is_reply,
        when_org_daily_volume_min=c.org_daily_volume_min, canonical_sha256=canonical_sha256(outcome, c, stages),
        created_by=actor_id, created_at=now))
    if stages:
        conn.execute(policy_stages.insert(), [
            {"id": new_id("pst"), "org_id": org_id, "policy_version_id": vid, "ordinal": s.ordinal,
             "required_count": s.count, "team_id": s.team_id, "created_at": now} for s in stages])
    return vid


def create(conn: Connection, *, org_id: str, actor_id: str, name: object, outcome: object, conditions: Conditions,
           stages: Sequence[dict[str, Any]], now: datetime) -> dict[str, Any]:
    """Create a policy with its first draft; returns the policy as ``get`` shows it.

    Raises ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_POLICY_NEEDS_A_NAME`` and ``policy.validate``'s codes
    (422), ``E_POLICY_NAME_TAKEN`` (409), ``E_NO_SUCH_MAILBOX`` (404).
    """
    require_admin(conn, org_id, actor_id, "create a policy")
    title = str(name or "").strip()
    if not title:
        raise invalid("E_POLICY_NEEDS_A_NAME", "The policy needs a name.", "Names tell policies apart in lists.",
                      "Send a non-blank name.")
    out, parsed = validate(outcome, conditions, stages)
    _check_conditions(conn, org_id, conditions)
    pid = new_id("pol")
    try:
        with conn.begin_nested():
            conn.execute(policies.insert().values(id=pid, org_id=org_id, name=title, created_by=actor_id,
                                                  created_at=now))
    except IntegrityError:
        raise conflict("E_POLICY_NAME_TAKEN", f"A policy named {title!r} exists.", "Policy names are unique.",
                       "Edit it with POST /api/policies/{id}/draft, or choose another name.", name=title) from None
    vid = _insert_version(conn, org_id=org_id, policy_id=pid, actor_id=actor_id, outcome=out, c=conditions,
                          stages=parsed, now=now)
    audit.append(conn, org_id=org_id, at=now, action="policy.drafted", actor_id=actor_id, subject=pid,
                 detail={"version_id": vid, "name": title, "outcome": out.value, "replaced_draft": None})
    return get(conn, org_id=org_id, policy_id=pid)


def edit_draft(conn: Connection, *, org_id: str, actor_id: str, policy_id: str, outcome: object,
               conditions: Conditions, stages: Sequence[dict[str, Any]], now: datetime) -> dict[str, Any]:
    """Replace the policy's draft (or start one); returns the policy. Raises as ``create`` and ``E_NO_SUCH_POLICY``."""
    require_admin(conn, org_id, actor_id, "edit a policy")
    parse_id(policy_id, "pol", "policy_id")
    if conn.execute(select(policies.c.id)
                    .where(policies.c.id == policy_id, policies.c.org_id == org_id)).first() is None:
        raise _no_policy(policy_id)
    out, parsed = validate(outcome, conditions, stages)
    _check_conditions(conn, org_id, conditions)
    v = policy_versions.c
    old = conn.execute(select(v.id).where(v.policy_id == policy_id, v.state == DRAFT)).first()
    if old is not None:
        conn.execute(delete(policy_stages).where(policy_stages.c.policy_version_id == old.id))
        conn.execute(delete(policy_versions).where(v.id == old.id, v.state == DRAFT))
    vid = _insert_version(conn, org_id=org_id, policy_id=policy_id, actor_id=actor_id, outcome=out, c=conditions,
                          stages=parsed, now=now)
    audit.append(conn, org_id=org_id, at=now, action="policy.drafted", actor_id=actor_id, subject=policy_id,
                 detail={"version_id": vid, "outcome": out.value, "replaced_draft": old.id if old else None})
    return get(conn, org_id=org_id, policy_id=policy_id)


def _conditions_of(r: Any) -> Conditions:
    return Conditions(r.when_mailbox_id, r.when_actor_id, r.when_actor_kind, r.when_recipient_external,
                      r.when_is_reply, r.when_org_daily_volume_min)


def _stages_of(conn: Connection, version_id: str) -> tuple[Stage, ...]:
    rows = conn.execute(select(policy_stages).where(policy_stages.c.policy_version_id == version_id)
                        .order_by(policy_stages.c.ordinal)).all()
    return tuple(Stage(r.ordinal, r.required_count, r.team_id) for r in rows)


def _check_approval_stages(conn: Connection, org_id: str, draft: Any, stages: tuple[Stage, ...]) -> None:
    chain = stages or (Stage(1, 1),)
    named = {s.team_id for s in chain if s.team_id}
    if named:
        found = {r.id for r in conn.execute(select(teams.c.id).where(teams.c.org_id == org_id,
                                                                     teams.c.id.in_(sorted(named)))).all()}
        missing = sorted(named - found)
        if missing:
            raise not_found("E_NO_SUCH_TEAM", f"The stages name teams that do not exist: {', '.join(missing)}.",
                            fix="Create the team (POST /api/teams) or name one from GET /api/teams.",
                            team_ids=missing)
    boxes = ([draft.when_mailbox_id] if draft.when_mailbox_id else
             [r.id for r in conn.execute(select(mailboxes.c.id).where(mailboxes.c.org_id == org_id)
                                         .order_by(mailboxes.c.id)).all()])
    teams_now = ap.rosters(conn, named)
    spec = ap.SUBJECTS[ap.SubjectKind.SEND_MANIFEST]
    for box in boxes:
        people = ap.approvers(conn, org_id=org_id, scope_type=spec.scope_type, relation=spec.relation, scope_id=box)
        short = shortfall(chain, people, teams_now)
        if short is not None:
            raise conflict("E_APPROVAL_UNSATISFIABLE", f"On mailbox {box} nobody could complete this approval.",
                           short.sentence(),
                           "Grant approval.decide on the mailbox to more people (POST /api/access), or ask for fewer.",
                           mailbox_id=box, shortfall=short.to_json())
    for live in load_live(conn, org_id):
        if live.outcome != Outcome.REQUIRE_APPROVAL.value or live.policy_id == draft.policy_id:
            continue
        overlap = (live.conditions.mailbox_id is None or draft.when_mailbox_id is None
                   or live.conditions.mailbox_id == draft.when_mailbox_id)
        if not overlap:
            continue
        theirs = {s.ordinal: s.team_id for s in live.stages if s.team_id}
        for s in chain:
            other = theirs.get(s.ordinal)
            if s.team_id and other and other != s.team_id:
                raise conflict("E_POLICY_STAGE_TEAM_CONFLICT",
                               f"Stage {s.ordinal} names team {s.team_id}; live policy {live.policy_name!r} names "
                               f"{other} there.", "A send matching both could not be approved by either team alone.",
                               "Name the same team, or move the stage to another ordinal, and publish again.",
                               ordinal=s.ordinal, policy_id=live.policy_id)


def publish(conn: Connection, *, org_id: str, actor_id: str, policy_id: str, now: datetime) -> dict[str, Any]:
    """Publish the draft; returns the policy. Raises ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_NO_SUCH_POLICY``
    (404), ``E_NO_POLICY_DRAFT``, ``E_POLICY_UNCHANGED``, ``E_POLICY_PUBLISH_RACED`` (409), and for
    ``require_approval`` ``E_NO_SUCH_TEAM`` (404), ``E_APPROVAL_UNSATISFIABLE``, ``E_POLICY_STAGE_TEAM_CONFLICT``
    (409)."""
    require_admin(conn, org_id, actor_id, "publish a policy")
    parse_id(policy_id, "pol", "policy_id")
    pol = conn.execute(select(policies).where(policies.c.id == policy_id, policies.c.org_id == org_id)).first()
    if pol is None:
        raise _no_policy(policy_id)
    v = policy_versions.c
    rows = conn.execute(select(policy_versions).where(v.policy_id == policy_id, v.state.in_((DRAFT, PUBLISHED)))).all()
    draft = next((r for r in rows if r.state == DRAFT), None)
    live = next((r for r in rows if r.state == PUBLISHED), None)
    if draft is None:
        raise conflict("E_NO_POLICY_DRAFT", f"Policy {pol.name!r} has no draft to publish.",
                       "Publishing promotes the draft.", "Write one with POST /api/policies/{id}/draft.",
                       policy_id=policy_id)
    if live is not None and live.canonical_sha256 == draft.canonical_sha256:
        raise conflict("E_POLICY_UNCHANGED",
                       f"The draft of {pol.name!r} says exactly what version {live.version} says.",
                       "Publishing an unchanged version would add a version that changes nothing.",
                       "Change the draft (POST /api/policies/{id}/draft), or leave the live version as it is.",
                       policy_id=policy_id, version=live.version)
    stages = _stages_of(conn, draft.id)
    if draft.outcome == Outcome.REQUIRE_APPROVAL.value:
        _check_approval_stages(conn, org_id, draft, stages)
    latest = conn.execute(select(func.max(v.version)).where(v.policy_id == policy_id)).scalar() or 0
    if live is not None:
        conn.execute(update(policy_versions).where(v.id == live.id, v.state == PUBLISHED)
                     .values(state=SUPERSEDED, superseded_at=now))
    done = conn.execute(update(policy_versions).where(v.id == draft.id, v.state == DRAFT)
                        .values(state=PUBLISHED, version=int(latest) + 1, published_by=actor_id, published_at=now))
    if done.rowcount != 1:
        raise conflict("E_POLICY_PUBLISH_RACED", f"The draft of {pol.name!r} changed while publishing.",
                       "Another administrator edited or published it.", "Read GET /api/policies and publish again.",
                       policy_id=policy_id)
    audit.append(conn, org_id=org_id, at=now, action="policy.published", actor_id=actor_id, subject=policy_id,
                 detail={"version_id": draft.id, "version": int(latest) + 1, "outcome": draft.outcome,
                         "superseded": live.id if live else None})
    return get(conn, org_id=org_id, policy_id=policy_id)


def _version_json(conn: Connection, r: Any) -> dict[str, Any]:
    return {"id": r.id, "version": r.version, "state": r.state, "outcome": r.outcome,
            "conditions": _conditions_of(r).to_json(), "stages": [s.to_json() for s in _stages_of(conn, r.id)],
            "canonical_sha256": r.canonical_sha256, "created_at": r.created_at.isoformat(),
            "published_at": r.published_at.isoformat() if r.published_at else None,
            "superseded_at": r.superseded_at.isoformat() if r.superseded_at else None}


def get(conn: Connection, *, org_id: str, policy_id: str) -> dict[str, Any]:
    """One policy with every version, draft first, then newest version first."""
    pol = conn.execute(select(policies).where(policies.c.id == policy_id, policies.c.org_id == org_id)).first()
    if pol is None:
        raise _no_policy(policy_id)
    v = policy_versions.c
    rows = conn.execute(select(policy_versions).where(v.policy_id == policy_id)).all()
    rows = sorted(rows, key=lambda r: (r.state != DRAFT, -(r.version or 0)))
    return {"id": pol.id, "name": pol.name, "created_at": pol.created_at.isoformat(),
            "versions": [_version_json(conn, r) for r in rows]}


def list_all(conn: Connection, *, org_id: str, actor_id: str, limit: int, cursor: str | None) -> list[dict[str, Any]]:
    """Policies by name after ``cursor`` (a name), each with every version.

    Administrators only; anyone else gets ``E_NO_SUCH_POLICY`` (404), learning nothing about the rules.
    """
    if not is_admin(conn, org_id, actor_id):
        raise not_found("E_NO_SUCH_POLICY", "No policies for you to see.",
                        fix="Policies are read by administrators; ask one.")
    q = select(policies.c.id, policies.c.name).where(policies.c.org_id == org_id)
    if cursor:
        q = q.where(policies.c.name > cursor)
    rows = conn.execute(q.order_by(policies.c.name).limit(limit)).all()
    return [{**get(conn, org_id=org_id, policy_id=r.id), "cursor": r.name} for r in rows]


def load_live(conn: Connection, org_id: str) -> list[LiveVersion]:
    """Every published version of the organisation with its stages, in publication order (one statement)."""
    v = policy_versions.c
    s = policy_stages.c
    rows = conn.execute(
        select(policy_versions, policies.c.name.label("policy_name"), s.ordinal, s.required_count,
               s.team_id.label("stage_team_id"))
        .join(policies, policies.c.id == v.policy_id)
        .outerjoin(policy_stages, s.policy_version_id == v.id)
        .where(v.org_id == org_id, v.state == PUBLISHED)
        .order_by(v.published_at, v.id, s.ordinal)).all()
    out: dict[str, LiveVersion] = {}
    for r in rows:
        lv = out.get(r.id)
        if lv is None:
            lv = LiveVersion(r.policy_id, r.policy_name, r.id, int(r.version or 0), r.outcome, _conditions_of(r), ())
        if r.ordinal is not None:
            lv = LiveVersion(lv.policy_id, lv.policy_name, lv.version_id, lv.version, lv.outcome, lv.conditions,
                             lv.stages + (Stage(r.ordinal, r.required_count, r.stage_team_id),))
        out[r.id] = lv
    return list(out.values())
