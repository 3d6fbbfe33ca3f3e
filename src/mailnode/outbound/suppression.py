"""The suppression list: addresses an organisation's mail is not handed to (issue 20, "Suppression").

One row per (organisation, address) in ``schema.outbound_suppression.suppressions``; ``address`` is the
recipient key of ``mailnode.addresses`` (``NormalisedAddress.key``: the whole address lower-cased, the domain
in A-labels), so the seal, the hand-over and the list all compare addresses as the rest of the node does.

How an address gets there:

- automatically, in the transaction that records a delivery signal (``outbound.events.record``): ``decide``
  (pure, total, tested as a table) says whether the event suppresses and with what reason. A hard bounce (an
  attributed ``bounced`` event whose ``bounce_type`` is ``hard``: a DSN with a permanent 5.x.x status, RFC 3463
  §3.1, or a provider ``bounced`` event with a permanent type) gives ``hard_bounce``; an attributed complaint
  (an ARF report, RFC 5965, or a provider ``complained`` event) gives ``complaint``. A soft bounce, a
  deferral, a delivery, a provider ``failed`` or ``rejected`` never suppresses, and neither does a signal this
  node cannot tie to one of its own sends (an unattributed report may be about anyone's mail). The first row
  wins: a second bounce for a suppressed address keeps the first row (``add`` is idempotent on
  ``UNIQUE_INDEX``);
- by an administrator (``manual``), or by an import (the reason the CSV names, ``import`` when it names none).

What it does: at seal (``outbound.seal``) and again at hand-over (``outbound.dispatch``), a recipient whose
address is on the list gets the ``suppressed`` submission state with ``suppression_reason``; the others
proceed. A suppressed recipient is never handed over, so it counts toward neither the volume nor the bounce
breaker (both count hand-overs and attributed events, ``governance.breakers``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, delete, func, select, update
from sqlalchemy.exc import IntegrityError

from mailnode import audit, budgets
from mailnode.addresses import normalise_address
from mailnode.db import integrity
from mailnode.errors import MailnodeError, invalid, not_found
from mailnode.ids import new_id
from mailnode.schema.outbound import send_recipients
from mailnode.schema.outbound_suppression import suppressions
from mailnode.vocabulary.send_states import NOT_YET_LEFT, SendState

#: The unique index that makes an address one row per organisation.
UNIQUE_INDEX = "uq_suppressions_org_address"


class Reason(StrEnum):
    """Why an address is on the list."""

    HARD_BOUNCE = "hard_bounce"
    COMPLAINT = "complaint"
    MANUAL = "manual"
    IMPORT = "import"


#: The automatic reasons by normalised event (``outbound.events.DELIVERY_STATE_FOR_EVENT``'s keys) and bounce
#: type (``hard``, ``soft`` or None). Every pair not listed suppresses nothing.
_AUTOMATIC: dict[tuple[str, str | None], Reason] = {
    ("bounced", "hard"): Reason.HARD_BOUNCE,
    ("complained", None): Reason.COMPLAINT,
    ("complained", "hard"): Reason.COMPLAINT,
    ("complained", "soft"): Reason.COMPLAINT,
}


def decide(event: str | None, bounce_type: str | None, *, attributed: bool) -> Reason | None:
    """Does this delivery signal suppress its recipient's address, and with what reason? Pure and total.

    ``event`` is a normalised event type (``delivered | bounced | deferred | failed | rejected | complained``)
    or None (a report whose outcome could not be read); ``bounce_type`` is ``hard``, ``soft`` or None;
    ``attributed``: the signal was tied to one of this node's recipient rows. Only an attributed hard bounce
    (``hard_bounce``) or complaint (``complaint``) suppresses; anything else, an unknown string included,
    returns None (a signal mailnode cannot read never stops mail to an address).
    """
    if not attributed or event is None:
        return None
    return _AUTOMATIC.get((event, bounce_type))


@dataclass(frozen=True)
class Suppression:
    """One row of the list, as the API shows it (``created_at`` ISO 8601 UTC)."""

    id: str
    address: str
    reason: str
    created_at: datetime
    event_id: str | None
    send_id: str | None
    recipient_id: str | None
    added_by: str | None
    note: str | None

    def to_json(self) -> dict[str, Any]:
        """The API shape."""
        return {"id": self.id, "address": self.address, "reason": self.reason,
                "created_at": self.created_at.isoformat(), "event_id": self.event_id, "send_id": self.send_id,
                "recipient_id": self.recipient_id, "added_by": self.added_by, "note": self.note}


def _of(row: Any) -> Suppression:
    return Suppression(row.id, row.address, row.reason, row.created_at, row.event_id, row.send_id,
                       row.recipient_id, row.added_by, row.note)


def key_of(address: str) -> str:
    """The list's key for an address as given (``addresses.normalise_address(...).key``).

    Raises ``E_ADDRESS_MALFORMED`` / ``E_HEADER_INJECTION`` / ``E_TEXT_MALFORMED`` (422) for one that is not an
    address.
    """
    return normalise_address(address, "address").key


def add(conn: Connection, *, org_id: str, address_key: str, reason: Reason, at: datetime,
        event_id: str | None = None, send_id: str | None = None, recipient_id: str | None = None,
        added_by: str | None = None, note: str | None = None) -> str | None:
    """Put ``address_key`` (already a key, ``key_of``) on ``org_id``'s list; the new row's id, or None when the
    address was on it already (that row is kept as it was: the first cause wins).

    Only a violation of ``UNIQUE_INDEX`` means "already there"; any other integrity error (an unknown
    organisation) re-raises ``sqlalchemy.exc.IntegrityError``. Runs in the caller's transaction (a savepoint).
    """
    sid = new_id("sup")
    try:
        with conn.begin_nested():
            conn.execute(suppressions.insert().values(
                id=sid, org_id=org_id, address=address_key, reason=reason.value, event_id=event_id,
                send_id=send_id, recipient_id=recipient_id, added_by=added_by, note=note, created_at=at))
    except IntegrityError as exc:
        if not integrity.violates(exc, suppressions, UNIQUE_INDEX):
            raise
        return None
    return sid


def record_event(conn: Connection, *, org_id: str, event_id: str, event: str | None, bounce_type: str | None,
                 address: str | None, send_id: str | None, recipient_id: str | None, at: datetime) -> str | None:
    """Suppress ``address`` when ``decide`` says this recorded event does; the new row id, else None.

    Called by ``outbound.events.record`` in the transaction that recorded the event. The address suppressed is
    the attributed recipient row's (the one the mail went to), ``address`` (the reported one) only if that row
    is gone; one that does not read as an address suppresses nothing (the event is kept, nothing guessed).
    """
    reason = decide(event, bounce_type, attributed=recipient_id is not None)
    if reason is None or recipient_id is None:
        return None
    # The address the mail went to (the report may spell it otherwise, e.g. behind a VERP rewrite).
    sent_to = conn.execute(select(send_recipients.c.address).where(send_recipients.c.id == recipient_id)).scalar()
    try:
        key = key_of(sent_to or address or "")
    except MailnodeError:
        return None
    return add(conn, org_id=org_id, address_key=key, reason=reason, at=at, event_id=event_id, send_id=send_id,
               recipient_id=recipient_id)


def reasons_for(conn: Connection, org_id: str, keys: Iterable[str]) -> dict[str, str]:
    """``{address key: reason}`` for those of ``keys`` on ``org_id``'s list: one statement (none when empty)."""
    wanted = sorted({k.lower() for k in keys})
    if not wanted:
        return {}
    rows = conn.execute(select(suppressions.c.address, suppressions.c.reason)
                        .where(suppressions.c.org_id == org_id, suppressions.c.address.in_(wanted))).all()
    return {r.address: r.reason for r in rows}


