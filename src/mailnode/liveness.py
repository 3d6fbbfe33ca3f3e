"""Executor liveness and takeover: several ``mailnode serve`` processes on one database share all of the work,
and the durable work of one that dies is taken over by a survivor within a lease (issue 19).

DBOS recovers a PENDING workflow only in a process launched with the executor id that started it
(spec/dbos.md), so before this a killed process's Butler runs, dequeued materialisations and scheduled passes
waited for that same process to come back. Now each ``serve`` process keeps a row in ``executors``
(``schema.executors``):

- ``register`` at start (a row under its executor id; a restart under the same configured id resets it),
  ``beat`` every ``budgets.EXECUTOR_HEARTBEAT_SECONDS``, ``mark_stopped`` after a graceful stop;
- every beat, ``take_over_dead`` reads the rows not yet recovered and asks ``takeover_verdict`` (pure) of
  each: a row that stopped, whose beat is older than ``budgets.EXECUTOR_LEASE_SECONDS``, or whose process
  ran on this host under a pid that no longer runs, is dead. ``claim`` takes it with one conditional UPDATE
  that matches only the row as it was read (its ``beat_at`` and ``taken_over_at``), so of two survivors
  exactly one claims it, and a process that beat in between is not claimed. The claim and its audit entry
  (``executor.taken_over``, one per organisation, actor the node) commit together;
- the claimant then recovers (the caller's ``recover``: DBOS's recovery of the dead id's PENDING workflows,
  which re-enqueues each for whichever live process dequeues it first, and the dead id's dispatch claims)
  and writes ``recovered_at``. A claimant that dies before that leaves a claim older than the lease, which
  another survivor claims again; both recoveries are idempotent.
- A process judged dead while it still runs finds its row taken over at its next ``beat`` (``False``): its
  work is already being redone elsewhere, so it must stop at once (``server`` exits with
  ``budgets.EXECUTOR_FENCED_EXIT_STATUS``).

Times are the node's clock (``node.clock``), as the dispatch leases are; processes on several hosts need
their clocks synchronised (NTP) to well under the lease.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import select, update

from mailnode import audit, budgets
from mailnode.node import Node
from mailnode.schema.directory import organisations
from mailnode.schema.executors import executors

log = logging.getLogger("mailnode.liveness")

#: What a process concludes about another's row: ``alive`` (leave it), ``self``, ``recovered`` (done before),
#: ``being_taken_over`` (another survivor claimed it within the lease), or a reason it is dead: ``stopped``
#: (a graceful stop), ``lapsed`` (no beat within the lease), ``gone`` (same host, its pid no longer runs).
Verdict = Literal["alive", "self", "recovered", "being_taken_over", "stopped", "lapsed", "gone"]
DEAD: frozenset[str] = frozenset({"stopped", "lapsed", "gone"})

#: The audit action of a takeover (actor: the node; subject: the dead executor id).
TAKEN_OVER_ACTION = "executor.taken_over"


@dataclass(frozen=True)
class ExecutorRow:
    """One ``executors`` row as a takeover pass reads it."""

    executor_id: str
    host: str
    pid: int
    beat_at: datetime
    stopped_at: datetime | None
    taken_over_by: str | None
    taken_over_at: datetime | None
    recovered_at: datetime | None


def takeover_verdict(row: ExecutorRow, *, me: str, now: datetime, host: str, pid_running: bool,
                     lease_seconds: float = budgets.EXECUTOR_LEASE_SECONDS) -> Verdict:
    """Whether the process of ``row`` is dead, as the process ``me`` on ``host`` sees it at ``now`` (pure).

    ``pid_running`` says whether ``row.pid`` runs on this host (meaningful only when ``row.host == host``).
    A claim by another survivor younger than the lease is respected; an older one is a claimant that died
    before it finished, and the row is judged afresh.
    """
    cutoff = now - timedelta(seconds=lease_seconds)
    if row.executor_id == me:
        return "self"
    if row.recovered_at is not None:
        return "recovered"
    if row.taken_over_at is not None and row.taken_over_at >= cutoff:
        return "being_taken_over"
    if row.stopped_at is not None:
        return "stopped"
    if row.beat_at < cutoff:
        return "lapsed"
    if row.host == host and not pid_running:
        return "gone"
    return "alive"


def this_host() -> str:
    """The host name this process records and compares pids on."""
    return socket.gethostname()


def pid_running(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (signal 0: no signal is sent). A pid owned by another
    user runs (``PermissionError``); only "no such process" says it does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def register(node: Node, executor_id: str, role: str) -> None:
    """Record this process as live under ``executor_id`` (1 or 2 statements). A row left by an earlier process
    with the same (configured) id is reset: that process is dead, and this one's DBOS launch recovers its
    workflows by the id; a survivor's takeover of it, if one raced this, is idempotent."""
    now = node.clock.now()
    values = {"role": role, "host": this_host(), "pid": os.getpid(), "started_at": now, "beat_at": now,
              "stopped_at": None, "taken_over_by": None, "taken_over_at": None, "recovered_at": None}
    with node.begin() as conn:
        done = conn.execute(update(executors).where(executors.c.executor_id == executor_id).values(**values))
        if done.rowcount == 0:
            conn.execute(executors.insert().values(executor_id=executor_id, **values))


