"""Legal holds: place (one administrator, immediate), lift (an approval of two other deciders), list, and
the coverage check every destroying act asks first (spec/outbound.md §7; issue 9).

Placing is easy and lifting is hard, the inverse of the domain pause. A hold names one mailbox and an
optional window ``[from_date, to_date]`` (NULL = unbounded, both ends inclusive); it covers a piece of
content of that mailbox whose time lies in the window, while ``lifted_at`` is NULL. A bound given as a
date alone is a whole UTC day: ``from_date`` 2026-01-01 is stored as 2026-01-01T00:00:00Z and ``to_date``
2026-01-31 as 2026-01-31T23:59:59.999999Z, the last instant the database can tell apart from the next
day (``parse_bound``), so mail dated during the to_date's day is covered. The comparison stays inclusive
(``to_date >= at``), so holds placed before this rule keep the meaning they were stored with (a date-only
``to_date`` placed before it ends at that day's 00:00 UTC; no stored value was rewritten). The input is
checked before anything is read (``check_place_input``): ``mailbox_id`` is required, ``matter_id`` is
printable text of at most ``budgets.HOLD_MATTER_ID_MAX_CHARS`` characters. A hold always wins over deletion: the
retention sweep retains covered content (``retention.decide``), and a person deleting a covered draft or
case is refused ``E_LEGAL_HOLD`` (409) with a ``hold.blocked`` audit entry written in its own transaction
(``deleting``), since the refused act's transaction rolls back.

Lifting: ``request_lift`` writes a ``hold_lifts`` row and a ``hold_lift`` approval of one stage of
``budgets.HOLD_LIFT_APPROVERS`` holders of ``approval.decide`` on the held mailbox other than the one
asking; the completing decision lifts the hold in the same transaction (``governance.effects.hold_lifted``,
audited ``hold.lifted``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any

from sqlalchemy import Connection, and_, or_, select

from mailnode import audit, budgets
from mailnode.authz import is_admin
from mailnode.clock import utc
from mailnode.errors import MailnodeError, conflict, invalid, limit_exceeded, not_an_administrator, not_found
from mailnode.governance import approvals as ap
from mailnode.governance.policy import Stage
from mailnode.ids import new_id, parse_id
from mailnode.node import Node
from mailnode.schema.governance import approvals
from mailnode.schema.mail import mailboxes
from mailnode.schema.retention import hold_lifts, holds

#: The stages of every lift request: one stage of two deciders other than the one asking.
LIFT_STAGES: tuple[Stage, ...] = (Stage(1, budgets.HOLD_LIFT_APPROVERS),)


class LegalHoldRefusal(MailnodeError):
    """``E_LEGAL_HOLD`` (409): a deletion a hold covers. Carries what ``deleting`` audits as ``hold.blocked``."""

    def __init__(self, *, org_id: str, actor_id: str, subject: str, hold_ids: list[str], act: str) -> None:
        super().__init__(code="E_LEGAL_HOLD", what=f"{subject} is under legal hold; it was not deleted.",
                         why="A legal hold in force covers it, and a hold always wins over deletion.",
                         fix="Keep it; an administrator may ask to lift the hold: POST /api/holds/{id}/lift.",
                         status=409, detail={"subject": subject, "hold_ids": hold_ids, "act": act})
        self.org_id = org_id
        self.actor_id = actor_id
        self.subject = subject
        self.hold_ids = hold_ids
        self.act = act


def in_force_clause(org_id: str, mailbox_id: Any, at: Any) -> Any:
    """The SQL predicate of "a hold in force covers content of ``mailbox_id`` at time ``at``" (values or columns)."""
    h = holds.c
    return and_(h.org_id == org_id, h.mailbox_id == mailbox_id, h.lifted_at.is_(None),
                or_(h.from_date.is_(None), h.from_date <= at), or_(h.to_date.is_(None), h.to_date >= at))


def covering(conn: Connection, *, org_id: str, mailbox_id: str, at: datetime) -> list[str]:
    """Ids of the holds in force covering content of ``mailbox_id`` dated ``at`` (one statement)."""
    rows = conn.execute(select(holds.c.id).where(in_force_clause(org_id, mailbox_id, utc(at)))
                        .order_by(holds.c.id)).all()
    return [r.id for r in rows]


def refuse_if_held(conn: Connection, *, org_id: str, actor_id: str, mailbox_id: str, at: datetime, subject: str,
                   act: str) -> None:
    """Raise ``LegalHoldRefusal`` (``E_LEGAL_HOLD``, 409) when a hold covers ``subject``; else return."""
    ids = covering(conn, org_id=org_id, mailbox_id=mailbox_id, at=at)
    if ids:
        raise LegalHoldRefusal(org_id=org_id, actor_id=actor_id, subject=subject, hold_ids=ids, act=act)


def record_blocked(conn: Connection, *, org_id: str, actor_id: str | None, subject: str, hold_ids: list[str],
                   act: str, now: datetime) -> None:
    """Audit ``hold.blocked`` (outcome ``refused``) for a deletion a hold stopped."""
    audit.append(conn, org_id=org_id, at=now, action="hold.blocked", actor_id=actor_id, subject=subject,
                 outcome="refused", detail={"hold_ids": hold_ids, "act": act})


@contextmanager
def deleting(node: Node) -> Iterator[Connection]:
    """A write transaction for a person's deleting act: when it raises ``LegalHoldRefusal``, the act rolls back,
    ``hold.blocked`` is written in a transaction of its own, and the refusal propagates unchanged."""
    try:
        with node.begin() as conn:
            yield conn
    except LegalHoldRefusal as refusal:
        with node.begin() as conn:
            record_blocked(conn, org_id=refusal.org_id, actor_id=refusal.actor_id, subject=refusal.subject,
                           hold_ids=refusal.hold_ids, act=refusal.act, now=node.clock.now())
        raise


def hold_json(r: Any) -> dict[str, Any]:
    """The API shape of a hold."""
    def iso(v: datetime | None) -> str | None:
        return v.isoformat() if v is not None else None
    return {"id": r.id, "mailbox_id": r.mailbox_id, "matter_id": r.matter_id, "from_date": iso(r.from_date),
            "to_date": iso(r.to_date), "placed_by": r.placed_by, "placed_at": iso(r.placed_at),
            "lifted_at": iso(r.lifted_at), "lifted_reason": r.lifted_reason, "lift_id": r.lift_id,
            "in_force": r.lifted_at is None}


#: Unicode categories a matter reference may not hold besides the control and format ones (``C*``): the
#: line and paragraph separators end a line in a listing or a log as surely as LF does.
_BREAKS = frozenset({"Zl", "Zp"})


def parse_bound(value: object, field: str) -> datetime | None:
    """A hold bound as aware UTC, or None for an open end (None or ``""``). Pure.

    | ``value`` | ``from_date`` | ``to_date`` |
    |---|---|---|
    | a date alone (``2026-01-31`` or a ``date``) | that day 00:00:00 UTC | that day 23:59:59.999999 UTC |
    | a date-time with an offset | that instant, in UTC | that instant, in UTC |
    | a date-time without an offset | taken as UTC | taken as UTC |

    A date alone is any ISO 8601 date; as ``to_date`` it takes in the whole day, inclusive.

    Raises ``E_HOLD_BOUND_UNREADABLE`` (422) for anything else (not a string, not ISO 8601, or outside the
    years 1..9999 once in UTC). ``field`` is ``from_date`` or ``to_date`` and says which end a date alone means.
    """
    if value is None or value == "":
        return None
    day: date | None = None
    parsed: datetime | None = None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        day = value
    elif isinstance(value, str):
        try:
            day = date.fromisoformat(value)
        except ValueError:
            try:
                parsed = datetime.fromisoformat(value)
            except ValueError:
                parsed = None
    if day is not None:
        return datetime.combine(day, time.max if field == "to_date" else time.min, tzinfo=UTC)
    if parsed is not None:
        try:
            return utc(parsed) if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
        except OverflowError:
            pass
    raise invalid("E_HOLD_BOUND_UNREADABLE", f"{field} {str(value)[:40]!r} is not a date.",
                  "Hold bounds are ISO 8601 dates or date-times (UTC when no offset is given).",
                  f"Send {field} like 2026-01-31 (a date alone covers that whole day, UTC) or "
                  "2026-01-31T18:00:00Z, or leave it out for an open end.", field=field)


def check_matter_id(value: object) -> str | None:
    """The matter reference trimmed, or None when absent or blank. Pure.

    Raises ``E_HOLD_MATTER_ID_MALFORMED`` (422) for a value that is not a string or holds a control or
    format character or a line separator (a line break forges lines in listings and the audit trail; a NUL
    cannot be stored in PostgreSQL text), ``E_BUDGET_EXCEEDED`` (422, ``detail.limit_name``
    ``HOLD_MATTER_ID_MAX_CHARS``, ``detail.field`` ``matter_id``) for a longer one.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid("E_HOLD_MATTER_ID_MALFORMED", f"matter_id is a {type(value).__name__}, not text.",
                      "A matter reference is one line of printable text.",
                      "Send matter_id as a string, e.g. \"M-2026-014\", or leave it out.",
                      field="matter_id", type=type(value).__name__)
    bad = next((c for c in value if unicodedata.category(c)[0] == "C" or unicodedata.category(c) in _BREAKS), None)
    if bad is not None:
        char = f"U+{ord(bad):04X}"
        raise invalid("E_HOLD_MATTER_ID_MALFORMED",
                      f"matter_id contains {char} ({unicodedata.category(bad)}), which is not printable text.",
                      "A matter reference is one line of printable text: it is shown in hold lists, the "
                      "approvals queue and the audit trail.",
                      "Send matter_id of printable characters only, e.g. \"M-2026-014\".",
                      field="matter_id", character=char)
    clean = value.strip()
    if len(clean) > budgets.HOLD_MATTER_ID_MAX_CHARS:
        err = limit_exceeded("E_BUDGET_EXCEEDED", "HOLD_MATTER_ID_MAX_CHARS", budgets.HOLD_MATTER_ID_MAX_CHARS,
                             len(clean), "Send a shorter matter_id (a reference to the matter, not its text).")
        err.detail["field"] = "matter_id"
        raise err
    return clean or None


