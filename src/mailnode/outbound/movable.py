"""``movable_now``: the only definition of "this send may move now" (spec/outbound.md §1.4).

A send may move when its ``release_at`` has passed and it is ``held`` (sealed, hold window over),
``throttled`` (the transport did not take it; ``release_at`` carries the back-off), or ``awaiting`` at a
gate that time drains (``states.TIME_DRAINED_REASONS``: the rate breakers and the provider gate, asked
again at the claim). Policy, approval and Butler-release gates never move by time.

A send a rate breaker gates carries its recheck time in ``release_at`` (written by
``governance.gatefacts.record_rate_limited`` each time a hand-over finds it still gated), so it is not
movable again until the breaker may have cleared: a sweep that reads it writes it out of every sweep
query (spec/transactional.md §3, "every document the sweep finds leaves by a door").

``movable_now_sql(now)`` is the predicate as a SQL expression over ``send_manifests``; the sweep, the
claim, the withhold and every other gated write put it in their ``WHERE``. ``movable_now(...)`` is its
pure twin, for tests and for explaining a row; a test checks that the two agree on every state.

``provider_shut`` (spec/transactional.md §2): while the provider breaker refuses the send's class, a send
waiting ``awaiting/provider_unavailable`` is not movable, so a sweep does not re-read it on every tick; it
drains when the breaker reopens (the caller passes the breaker's answer, read once per sweep).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, or_
from sqlalchemy.sql.elements import ColumnElement

from mailnode.clock import utc
from mailnode.schema.outbound import send_manifests
from mailnode.vocabulary.send_states import TIME_DRAINED_REASONS, SendState, StateReason

_MOVABLE_STATES = (SendState.HELD.value, SendState.THROTTLED.value)
_DRAINED = tuple(r.value for r in TIME_DRAINED_REASONS)
_DRAINED_WHILE_PROVIDER_SHUT = tuple(r for r in _DRAINED if r != StateReason.PROVIDER_UNAVAILABLE.value)


def _drained(provider_shut: bool) -> tuple[str, ...]:
    return _DRAINED_WHILE_PROVIDER_SHUT if provider_shut else _DRAINED


def movable_now_sql(now: datetime, *, provider_shut: bool = False) -> ColumnElement[bool]:
    """The predicate over ``send_manifests`` for time ``now`` (aware UTC); binds ``now`` and the reasons.

    ``provider_shut``: the provider breaker refuses the class now, so ``awaiting/provider_unavailable``
    does not drain yet.
    """
    m = send_manifests.c
    return and_(
        m.release_at <= now,
        or_(m.state.in_(_MOVABLE_STATES),
            and_(m.state == SendState.AWAITING.value, m.state_reason.in_(_drained(provider_shut)))),
    )


def movable_now(state: str | None, state_reason: str | None, release_at: datetime, now: datetime,
                *, provider_shut: bool = False) -> bool:
    """The same predicate over one row's values (pure)."""
    if utc(release_at) > utc(now):
        return False
    if state in _MOVABLE_STATES:
        return True
    return state == SendState.AWAITING.value and state_reason in _drained(provider_shut)


def lease_expired_sql(now: datetime) -> ColumnElement[bool]:
    """Claimed sends whose worker's lease ran out (spec/transactional.md §3): found and recovered."""
    m = send_manifests.c
    return and_(m.state == SendState.OUTCOME_UNKNOWN.value, m.lease_until.is_not(None), m.lease_until < now)