def beat(node: Node, executor_id: str) -> bool:
    """Write this process's heartbeat (1 statement). ``False`` when its row was taken over or marked stopped:
    another process judged it dead and is redoing its work, so this process must stop running any."""
    with node.begin() as conn:
        done = conn.execute(update(executors).where(executors.c.executor_id == executor_id,
                                                    executors.c.taken_over_at.is_(None),
                                                    executors.c.stopped_at.is_(None))
                            .values(beat_at=node.clock.now()))
    return done.rowcount == 1


def mark_stopped(node: Node, executor_id: str) -> None:
    """After a graceful stop: the row says so, and a survivor (or this process's next start, under any id)
    takes over what it left PENDING at once instead of after the lease (1 statement)."""
    with node.begin() as conn:
        conn.execute(update(executors).where(executors.c.executor_id == executor_id,
                                             executors.c.taken_over_at.is_(None))
                     .values(stopped_at=node.clock.now()))


def unrecovered(node: Node) -> list[ExecutorRow]:
    """Every row not yet recovered (1 statement): the live processes and the dead ones still owed a takeover."""
    e = executors.c
    with node.read() as conn:
        rows = conn.execute(select(e.executor_id, e.host, e.pid, e.beat_at, e.stopped_at, e.taken_over_by,
                                   e.taken_over_at, e.recovered_at).where(e.recovered_at.is_(None))).all()
    return [ExecutorRow(*r) for r in rows]


def claim(node: Node, row: ExecutorRow, *, me: str, verdict: Verdict) -> bool:
    """Claim the dead ``row`` for ``me``: one conditional UPDATE matching the row only as it was read (same
    ``beat_at`` and ``taken_over_at``, not recovered), and in the same transaction ``executor.taken_over`` in
    every organisation's audit trail. ``False`` when another survivor claimed it first or it beat since."""
    e = executors.c
    now = node.clock.now()
    with node.begin() as conn:
        done = conn.execute(update(executors).where(
            e.executor_id == row.executor_id, e.recovered_at.is_(None), e.beat_at == row.beat_at,
            e.taken_over_at.is_not_distinct_from(row.taken_over_at))
            .values(taken_over_by=me, taken_over_at=now))
        if done.rowcount != 1:
            return False
        # Audit last: the chain lock is taken after the only shared row this transaction updates (audit.py).
        for org_id in conn.execute(select(organisations.c.id).order_by(organisations.c.id)).scalars().all():
            audit.append(conn, org_id=org_id, at=now, action=TAKEN_OVER_ACTION, actor_id=None,
                         subject=row.executor_id,
                         detail={"by": me, "verdict": verdict, "beat_at": row.beat_at.isoformat(),
                                 "host": row.host, "pid": row.pid,
                                 "previous_claimant": row.taken_over_by})
    return True


def mark_recovered(node: Node, executor_id: str, me: str) -> None:
    """Record that ``me`` finished recovering ``executor_id`` (1 statement)."""
    with node.begin() as conn:
        conn.execute(update(executors).where(executors.c.executor_id == executor_id,
                                             executors.c.taken_over_by == me)
                     .values(recovered_at=node.clock.now()))


@dataclass(frozen=True)
class Takeover:
    """One takeover this process did: the dead executor id, why it was judged dead, and what ``recover``
    returned (how many workflows and claims it handed back)."""

    executor_id: str
    verdict: Verdict
    recovered: int


def take_over_dead(node: Node, me: str, recover: Callable[[str], int]) -> list[Takeover]:
    """One takeover pass: judge every unrecovered row, claim each dead one (``claim``), call
    ``recover(dead_executor_id)`` for each claimed, then mark it recovered. Returns the takeovers done.

    An exception from ``recover`` propagates with the row left claimed and not recovered: after the lease
    another pass (this process's or a survivor's) claims it again, and recovery is idempotent.
    """
    now = node.clock.now()
    host = this_host()
    done: list[Takeover] = []
    for row in unrecovered(node):
        verdict = takeover_verdict(row, me=me, now=now, host=host,
                                   pid_running=row.host == host and pid_running(row.pid))
        if verdict not in DEAD or not claim(node, row, me=me, verdict=verdict):
            continue
        log.warning("executor.taken_over executor=%s verdict=%s by=%s last_beat=%s", row.executor_id, verdict,
                    me, row.beat_at.isoformat())
        count = recover(row.executor_id)
        mark_recovered(node, row.executor_id, me)
        log.info("executor.recovered executor=%s by=%s handed_back=%d", row.executor_id, me, count)
        done.append(Takeover(row.executor_id, verdict, count))
    return done