@dataclass(frozen=True)
class PlaceInput:
    """A hold request checked: ``mailbox_id`` (a ``mbx_`` id), ``matter_id`` (or None), the window (aware
    UTC; None for an open end)."""

    mailbox_id: str
    matter_id: str | None
    from_date: datetime | None
    to_date: datetime | None


def check_place_input(*, mailbox_id: object, matter_id: object, from_date: object, to_date: object) -> PlaceInput:
    """The fields of ``POST /api/holds`` checked, in this order, before anything is read. Pure.

    Raises ``E_REQUEST_INVALID`` (422, ``detail.problems`` as the schema check words it) when
    ``mailbox_id`` is missing, null or blank; ``E_ID_MALFORMED`` (422) for one that is not a mailbox id;
    ``check_matter_id``'s refusals; ``parse_bound``'s; ``E_HOLD_WINDOW_INVERTED`` (422) when
    ``from_date`` is after ``to_date``.
    """
    if mailbox_id is None or (isinstance(mailbox_id, str) and not mailbox_id.strip()):
        raise invalid("E_REQUEST_INVALID", "The request does not match the route's schema: mailbox_id: Field required",
                      "A legal hold covers one mailbox, so mailbox_id is required.",
                      "Send {\"mailbox_id\": \"mbx_...\"} (GET /api/mailboxes lists them), with matter_id, "
                      "from_date and to_date optional.",
                      problems=[{"field": "mailbox_id", "problem": "Field required"}])
    mbx = parse_id(mailbox_id, "mbx", "mailbox_id")
    matter = check_matter_id(matter_id)
    start, end = parse_bound(from_date, "from_date"), parse_bound(to_date, "to_date")
    if start is not None and end is not None and start > end:
        raise invalid("E_HOLD_WINDOW_INVERTED", "The hold's from_date is after its to_date.",
                      "A hold covers the content dated inside its window.",
                      "Swap the bounds, or leave one out for an open window.",
                      from_date=start.isoformat(), to_date=end.isoformat())
    return PlaceInput(mbx, matter, start, end)


