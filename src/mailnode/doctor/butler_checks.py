"""The doctor's Butler checks: pauses in force, Butlers that should have run and did not, and whether the
loop detector can see anything at all (seed 003 "What doctor says, and the hard one"; spec/butler.md §9).

- ``butler_paused``: each pause in force, with its Butler's name, since when, what tripped it, the
  figure behind it and the route that resumes it (degraded: the mail still arrives and is still
  answerable by hand, but nothing answers it automatically).
- ``butler_trigger_unrouted``: a published, enabled Butler whose trigger address no mailbox of the
  organisation has (degraded: no delivery can ever start it; issue 17 item 13).
- ``butler_run_silence``: a published, unpaused Butler whose trigger address received mail after its
  publication and which never ran since, or whose stored program no longer parses or checks (the
  engine refuses it at run start), is degraded; one
  that nothing reached is reported idle, which is not a fault. A paused Butler is left out: its
  silence is explained by ``butler_paused``.
- ``butler_loop_detection``: armed when some inbound message carries In-Reply-To (the detector follows
  replies); otherwise ``armed: false, reason: no_threaded_replies``, degraded only when a Butler has
  also proposed a send (before that nothing could loop, and a permanent warning on a new node would be
  a muted check).
- ``butler_runs_stuck``: each live run (``running``, ``awaiting_release``) that nothing will move, with
  its id, why (``workflow_missing``, ``workflow_ended``, ``past_deadline``: ``butler.stuck``) and how long
  it has been in its state (degraded: the mail that started it waits for nobody). DBOS's workflow
  statuses are read through ``runtime.workflow_statuses``; when they cannot be read, only deadlines are
  judged, and with none passed the finding is ``not observed``, never ok.

Each takes ``(node, org_id)``, reads, and returns one ``Finding``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import exists, func, select

from mailnode import budgets, runtime
from mailnode.butler import pause, stuck
from mailnode.butler.check import check_stored
from mailnode.butler.trigger import listening_on
from mailnode.doctor.findings import Concern, Finding, Item, Severity, listed, not_observed
from mailnode.errors import MailnodeError
from mailnode.node import Node
from mailnode.schema.butler import butler_versions, butlers
from mailnode.schema.butler_runs import LIVE_STATES, butler_pauses, butler_run_effects, butler_runs
from mailnode.schema.mail import mailbox_addresses
from mailnode.schema.mail_messages import messages


def _no_org(name: str) -> Finding:
    return Finding(name, Severity.REPORT, False, "no organisation: the node is not initialised", "Run mailnode init.")


def butler_paused(node: Node, org_id: str | None) -> Finding:
    """Each Butler the node has paused, with the figure behind it and the resume route."""
    name = "butler_paused"
    if org_id is None:
        return _no_org(name)
    p = butler_pauses.c
    with node.read() as conn:
        rows = conn.execute(select(butler_pauses, butlers.c.name).join(butlers, butlers.c.id == p.butler_id)
                            .where(p.org_id == org_id, p.resumed_at.is_(None)).order_by(p.placed_at)).all()
        published = conn.execute(select(func.count()).select_from(butler_versions).where(
            butler_versions.c.org_id == org_id, butler_versions.c.state == "published")).scalar_one()
    if not rows:
        return Finding(name, Severity.DEGRADED, True, f"{published} published Butlers, none paused")
    pauses = [pause.pause_json(r) for r in rows]
    known = [r["reason"] in ("loop_detected",) for r in pauses]
    items = [Item(Concern("butler", r["butler_id"]),
                  f"{r['butler_name']!r} ({r['butler_id']}) paused since {r['placed_at']}: "
                  f"{r['reason'] if ok else 'an unknown reason ' + repr(r['reason'])}, tripped by {r['tripped_by']}: "
                  f"{r['detail']}", r, "pauses", str(r["resume"])) for r, ok in zip(pauses, known)]
    return listed(name, Severity.DEGRADED, False, items,
                  fix_lead="Mail to these Butlers' mailboxes is filed and answerable by hand, not automatically. Once "
                  "the cause is fixed, one administrator resumes each with a reason: ")


def _silence(conn: Any, org_id: str, pot: int) -> list[dict[str, Any]]:
    """Per published, unpaused Butler: its address, whether its stored program still checks against ``pot``
    (the engine refuses one that does not, ``ast_does_not_check``), mail that arrived since publication, runs since."""
    v = butler_versions.c
    rows = conn.execute(select(v.butler_id, v.id, v.ast_json, v.published_at, butlers.c.name)
                        .join(butlers, butlers.c.id == v.butler_id)
                        .outerjoin(butler_pauses, pause.in_force_on(v.org_id, v.butler_id))
                        .where(v.org_id == org_id, v.state == "published", butler_pauses.c.id.is_(None))
                        .order_by(butlers.c.name)).all()
    out = []
    m = messages.c
    r = butler_runs.c
    for row in rows:
        address = listening_on(row.ast_json)
        item: dict[str, Any] = {"butler_id": row.butler_id, "name": row.name, "version_id": row.id,
                                "published_at": row.published_at.isoformat(), "address": address}
        if address is None or not check_stored(row.ast_json, pot=pot).ok:
            item.update(parses=address is not None, checks=False, arrived=None, runs=None)
            out.append(item)
            continue
        arrived = conn.execute(select(func.count()).select_from(messages).where(
            m.org_id == org_id, func.lower(func.trim(m.envelope_to)) == address,
            m.received_at >= row.published_at)).scalar_one()
        ran = conn.execute(select(func.count()).select_from(butler_runs).where(
            r.org_id == org_id, r.butler_id == row.butler_id, r.started_at >= row.published_at)).scalar_one()
        item.update(parses=True, checks=True, arrived=int(arrived), runs=int(ran))
        out.append(item)
    return out


def butler_run_silence(node: Node, org_id: str | None) -> Finding:
    """Published Butlers that mail reached after publication and that never ran, or that cannot parse."""
    name = "butler_run_silence"
    if org_id is None:
        return _no_org(name)
    with node.read() as conn:
        items = _silence(conn, org_id, node.settings.butler_run_pot)
    if not items:
        return Finding(name, Severity.REPORT, True, "no published Butler is running (or none is published)")
    broken = [i for i in items if not i["checks"]]
    silent = [i for i in items if i["checks"] and i["arrived"] and not i["runs"]]
    idle = [i for i in items if i["checks"] and not i["arrived"]]
    if broken or silent:
        text = "; ".join(
            [f"{i['name']!r}: its stored program does not {'check' if i['parses'] else 'parse'}, so it can never run"
             for i in broken]
            + [f"{i['name']!r}: {i['arrived']} messages reached {i['address']} since it was published at "
               f"{i['published_at']}, and it never ran" for i in silent])
        return Finding(name, Severity.DEGRADED, False, text,
                       "Read the node's log for butler.* lines and the Butler's runs "
                       "(GET /api/butler-runs?butler_id=); "
                       "publish a version that checks (mailnode butler check FILE lists every finding; "
                       "PUT /api/butlers/{id}/draft, POST /api/butlers/{id}/publish).",
                       {"butlers": items})
    text = f"{len(items) - len(idle)} published Butlers ran on the mail that reached them"
    if idle:
        text += "; nothing triggered " + ", ".join(repr(i["name"]) for i in idle) + " since publication"
    return Finding(name, Severity.REPORT, True, text, data={"butlers": items})


def butler_loop_detection(node: Node, org_id: str | None) -> Finding:
    """Whether the loop detector is armed: does inbound mail carry the threading it follows?"""
    name = "butler_loop_detection"
    if org_id is None:
        return _no_org(name)
    m = messages.c
    e = butler_run_effects.c
    with node.read() as conn:
        row = conn.execute(select(
            exists(select(m.id).where(m.org_id == org_id, m.in_reply_to.is_not(None))).label("threaded"),
            exists(select(e.id).where(e.org_id == org_id, e.node_type == "mail.send.propose", e.outcome == "ok"))
            .label("proposed"))).one()
    if row.threaded:
        return Finding(name, Severity.REPORT, True,
                       "armed: inbound mail carries In-Reply-To, so a Butler answering its own mail is counted",
                       data={"armed": True, "reason": None})
    data = {"armed": False, "reason": "no_threaded_replies", "butler_sends": bool(row.proposed)}
    if row.proposed:
        return Finding(name, Severity.DEGRADED, False,
                       "armed: false (no_threaded_replies): Butlers have proposed sends, and no inbound message "
                       "carries In-Reply-To, so a reply loop would go uncounted",
                       "Check that the correspondents' replies keep their threading headers; an unthreaded loop is "
                       "bounded only by the release gate on every Butler send.", data)
    return Finding(name, Severity.REPORT, False,
                   "armed: false (no_threaded_replies): no inbound message carries In-Reply-To yet, and no Butler "
                   "has proposed a send", data=data)


def _live_runs(conn: Any, org_id: str, pot: int) -> list[stuck.RunFacts]:
    """The organisation's live runs, oldest state first (at most ``BUTLER_RUN_STUCK_SCAN_MAX`` + 1), each
    with its program's ``wait_bound_seconds`` (None when the stored program does not check)."""
    r = butler_runs.c
    rows = conn.execute(select(r.id, r.butler_id, r.state, r.state_at, r.version_id, butler_versions.c.ast_json)
                        .join(butler_versions, butler_versions.c.id == r.version_id)
                        .where(r.org_id == org_id, r.state.in_(LIVE_STATES))
                        .order_by(r.state_at, r.id).limit(budgets.BUTLER_RUN_STUCK_SCAN_MAX + 1)).all()
    bounds: dict[str, int | None] = {}
    for row in rows:
        if row.version_id not in bounds:
            checked = check_stored(row.ast_json, pot=pot)
            bounds[row.version_id] = (stuck.wait_bound_seconds(checked.ast.nodes)
                                      if checked.ok and checked.ast is not None else None)
    return [stuck.RunFacts(row.id, row.butler_id, row.state, row.state_at, bounds[row.version_id]) for row in rows]


