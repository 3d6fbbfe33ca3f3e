"""Tables of Butler runs and their effects: the run record (seed 003 "The run record"; spec/butler.md §6.1).

``butler_runs`` holds one row per run. Its id is the DBOS workflow id, ``<version id>-<message id>`` for
a delivery, so the primary key refuses a second record of one version for one delivery for ever, after
DBOS's own dedup. ``trigger_facts`` is the closed ``event.*`` set the run was given (spec/butler.md
§5.2 plus ``automated``, ``reply_refusal``, ``dmarc``/``spf``/``dkim``, ``attachments`` and
``attachments_dangerous``); it is mail content and no list or read route returns it.
``statements_spent`` is the run's metered SQL statements, carried across invocations (a resumed run
reads it once per invocation, never from a cache).

``butler_run_effects`` holds one row per effect node visit that was performed or refused, written in
the same transaction as the effect itself. ``(run_id, seq)`` is unique: ``seq`` is the effect's
1-based position in the walk, the same on every replay, so a retried step finds its own row instead
of performing the effect twice. ``binding`` is what the node bound under ``steps.<as>`` (a draft
summary, a lookup projection) so a retried step hands back the same value; like the trigger facts it
is never returned by the read routes.

Loop bookkeeping, written when the trigger opens a run (``butler.pause``): ``provoked_by`` is the run
whose proposed send the triggering message replies to (In-Reply-To or References), ``reply_chain`` the
Butler ids up that chain of replies, nearest first and at most ``budgets.BUTLER_LOOP_CHAIN_DEPTH``
long, and ``self_provoked`` whether this run's own Butler is in it. The window count of self-provoked
runs seeks ``ix_butler_runs_self_provoked``. A re-run carries ``replay_of`` (the source run) and
``replayed_by`` (the administrator who asked).

``butler_pauses`` holds the latched pause (seed 003 "The pause, and the loop that places it"): keyed on
the Butler, never a version, so republishing does not clear it; placed only by the node (no column
names a placer); at most one in force per Butler (``resumed_at IS NULL``, a unique partial index);
resumed by one administrator with a reason, and kept as history afterwards.

Vocabularies: ``RUN_STATES`` (``states.RunState``; live: ``running``, ``awaiting_release``; terminal:
``finished``, ``stopped``, ``refused``, ``failed``), ``EFFECT_OUTCOMES`` (``ok``, ``refused``, ``failed``),
``PAUSE_REASONS`` (``loop_detected``).
"""

from __future__ import annotations

from sqlalchemy import Boolean, Column, ForeignKey, Index, Integer, String, Table, Text, false, text

from mailnode.db.meta import JSONText, UTCDateTime, metadata
from mailnode.vocabulary import run_states as states

# The enum's plain values: these tuples are bound into SQL (``state IN (...)``) as stored text.
#: Run states that are still walking or waiting.
LIVE_STATES: tuple[str, ...] = tuple(s.value for s in states.LIVE)
#: Run states that end a run (spec/butler.md §6.2).
TERMINAL_STATES: tuple[str, ...] = tuple(s.value for s in states.TERMINAL)
#: Every run state.
RUN_STATES = LIVE_STATES + TERMINAL_STATES
#: An effect row's outcome (spec/butler.md §6.4).
EFFECT_OUTCOMES = ("ok", "refused", "failed")
#: Why the node paused a Butler (the only placer is the loop detector).
PAUSE_REASONS = ("loop_detected",)