def suppress_recipients(conn: Connection, *, org_id: str, manifest_id: str, at: datetime) -> int:
    """The hand-over's check: a recipient row of ``manifest_id`` that has not left (``NOT_YET_LEFT``) and whose
    address is on the list now becomes ``suppressed`` with its reason. One statement; returns the rows moved."""
    r = send_recipients.c
    reason = (select(suppressions.c.reason)
              .where(suppressions.c.org_id == org_id, suppressions.c.address == func.lower(r.address))
              .limit(1).scalar_subquery())
    done = conn.execute(update(send_recipients)
                        .where(r.manifest_id == manifest_id, r.submission_state.in_(NOT_YET_LEFT),
                               reason.is_not(None))
                        .values(submission_state=SendState.SUPPRESSED.value, submission_state_at=at,
                                suppression_reason=reason, last_error=None))
    return int(done.rowcount or 0)


def suppress_many(conn: Connection, *, org_id: str, manifest_ids: list[str], at: datetime) -> int:
    """``suppress_recipients`` for several sends of one organisation at once (a dispatch batch's claim, issue
    19). One statement; returns the rows moved."""
    r = send_recipients.c
    reason = (select(suppressions.c.reason)
              .where(suppressions.c.org_id == org_id, suppressions.c.address == func.lower(r.address))
              .limit(1).scalar_subquery())
    done = conn.execute(update(send_recipients)
                        .where(r.manifest_id.in_(manifest_ids), r.submission_state.in_(NOT_YET_LEFT),
                               reason.is_not(None))
                        .values(submission_state=SendState.SUPPRESSED.value, submission_state_at=at,
                                suppression_reason=reason, last_error=None))
    return int(done.rowcount or 0)