_STUCK_WHY = {
    "workflow_missing": "its durable workflow no longer exists",
    "workflow_ended": "its durable workflow ended ({status}) while the run still waits",
    "past_deadline": "past its deadline {deadline} with its workflow {status}",
}
_SHOWN = 10


def butler_runs_stuck(node: Node, org_id: str | None) -> Finding:
    """Live Butler runs that nothing will move: their workflow is gone or ended, or they are past the
    longest their own program allows (``butler.stuck``), with ids and ages."""
    name = "butler_runs_stuck"
    if org_id is None:
        return _no_org(name)
    with node.read() as conn:
        runs = _live_runs(conn, org_id, node.settings.butler_run_pot)
    examined = runs[: budgets.BUTLER_RUN_STUCK_SCAN_MAX]
    more = len(runs) > len(examined)
    if not examined:
        return Finding(name, Severity.DEGRADED, True, "no live Butler runs, so none is stuck",
                       data={"live": 0, "stuck": []})
    unread: str | None = None
    try:
        statuses = runtime.workflow_statuses(node, [run.run_id for run in examined])
    except MailnodeError as exc:
        unread, statuses = f"{exc.what} {exc.why}", {}
    facts = stuck.WorkflowFacts(observed=False) if unread else None
    now = node.clock.now()
    timeout = node.settings.butler_release_timeout_seconds
    found = [s for run in examined
             if (s := stuck.decide(run, facts or stuck.WorkflowFacts(True, statuses.get(run.run_id)), now, timeout))]
    data: dict[str, Any] = {"live": len(examined), "examined_all": not more, "statuses_read": unread is None,
                            "stuck": [s.to_json() for s in found]}
    scope = (f"the {len(examined)} oldest live runs (more exist; BUTLER_RUN_STUCK_SCAN_MAX)" if more
             else f"{len(examined)} live runs")
    if not found:
        if unread:
            return not_observed(name, f"the durable workflows of {scope} could not be read ({unread}); none is "
                                      "past its deadline", "Run mailnode doctor where the node's system database "
                                      "is reachable.", data)
        return Finding(name, Severity.DEGRADED, True,
                       f"{scope}, each with a live durable workflow and within its deadline", data=data)
    shown = "; ".join(
        f"run {s.run_id} ({s.state} for {s.age_seconds} s): "
        + _STUCK_WHY[s.why].format(status=s.workflow_status or "unread", deadline=s.deadline.isoformat())
        for s in found[:_SHOWN])
    if len(found) > _SHOWN:
        shown += f"; and {len(found) - _SHOWN} more (data.stuck)"
    why = {s.why for s in found}
    fix = []
    if why & {"workflow_missing", "workflow_ended"}:
        fix.append("Nothing will walk a run whose workflow is gone or ended: its mail is filed and answerable by "
                   "hand, and a send it proposed stays releasable and cancellable (POST /api/sends/{id}/release, "
                   "/cancel). A CANCELLED workflow resumes from its last step with dbos workflow resume <run id> "
                   "-s <system database URL>; read the node's log for the run id to see why one ended.")
    if "past_deadline" in why:
        fix.append("A live workflow past its deadline is run by no process: start the process whose executor id "
                   "last ran it (MAILNODE_EXECUTOR_ID; the default is serve-<host name>), or, after an upgrade, "
                   "see docs/operations.md on runs parked across versions.")
    return Finding(name, Severity.DEGRADED, False, f"{len(found)} of {scope} stuck: {shown}", " ".join(fix), data)


