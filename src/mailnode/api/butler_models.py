"""The answers about one Butler, as the OpenAPI document states them (``lifecycle.butler_json`` field for
field; closed models: a field the service adds and the model lacks fails loudly, never vanishes).

Instants are strings in ISO 8601 UTC as the node writes them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from mailnode.api.responses import id_field
from mailnode.api.send_models import SendRetryOffer

_INSTANT: JsonDict = {"format": "date-time"}


class _Answer(BaseModel):
    """An answer's part: closed (a field the service adds must be added here too)."""

    model_config = ConfigDict(extra="forbid")


class ButlerVersionMeta(_Answer):
    """One version of a Butler without its source: ``state`` draft, published or superseded; ``version``
    null for the draft; ``price`` the checker's cost bound."""

    id: str = id_field("btv")
    state: str
    version: int | None
    ast_sha256: str
    source_sha256: str
    price: int
    created_by: str
    created_at: str = Field(json_schema_extra=_INSTANT)
    published_by: str | None
    published_at: str | None = Field(json_schema_extra=_INSTANT)
    superseded_at: str | None = Field(json_schema_extra=_INSTANT)


class ButlerVersion(ButlerVersionMeta):
    """The current draft or live version, with its ``source`` (the program's JSON text)."""

    source: str


class ButlerDisabled(_Answer):
    """When, by whom and why a Butler was disabled."""

    at: str = Field(json_schema_extra=_INSTANT)
    by: str | None
    reason: str | None


class Butler(_Answer):
    """One Butler: its draft and live versions with sources (or null) and every version, draft first."""

    id: str = id_field("btl")
    name: str
    created_by: str
    created_at: str = Field(json_schema_extra=_INSTANT)
    disabled: ButlerDisabled | None
    draft: ButlerVersion | None
    live: ButlerVersion | None
    versions: list[ButlerVersionMeta]


class ButlerAnswer(_Answer):
    """``{"butler": Butler}``."""

    butler: Butler


class Published(_Answer):
    """The version just published and the one it superseded (null for a first publication)."""

    version_id: str = id_field("btv")
    version: int
    superseded_version_id: str | None = id_field("btv")


class ButlerPublished(_Answer):
    """``POST /api/butlers/{butler_id}/publish``: the Butler and what was published."""

    butler: Butler
    published: Published


class ButlerLiveListed(_Answer):
    """The published version a listed Butler runs, without its source."""

    id: str = id_field("btv")
    version: int
    ast_sha256: str
    published_by: str | None
    published_at: str = Field(json_schema_extra=_INSTANT)


class ButlerDraftListed(_Answer):
    """A listed Butler's draft, without its source."""

    id: str = id_field("btv")
    ast_sha256: str
    created_by: str
    created_at: str = Field(json_schema_extra=_INSTANT)


class ButlerPauseListed(_Answer):
    """The pause in force on a listed Butler (spec/butler.md §10) and the route that resumes it."""

    id: str = id_field("bpz")
    reason: str
    placed_at: str = Field(json_schema_extra=_INSTANT)
    resume: str = Field(description="the route that resumes it")


class ButlerListed(_Answer):
    """One Butler in the list (``lifecycle.list_butlers``): published (``live``) and running (no ``pause``,
    not ``disabled``) are different facts."""

    id: str = id_field("btl")
    name: str
    created_by: str
    created_at: str = Field(json_schema_extra=_INSTANT)
    disabled: ButlerDisabled | None
    live: ButlerLiveListed | None
    draft: ButlerDraftListed | None
    pause: ButlerPauseListed | None


class ButlerPage(_Answer):
    """``GET /api/butlers``: one page by name, and the cursor of the next (a name; null at the end)."""

    butlers: list[ButlerListed]
    next_cursor: str | None


class ButlerRun(_Answer):
    """A run as the API shows it (``butler.record.run_json``): everything but its trigger facts."""

    id: str = Field(description="the run's id: its version and trigger key")
    butler_id: str = id_field("btl")
    version_id: str = id_field("btv")
    trigger_event: str
    trigger_key: str
    state: str
    state_at: str = Field(json_schema_extra=_INSTANT)
    outcome_reason: str | None
    outcome_detail: dict[str, Any] | None = Field(description="why it ended; its keys depend on outcome_reason")
    started_at: str = Field(json_schema_extra=_INSTANT)
    finished_at: str | None = Field(json_schema_extra=_INSTANT)
    nodes_executed: int
    effects: int
    refusals: int
    statements_spent: int
    provoked_by: str | None
    self_provoked: bool
    replay_of: str | None
    replayed_by: str | None


class ButlerRunPage(_Answer):
    """``GET /api/butler-runs``: one page, newest first, and the cursor of the next (a run id; null at the end)."""

    butler_runs: list[ButlerRun]
    next_cursor: str | None


class EffectRow(_Answer):
    """One effect row of a run (``butler.record.effect_json``): everything but what it bound."""

    id: str = id_field("bre")
    seq: int
    node_id: str
    node_type: str
    step: str
    outcome: str
    reason: str | None
    subject: str | None = Field(description="the id of what the effect made or touched, or null")
    statements: int
    at: str = Field(json_schema_extra=_INSTANT)


class ButlerRunWithEffects(ButlerRun):
    """One run with its effect rows in walk order."""

    effect_rows: list[EffectRow]


