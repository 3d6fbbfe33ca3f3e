"""The run vocabulary: the states a Butler run is in, and the reasons the walk itself ends one with.

Spec/butler.md §6.2. Closed vocabularies kept apart from the tables (``schema.butler_runs``, which reads
them) because the walk (``butler.walk``) ends runs in these states and imports no database. The values are
what ``butler_runs.state`` and ``outcome_reason`` store and the API shows, so they never change.
``STATE_OF_REASON`` is total over ``WalkReason`` (a test generated from the enum checks it). Pure: no I/O.
"""

from __future__ import annotations

from enum import StrEnum


class RunState(StrEnum):
    """A run's state: live while it walks or waits for a release, then terminal exactly once."""

    RUNNING = "running"
    AWAITING_RELEASE = "awaiting_release"
    FINISHED = "finished"
    STOPPED = "stopped"
    REFUSED = "refused"
    FAILED = "failed"


#: Run states that are still walking or waiting.
LIVE: tuple[RunState, ...] = (RunState.RUNNING, RunState.AWAITING_RELEASE)
#: Run states that end a run (spec/butler.md §6.2).
TERMINAL: tuple[RunState, ...] = (RunState.FINISHED, RunState.STOPPED, RunState.REFUSED, RunState.FAILED)


class WalkReason(StrEnum):
    """The reasons the walk itself ends a run with (the values are stored as ``outcome_reason``)."""

    RELEASE_TIMED_OUT = "release_timed_out"
    VALIDATE_FAILED = "validate_failed"
    BUDGET_EXHAUSTED = "budget_exhausted"
    LOOP_BOUND_EXCEEDED = "loop_bound_exceeded"
    EDGE_TO_NOTHING = "edge_to_nothing"
    RESERVED_NODE_REACHED_THE_WALK = "reserved_node_reached_the_walk"
    LOOKUP_NOT_AN_ID = "E_BUTLER_LOOKUP_NOT_AN_ID"
    LOOP_OVER_NOT_A_LIST = "E_BUTLER_LOOP_OVER_NOT_A_LIST"
    MAP_COLLECTS_NOTHING = "E_BUTLER_MAP_COLLECTS_NOTHING"
    PARAMETER_NOT_TEXT = "E_BUTLER_PARAMETER_NOT_TEXT"


#: The terminal state each of the walk's own reasons ends a run in. Total over ``WalkReason``, so the walk
#: never pairs a reason with a state that contradicts it.
STATE_OF_REASON: dict[WalkReason, RunState] = {
    WalkReason.RELEASE_TIMED_OUT: RunState.STOPPED,
    WalkReason.VALIDATE_FAILED: RunState.REFUSED,
    WalkReason.BUDGET_EXHAUSTED: RunState.REFUSED,
    WalkReason.LOOP_BOUND_EXCEEDED: RunState.FAILED,
    WalkReason.EDGE_TO_NOTHING: RunState.FAILED,
    WalkReason.RESERVED_NODE_REACHED_THE_WALK: RunState.FAILED,
    WalkReason.LOOKUP_NOT_AN_ID: RunState.FAILED,
    WalkReason.LOOP_OVER_NOT_A_LIST: RunState.FAILED,
    WalkReason.MAP_COLLECTS_NOTHING: RunState.FAILED,
    WalkReason.PARAMETER_NOT_TEXT: RunState.FAILED,
}