def unrouted_triggers(published: list[tuple[str, str, str | None]], addresses: set[str]) -> list[tuple[str, str, str]]:
    """The ``(butler id, name, address)`` of each published Butler whose trigger address no mailbox of the
    organisation has (pure; ``addresses`` lower-cased). A trigger that does not parse is ``butler_run_silence``'s."""
    return [(bid, name, address) for bid, name, address in published
            if address is not None and address not in addresses]


def butler_trigger_unrouted(node: Node, org_id: str | None) -> Finding:
    """Published, enabled Butlers listening on an address no mailbox of the organisation has: no delivery can
    ever start them (issue 17 item 13)."""
    name = "butler_trigger_unrouted"
    if org_id is None:
        return _no_org(name)
    v = butler_versions.c
    with node.read() as conn:
        rows = conn.execute(select(v.butler_id, butlers.c.name, v.ast_json).join(butlers, butlers.c.id == v.butler_id)
                            .where(v.org_id == org_id, v.state == "published", butlers.c.disabled_at.is_(None))
                            .order_by(butlers.c.name)).all()
        addresses = {str(a).strip().lower() for a in conn.execute(
            select(mailbox_addresses.c.address).where(mailbox_addresses.c.org_id == org_id)).scalars()}
    found = unrouted_triggers([(r.butler_id, r.name, listening_on(r.ast_json)) for r in rows], addresses)
    if not found:
        return Finding(name, Severity.DEGRADED, True,
                       f"{len(rows)} published Butlers, each listening on an address a mailbox has")
    items = [Item(Concern("butler", bid), f"{bname!r} ({bid}) listens on {address}, which no mailbox has",
                  {"butler_id": bid, "name": bname, "address": address}, "butlers",
                  f"create a mailbox for {address} (POST /api/mailboxes) or add it to one (PATCH /api/mailboxes/{{id}} "
                  "addresses), or publish a trigger on a mailbox's address "
                  f"(PUT /api/butlers/{bid}/draft, then publish)")
             for bid, bname, address in found]
    return listed(name, Severity.DEGRADED, False, items,
                  fix_lead="No delivery can start these Butlers. Give a mailbox the address, or point the trigger "
                  "at a mailbox's address: ")


#: The Butler checks, in report order (registered in ``doctor.checks.CHECKS``).
BUTLER_CHECKS = {
    "butler_paused": butler_paused,
    "butler_trigger_unrouted": butler_trigger_unrouted,
    "butler_run_silence": butler_run_silence,
    "butler_loop_detection": butler_loop_detection,
    "butler_runs_stuck": butler_runs_stuck,
}