class ButlerRunAnswer(_Answer):
    """``GET /api/butler-runs/{run_id}``: ``{"butler_run": ButlerRunWithEffects}``."""

    butler_run: ButlerRunWithEffects


class ButlerReplay(_Answer):
    """A re-run opened (``butler.replay.open_rerun``): the new run, the run it replays and the live version
    it runs."""

    mode: str = Field(description="re-run")
    run_id: str
    replay_of: str
    version_id: str = id_field("btv")


class ReplayAnswer(_Answer):
    """``POST /api/butler-runs/{run_id}/replay`` (202): ``{"replay": Replay}``."""

    replay: ButlerReplay


class SimulationOutcome(_Answer):
    """How the dry run's walk ended: the run state it would reach, the reason token and its detail (``what``
    only when the caller may read the mailbox's metadata)."""

    state: str
    reason: str | None
    detail: dict[str, Any] = Field(description="the walk's detail; its keys depend on the reason")


class SimulationNode(_Answer):
    """One node the walk visited, in order (``step`` is ``<node_id>#<visit>``): ``verdict`` ``ran`` or
    ``not_reached``, or an effect's ``would`` | ``refused`` with its ``seq``, ``reason`` and ``subject``; a
    ``draft`` also carries who it would reply to (``recipient``, null when the caller may not read the
    mailbox). Absent fields are absent from the JSON, not null."""

    node_id: str
    type: str | None
    step: str
    verdict: str
    seq: int | None = None
    reason: str | None = None
    subject: str | None = None
    recipient: str | None = None


class SimulationPrice(_Answer):
    """The statements the program may spend: the checker's bound, the engine's fixed cost, the pot and what
    the walk's effects reserved."""

    checker: int
    engine_fixed: int
    pot: int
    reserved_by_walk: int


class SimulationWait(_Answer):
    """A wait the walk reported instead of sleeping."""

    step: str
    seconds: int


class Simulation(_Answer):
    """The dry run's report (``butler.simulate.simulate``); ``price`` is null when the program does not
    check."""

    butler_id: str = id_field("btl")
    version_id: str = id_field("btv")
    version_state: str = Field(description="draft or published")
    run_id: str
    paused: str | None = Field(description="the id of the pause in force on the Butler, or null")
    limits: list[str] = Field(description="what a dry run cannot tell, in words")
    waits: list[SimulationWait]
    nodes: list[SimulationNode]
    trigger_facts_redacted: list[str] | None = Field(
        description="the content facts withheld from the caller, null when it may read them")
    checks: bool
    findings: list[str] = Field(description="the checker's findings, each in its four-part text")
    outcome: SimulationOutcome
    price: SimulationPrice | None


class SimulationAnswer(_Answer):
    """``POST /api/butlers/{butler_id}/simulate``: ``{"simulation": Simulation}``."""

    simulation: Simulation


class RunProgramNode(_Answer):
    """A node of the run's program: its id and type, as stored (null when the stored document lacks them)."""

    id: str | None
    type: str | None


class RunProgram(_Answer):
    """The program the run walked (``butler.replay.program_json``) and whether it still checks."""

    version_id: str = id_field("btv")
    state: str
    trigger: Any = Field(description="the program's trigger as stored")
    entry: Any = Field(description="the program's entry node as stored")
    nodes: list[RunProgramNode]
    checks: bool
    findings: list[str] = Field(description="the checker's findings, each in its four-part text")


class RedactedFacts(_Answer):
    """The content facts withheld from the caller and why."""

    keys: list[str]
    why: str


class RunEffectSend(_Answer):
    """The send a ``mail.send.propose`` effect sealed, as it stands now."""

    id: str = id_field("snd")
    state: str
    state_reason: str | None
    reason_words: str
    fidelity: str
    retry: SendRetryOffer
    content_deleted_at: str | None = Field(json_schema_extra=_INSTANT)
    resent_as: list[str] = Field(description="the sends made as resends of it")


class InspectedEffect(EffectRow):
    """An effect row; a ``mail.send.propose`` row whose subject is a send id also carries ``send`` (null when
    the send is gone). Absent from the JSON on other rows, not null."""

    send: RunEffectSend | None = None


class RunWithName(ButlerRun):
    """The run with its Butler's name."""

    butler_name: str


class RunReplayListed(_Answer):
    """A replay made of the run."""

    id: str
    version_id: str = id_field("btv")
    state: str
    outcome_reason: str | None
    started_at: str = Field(json_schema_extra=_INSTANT)
    replayed_by: str | None


class ReRunAvailability(_Answer):
    """Whether a re-run may start now, and the token saying why not."""

    available: bool
    why: str | None


class Inspection(_Answer):
    """The inspection of one run (``butler.replay.inspect``)."""

    run: RunWithName
    program: RunProgram
    trigger_facts: dict[str, Any] = Field(
        description="the run's trigger facts; content facts null unless the caller may read them")
    trigger_facts_redacted: RedactedFacts | None
    effects: list[InspectedEffect]
    replays: list[RunReplayListed]
    re_run: ReRunAvailability
    pause_id: str | None
    supervised_grant_id: str | None = Field(description="the supervised grant that opened the content facts")
    not_recorded: str = Field(description="what a run record cannot tell, in words")


class InspectionAnswer(_Answer):
    """``GET /api/butler-runs/{run_id}/inspect``: ``{"inspection": Inspection}``."""

    inspection: Inspection