def _no_hold(hold_id: str) -> MailnodeError:
    return not_found("E_NO_HOLD", f"No legal hold {hold_id}.", fix="List holds with GET /api/holds.",
                     hold_id=hold_id)


def place(conn: Connection, *, org_id: str, actor_id: str, mailbox_id: object, matter_id: object = None,
          from_date: object = None, to_date: object = None, now: datetime) -> dict[str, Any]:
    """Place a hold at once (one administrator); returns the hold JSON; audited ``hold.placed``.

    A date-only bound is a whole UTC day (``parse_bound``). Raises ``E_NOT_AN_ADMINISTRATOR`` (403), then
    ``check_place_input``'s refusals (422: ``E_REQUEST_INVALID``, ``E_ID_MALFORMED``,
    ``E_HOLD_MATTER_ID_MALFORMED``, ``E_BUDGET_EXCEEDED``, ``E_HOLD_BOUND_UNREADABLE``,
    ``E_HOLD_WINDOW_INVERTED``), ``E_NO_MAILBOX`` (404). Nothing is written when it raises.
    """
    if not is_admin(conn, org_id, actor_id):
        raise not_an_administrator("place a legal hold")
    checked = check_place_input(mailbox_id=mailbox_id, matter_id=matter_id, from_date=from_date, to_date=to_date)
    mbx, matter, start, end = checked.mailbox_id, checked.matter_id, checked.from_date, checked.to_date
    if conn.execute(select(mailboxes.c.id).where(mailboxes.c.id == mbx, mailboxes.c.org_id == org_id)).first() is None:
        raise not_found("E_NO_MAILBOX", f"No mailbox {mbx}.", fix="List mailboxes with GET /api/mailboxes.",
                        mailbox_id=mbx)
    hid = new_id("hld")
    conn.execute(holds.insert().values(id=hid, org_id=org_id, mailbox_id=mbx, matter_id=matter, from_date=start,
                                       to_date=end, placed_by=actor_id, placed_at=now))
    audit.append(conn, org_id=org_id, at=now, action="hold.placed", actor_id=actor_id, subject=hid,
                 detail={"mailbox_id": mbx, "matter_id": matter,
                         "from_date": start.isoformat() if start else None,
                         "to_date": end.isoformat() if end else None})
    return hold_json(conn.execute(select(holds).where(holds.c.id == hid)).one())