def no_such_suppression(address: str) -> MailnodeError:
    """404 ``E_NO_SUCH_SUPPRESSION``: the address is not on the organisation's list."""
    return not_found("E_NO_SUCH_SUPPRESSION", f"{address[:254]} is not on the suppression list.",
                     fix="List the suppressions with GET /api/suppressions.", address=address[:254])


def _note(value: str | None, field: str) -> str | None:
    if value is None:
        return None
    if len(value) > budgets.SUPPRESSION_NOTE_MAX_CHARS:
        raise invalid("E_SUPPRESSION_NOTE_TOO_LONG",
                      f"The {field} has {len(value)} characters; at most {budgets.SUPPRESSION_NOTE_MAX_CHARS}.",
                      "It is kept in the audit trail, which bounds what one entry holds.",
                      f"Shorten the {field} (budgets.SUPPRESSION_NOTE_MAX_CHARS).", field=field)
    return value


def _kind(actor_id: str | None) -> audit.ActorKind | None:
    """``installer`` for the command line (no actor id: whoever can read the data directory), else implied."""
    return "installer" if actor_id is None else None


def add_manual(conn: Connection, *, org_id: str, actor_id: str | None, address: str, at: datetime,
               note: str | None = None) -> Suppression:
    """An administrator puts ``address`` on the list (``manual``), audited ``suppression.added``.

    Answers the row now on the list (the existing one, unchanged and not audited again, when it was there).
    Raises the address's 422s (``key_of``) and ``E_SUPPRESSION_NOTE_TOO_LONG`` (422). The caller checks the
    actor is an administrator; ``actor_id`` None is the command line (audited ``actor_kind = installer``).
    """
    key = key_of(address)
    text = _note(note, "note")
    sid = add(conn, org_id=org_id, address_key=key, reason=Reason.MANUAL, at=at, added_by=actor_id, note=text)
    if sid is not None:
        audit.append(conn, org_id=org_id, at=at, action="suppression.added", actor_id=actor_id, subject=sid,
                     detail={"address": key, "reason": Reason.MANUAL.value, "note": text},
                     actor_kind=_kind(actor_id))
    found = get(conn, org_id=org_id, address=key)
    if found is None:  # inserted or already there in this transaction: absent would be a defect
        raise no_such_suppression(key)
    return found