butler_runs = Table(
    "butler_runs",
    metadata,
    #: ``<btv id>-<msg id>``: 30 + 1 + 30 characters.
    Column("id", String(100), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("butler_id", String(40), ForeignKey("butlers.id"), nullable=False),
    Column("version_id", String(40), ForeignKey("butler_versions.id"), nullable=False),
    Column("trigger_event", String(40), nullable=False),
    #: The message id of the delivery that triggered the run.
    Column("trigger_key", String(40), nullable=False),
    Column("trigger_facts", JSONText, nullable=False),
    Column("state", String(20), nullable=False),
    Column("state_at", UTCDateTime, nullable=False),
    Column("outcome_reason", Text, nullable=True),
    #: Why the run ended as it did, beyond its reason token (``record.outcome_detail``): a failed run's
    #: node, expression and four-part error, a refused run's findings. NULL when there is nothing more.
    Column("outcome_detail", JSONText, nullable=True),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime, nullable=True),
    Column("nodes_executed", Integer, nullable=False, server_default="0"),
    Column("effects", Integer, nullable=False, server_default="0"),
    Column("refusals", Integer, nullable=False, server_default="0"),
    Column("statements_spent", Integer, nullable=False, server_default="0"),
    #: The run whose proposed send the triggering message replies to (None: not a reply to a Butler).
    Column("provoked_by", String(100), nullable=True),
    #: Butler ids up the chain of replies, nearest first (bounded by BUTLER_LOOP_CHAIN_DEPTH).
    Column("reply_chain", JSONText, nullable=True),
    #: This run's Butler is in ``reply_chain``: the run answers the Butler's own mail.
    Column("self_provoked", Boolean, nullable=False, server_default=false()),
    #: A re-run: the run it replays and the administrator who asked for it.
    Column("replay_of", String(100), nullable=True),
    Column("replayed_by", String(40), nullable=True),
    Index("ix_butler_runs_org_started", "org_id", "started_at"),
    Index("ix_butler_runs_self_provoked", "org_id", "butler_id", "self_provoked", "started_at"),
    Index("ix_butler_runs_replay_of", "org_id", "replay_of"),
    Index("ix_butler_runs_butler_started", "org_id", "butler_id", "started_at"),
    Index("ix_butler_runs_trigger", "org_id", "trigger_key"),
)

butler_run_effects = Table(
    "butler_run_effects",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("run_id", String(100), ForeignKey("butler_runs.id"), nullable=False),
    #: 1-based position of the effect in the walk.
    Column("seq", Integer, nullable=False),
    Column("node_id", String(80), nullable=False),
    Column("node_type", String(40), nullable=False),
    #: ``<node id>#<visit>``: the durable step's name.
    Column("step", String(120), nullable=False),
    Column("outcome", String(10), nullable=False),
    Column("reason", Text, nullable=True),
    #: What the effect acted on: a case, draft, send manifest, mailbox or looked-up id.
    Column("subject", String(100), nullable=True),
    #: Statements the step spent, measured by the statement meter.
    Column("statements", Integer, nullable=False),
    Column("binding", JSONText, nullable=True),
    Column("at", UTCDateTime, nullable=False),
    Index("uq_butler_run_effects_run_seq", "run_id", "seq", unique=True),
    Index("ix_butler_run_effects_subject", "org_id", "subject"),
)

butler_pauses = Table(
    "butler_pauses",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("org_id", String(40), ForeignKey("organisations.id"), nullable=False),
    Column("butler_id", String(40), ForeignKey("butlers.id"), nullable=False),
    #: One of ``PAUSE_REASONS``.
    Column("reason", String(40), nullable=False),
    #: The sentence the node wrote when it placed the pause, with the figure in words.
    Column("detail", Text, nullable=False),
    #: The figure behind it: ``{self_provoked, limit, window_seconds, chain}``.
    Column("figure", JSONText, nullable=False),
    #: The delivery (``msg_...``) whose run would have passed the limit.
    Column("tripped_by", String(40), nullable=True),
    Column("placed_at", UTCDateTime, nullable=False),
    Column("resumed_at", UTCDateTime, nullable=True),
    Column("resumed_by", String(40), nullable=True),
    Column("resumed_reason", Text, nullable=True),
    Index("uq_butler_pauses_in_force", "org_id", "butler_id", unique=True,
          sqlite_where=text("resumed_at IS NULL"), postgresql_where=text("resumed_at IS NULL")),
    Index("ix_butler_pauses_butler", "org_id", "butler_id", "placed_at"),
)