def request_lift(conn: Connection, *, org_id: str, actor_id: str, hold_id: str, reason: object,
                 now: datetime) -> dict[str, Any]:
    """Ask two other deciders of the held mailbox to lift a hold; returns ``{hold_id, lift_id, approval_id,
    reason, stages, eligible}``. Nothing is lifted until they approve.

    Raises ``E_NOT_AN_ADMINISTRATOR`` (403), ``E_NO_HOLD`` (404), ``E_HOLD_LIFT_REASON_REQUIRED`` (422),
    ``E_HOLD_ALREADY_LIFTED``, ``E_HOLD_LIFT_PENDING``, ``E_HOLD_LIFT_UNSATISFIABLE`` (409). Nothing is
    written when it raises.
    """
    if not is_admin(conn, org_id, actor_id):
        raise not_an_administrator("ask to lift a legal hold")
    parse_id(hold_id, "hld", "hold_id")
    row = conn.execute(select(holds).where(holds.c.id == hold_id, holds.c.org_id == org_id)).first()
    if row is None:
        raise _no_hold(hold_id)
    why = str(reason or "").strip()
    if not why:
        raise invalid("E_HOLD_LIFT_REASON_REQUIRED", "A lift request needs a reason.",
                      "The deciders decide on the reason; it is copied onto the hold when it is lifted.",
                      "Send {\"reason\": \"...\"}.", hold_id=hold_id)
    if row.lifted_at is not None:
        raise conflict("E_HOLD_ALREADY_LIFTED", f"Hold {hold_id} was lifted at {row.lifted_at.isoformat()}.",
                       "A hold is lifted once.", "Nothing to do; GET /api/holds lists holds.", hold_id=hold_id)
    pending = conn.execute(select(approvals.c.id).join(hold_lifts, hold_lifts.c.id == approvals.c.subject_id)
                           .where(hold_lifts.c.hold_id == hold_id,
                                  approvals.c.subject_kind == ap.SubjectKind.HOLD_LIFT.value,
                                  approvals.c.state == ap.ApprovalState.PENDING.value)).first()
    if pending is not None:
        raise conflict("E_HOLD_LIFT_PENDING", f"A lift of hold {hold_id} is already waiting for approval.",
                       "One lift request per hold is open at a time.",
                       "Decide it: GET /api/approvals, POST /api/approvals/{id}/decide.",
                       hold_id=hold_id, approval_id=pending.id)
    plan = ap.plan(conn, org_id=org_id, kind=ap.SubjectKind.HOLD_LIFT, scope_id=row.mailbox_id, actor_id=actor_id,
                   stages=LIFT_STAGES)
    if plan.shortfall is not None:
        raise MailnodeError(
            code="E_HOLD_LIFT_UNSATISFIABLE",
            what=f"Lifting hold {hold_id} needs {budgets.HOLD_LIFT_APPROVERS} deciders of mailbox "
                 f"{row.mailbox_id} other than you; it has {len(plan.eligible)}.",
            why="A hold protects evidence, so two people other than the one asking must agree to lift it.",
            fix="Grant approval.decide on the mailbox to more people (POST /api/access), then ask again.",
            status=409, detail={"hold_id": hold_id, "eligible": len(plan.eligible),
                                "needed": budgets.HOLD_LIFT_APPROVERS})
    lid = new_id("hlf")
    conn.execute(hold_lifts.insert().values(id=lid, org_id=org_id, hold_id=hold_id, reason=why,
                                            requested_by=actor_id, requested_at=now))
    aid = ap.write_request(conn, org_id=org_id, plan=plan, subject_id=lid, now=now,
                           extra={"hold_id": hold_id, "reason": why})
    return {"hold_id": hold_id, "lift_id": lid, "approval_id": aid, "reason": why,
            "stages": [s.to_json() for s in plan.stages], "eligible": len(plan.eligible)}


def list_(conn: Connection, *, org_id: str, actor_id: str, limit: int, cursor: str | None) -> list[dict[str, Any]]:
    """Every hold, in force or lifted, by id after ``cursor``; administrators only: anyone else is refused
    ``E_NOT_AN_ADMINISTRATOR`` (403), as the retention and provider-status routes are (the route's
    existence is no secret; the holds are listed to no one else)."""
    if not is_admin(conn, org_id, actor_id):
        raise not_an_administrator("list legal holds")
    q = select(holds).where(holds.c.org_id == org_id)
    if cursor:
        q = q.where(holds.c.id > cursor)
    return [hold_json(r) for r in conn.execute(q.order_by(holds.c.id).limit(limit)).all()]