def get(conn: Connection, *, org_id: str, address: str) -> Suppression | None:
    """The row for ``address`` (normalised by ``key_of``, so its 422s), or None."""
    row = conn.execute(select(suppressions).where(suppressions.c.org_id == org_id,
                                                  suppressions.c.address == key_of(address))).first()
    return _of(row) if row is not None else None


def remove(conn: Connection, *, org_id: str, actor_id: str | None, address: str, reason: str,
           at: datetime) -> Suppression:
    """An administrator takes ``address`` off the list with a ``reason`` (required), audited
    ``suppression.removed`` with the row as it was. Returns the removed row.

    Raises ``E_SUPPRESSION_REMOVAL_REASON_MISSING`` / ``E_SUPPRESSION_NOTE_TOO_LONG`` (422), the address's 422s,
    ``E_NO_SUCH_SUPPRESSION`` (404).
    """
    if not reason or not reason.strip():
        raise invalid("E_SUPPRESSION_REMOVAL_REASON_MISSING", "The removal has no reason.",
                      "Mail to a suppressed address bounced or drew a complaint; taking it off the list is "
                      "audited with why, so the next person can tell whether to put it back.",
                      "Send a reason, e.g. ?reason=the customer fixed their mailbox (CLI: --reason).")
    text = _note(reason.strip(), "reason")
    found = get(conn, org_id=org_id, address=address)
    if found is None:
        raise no_such_suppression(address)
    conn.execute(delete(suppressions).where(suppressions.c.id == found.id))
    audit.append(conn, org_id=org_id, at=at, action="suppression.removed", actor_id=actor_id, subject=found.id,
                 detail={"address": found.address, "was": found.reason, "reason": text,
                         "added_at": found.created_at.isoformat()}, actor_kind=_kind(actor_id))
    return found


@dataclass(frozen=True)
class ListFilter:
    """The list's filters: ``q`` a substring of the address (lower-cased), or the whole address when
    ``exact``; ``reason`` one reason."""

    q: str | None = None
    exact: bool = False
    reason: Reason | None = None


def parse_reason(value: str | None, field: str = "reason") -> Reason | None:
    """``value`` as a ``Reason`` (None for None or empty); ``E_SUPPRESSION_REASON_UNKNOWN`` (422) otherwise."""
    if value is None or value == "":
        return None
    try:
        return Reason(value.strip().lower())
    except ValueError:
        raise invalid("E_SUPPRESSION_REASON_UNKNOWN", f"{value[:40]!r} is not a suppression reason.",
                      "The list's reasons are a closed vocabulary.",
                      f"Use one of {', '.join(r.value for r in Reason)}.", field=field,
                      value=value[:40]) from None


def list_page(conn: Connection, *, org_id: str, filters: ListFilter, limit: int,
              cursor: str | None) -> list[Suppression]:
    """One page of ``org_id``'s list, newest first (by id, a ULID), after ``cursor`` (the last id of the
    previous page), at most ``limit``. One statement.

    Raises ``E_SUPPRESSION_QUERY_TOO_LONG`` (422) for a ``q`` over ``budgets.SUPPRESSION_SEARCH_MAX_CHARS``.
    """
    s = suppressions.c
    q = select(suppressions).where(s.org_id == org_id)
    if filters.q:
        if len(filters.q) > budgets.SUPPRESSION_SEARCH_MAX_CHARS:
            raise invalid("E_SUPPRESSION_QUERY_TOO_LONG",
                          f"The search text has {len(filters.q)} characters; an address has at most "
                          f"{budgets.SUPPRESSION_SEARCH_MAX_CHARS}.", "Nothing longer can match an address.",
                          "Search for the address or a part of it.")
        needle = filters.q.strip().lower()
        if filters.exact:
            q = q.where(s.address == needle)
        else:
            escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            q = q.where(s.address.like(f"%{escaped}%", escape="\\"))
    if filters.reason is not None:
        q = q.where(s.reason == filters.reason.value)
    if cursor:
        q = q.where(s.id < cursor)
    return [_of(r) for r in conn.execute(q.order_by(s.id.desc()).limit(limit)).all()]


#: The CSV's columns, in order (export writes them all; import reads ``address`` and, when present, ``reason``
#: and ``note``, and ignores the rest).
CSV_COLUMNS: tuple[str, ...] = ("address", "reason", "created_at", "event_id", "send_id", "recipient_id",
                                "added_by", "note")


def export_csv(conn: Connection, *, org_id: str) -> str:
    """The whole list as CSV (RFC 4180: a header row of ``CSV_COLUMNS``, CRLF line ends), oldest first."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for r in conn.execute(select(suppressions).where(suppressions.c.org_id == org_id)
                          .order_by(suppressions.c.id)).all():
        writer.writerow([r.address, r.reason, r.created_at.isoformat(), r.event_id or "", r.send_id or "",
                         r.recipient_id or "", r.added_by or "", r.note or ""])
    return out.getvalue()


@dataclass(frozen=True)
class ImportRow:
    """One line of an import, checked: its line number (1 is the header), address key, reason, note."""

    line: int
    address: str
    reason: Reason
    note: str | None


def _bad_line(line: int, what: str, fix: str, **detail: Any) -> MailnodeError:
    return invalid("E_SUPPRESSION_IMPORT_BAD_LINE", f"Line {line} of the CSV: {what}",
                   "An import is all or nothing, so one bad line stops it and nothing was written.",
                   fix, line=line, **detail)


def parse_csv(data: bytes) -> list[ImportRow]:
    """Read an import's CSV (UTF-8, a header row naming ``address``; ``reason`` and ``note`` optional). Pure.

    Every line is checked before anything is written; a repeated address keeps its first line. Raises
    ``E_SUPPRESSION_IMPORT_TOO_LARGE`` (413) over ``budgets.SUPPRESSION_IMPORT_MAX_BYTES``,
    ``E_SUPPRESSION_IMPORT_TOO_MANY_ROWS`` (422) over ``budgets.SUPPRESSION_IMPORT_MAX_ROWS``,
    ``E_SUPPRESSION_IMPORT_MALFORMED`` (422) for a body that is not UTF-8 CSV with an ``address`` column, and
    ``E_SUPPRESSION_IMPORT_BAD_LINE`` (422, ``detail.line``) naming the first bad line (an address that is not
    one, an unknown reason, a note too long).
    """
    if len(data) > budgets.SUPPRESSION_IMPORT_MAX_BYTES:
        raise MailnodeError(code="E_SUPPRESSION_IMPORT_TOO_LARGE",
                            what=f"The CSV has {len(data)} bytes; at most {budgets.SUPPRESSION_IMPORT_MAX_BYTES}.",
                            why="An import is checked and written in one transaction, which the budget bounds.",
                            fix="Split the file and import each part (budgets.SUPPRESSION_IMPORT_MAX_BYTES).",
                            status=413, detail={"limit": budgets.SUPPRESSION_IMPORT_MAX_BYTES})
    try:
        text = data.decode("utf-8-sig")
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise invalid("E_SUPPRESSION_IMPORT_MALFORMED", f"The body is not UTF-8 CSV ({exc}).",
                      "An import is a CSV file as GET /api/suppressions/export.csv writes it.",
                      "Send the CSV as UTF-8 with a header row naming an address column.") from None
    header = [h.strip().lower() for h in rows[0]] if rows else []
    if "address" not in header:
        raise invalid("E_SUPPRESSION_IMPORT_MALFORMED", "The CSV has no header row naming an address column.",
                      "The header says which column holds the addresses.",
                      f"Start the file with a header row, e.g. {','.join(CSV_COLUMNS[:2])}.")
    body = [(n, r) for n, r in enumerate(rows[1:], start=2) if any(cell.strip() for cell in r)]
    if len(body) > budgets.SUPPRESSION_IMPORT_MAX_ROWS:
        raise invalid("E_SUPPRESSION_IMPORT_TOO_MANY_ROWS",
                      f"The CSV has {len(body)} rows; at most {budgets.SUPPRESSION_IMPORT_MAX_ROWS}.",
                      "An import is checked and written in one transaction, which the budget bounds.",
                      "Split the file and import each part (budgets.SUPPRESSION_IMPORT_MAX_ROWS).",
                      limit=budgets.SUPPRESSION_IMPORT_MAX_ROWS, observed=len(body))
    at: dict[str, int] = {name: header.index(name) for name in ("address", "reason", "note") if name in header}
    out: list[ImportRow] = []
    seen: set[str] = set()
    for line, cells in body:
        def cell(name: str, cells: Sequence[str] = cells) -> str:
            i = at.get(name)
            return cells[i].strip() if i is not None and i < len(cells) else ""

        try:
            key = key_of(cell("address"))
        except MailnodeError as exc:
            raise _bad_line(line, f"{cell('address')[:254]!r} is not an address ({exc.what})",
                            "Correct or delete that line and import the file again.", refused_as=exc.code) from None
        try:
            reason = parse_reason(cell("reason")) or Reason.IMPORT
        except MailnodeError:
            raise _bad_line(line, f"{cell('reason')[:40]!r} is not a suppression reason.",
                            f"Use one of {', '.join(r.value for r in Reason)}, or leave it empty.") from None
        note = cell("note") or None
        if note is not None and len(note) > budgets.SUPPRESSION_NOTE_MAX_CHARS:
            raise _bad_line(line, f"the note has {len(note)} characters; at most "
                            f"{budgets.SUPPRESSION_NOTE_MAX_CHARS}.", "Shorten the note on that line.")
        if key in seen:
            continue
        seen.add(key)
        out.append(ImportRow(line, key, reason, note))
    return out


@dataclass(frozen=True)
class ImportResult:
    """What an import did: addresses added, and those already on the list (kept as they were); ``lines`` says
    it per line, ``(line, address key, outcome)`` with outcome ``added`` or the reason of the row already there
    (the web page shows it; the API answers the counts)."""

    added: int
    already: int
    lines: tuple[tuple[int, str, str], ...] = ()

    def to_json(self) -> dict[str, int]:
        """The API shape."""
        return {"added": self.added, "already": self.already}


def import_rows(conn: Connection, *, org_id: str, actor_id: str | None, rows: Sequence[ImportRow],
                at: datetime) -> ImportResult:
    """Write checked rows (``parse_csv``) in the caller's transaction, audited once as ``suppression.imported``.

    An address already on the list keeps its row. The caller checks the actor is an administrator.
    """
    existing = reasons_for(conn, org_id, [r.address for r in rows])
    fresh = [r for r in rows if r.address not in existing]
    if fresh:
        conn.execute(suppressions.insert(), [
            {"id": new_id("sup"), "org_id": org_id, "address": r.address, "reason": r.reason.value,
             "event_id": None, "send_id": None, "recipient_id": None, "added_by": actor_id, "note": r.note,
             "created_at": at} for r in fresh])
    lines = tuple((r.line, r.address, existing.get(r.address, "added")) for r in rows)
    result = ImportResult(len(fresh), len(rows) - len(fresh), lines)
    audit.append(conn, org_id=org_id, at=at, action="suppression.imported", actor_id=actor_id, subject=None,
                 detail=result.to_json(), actor_kind=_kind(actor_id))
    return result
