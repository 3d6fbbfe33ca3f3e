"""The queue's decisions, pure: which view a case is in, the counts, a row's snippet, age and labels.

``mail.queue`` fetches the facts (one statement each) and calls these; nothing here reads a database or a
clock. A view is a closed vocabulary (``View``); ``VIEW_RULES`` is the one definition of what each case view
holds, read both by ``in_view`` (counts, tests) and by ``mail.queue``'s SQL filter, so the two cannot differ.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from mailnode import budgets
from mailnode.errors import MailnodeError


class View(StrEnum):
    """The tabs of a mailbox's queue, in the order a page shows them."""

    UNASSIGNED = "unassigned"
    MINE = "mine"
    OPEN = "open"
    CLOSED = "closed"
    #: The mailbox's own sends (``send_manifests``), whatever their state: not cases.
    SENT = "sent"


class Holder(StrEnum):
    """Who must hold a case for a case view: nobody, the person looking, or anyone (no condition)."""

    NOBODY = "nobody"
    ME = "me"
    ANY = "any"


#: Each case view: the case state it holds and who holds the case. ``View.SENT`` is not a case view.
VIEW_RULES: dict[View, tuple[str, Holder]] = {
    View.UNASSIGNED: ("open", Holder.NOBODY),
    View.MINE: ("open", Holder.ME),
    View.OPEN: ("open", Holder.ANY),
    View.CLOSED: ("closed", Holder.ANY),
}

#: What each tab is called on a page and in the API's words.
VIEW_LABELS: dict[View, str] = {View.UNASSIGNED: "Unassigned", View.MINE: "Mine", View.OPEN: "All open",
                                View.CLOSED: "Closed", View.SENT: "Sent"}


def parse_view(text: str | None) -> View:
    """The view ``text`` names (None or empty: ``unassigned``, the tab a queue opens on); else
    ``E_QUEUE_VIEW_UNKNOWN`` (422) listing the views."""
    if not text:
        return View.UNASSIGNED
    try:
        return View(text)
    except ValueError:
        raise MailnodeError(code="E_QUEUE_VIEW_UNKNOWN", what=f"{text[:40]!r} is not a queue view.",
                            why="A mailbox's queue has the views " + ", ".join(v.value for v in View) + ".",
                            fix="Open one of those views, e.g. ?view=unassigned.", status=422,
                            detail={"view": text[:40], "views": [v.value for v in View]}) from None


def in_view(view: View, *, state: str, holder_id: str | None, principal_id: str) -> bool:
    """Whether a case (``state``, held by ``holder_id`` or nobody) is listed in ``view`` for
    ``principal_id``. Never for ``View.SENT`` (sends are not cases). An unknown state is in no view."""
    rule = VIEW_RULES.get(view)
    if rule is None:
        return False
    want_state, holder = rule
    if state != want_state:
        return False
    if holder is Holder.NOBODY:
        return holder_id is None
    if holder is Holder.ME:
        return holder_id == principal_id
    return True


@dataclass(frozen=True)
class CaseGroup:
    """One group of a mailbox's cases: their state, their holder (None: nobody) and how many there are."""

    state: str
    holder_id: str | None
    count: int


def counts(groups: Iterable[CaseGroup], *, sent: int, principal_id: str) -> dict[View, int]:
    """Every view's count (total over ``View``), from the cases grouped by state and holder and the number
    of the mailbox's sends."""
    out = {v: 0 for v in View}
    for g in groups:
        for v in VIEW_RULES:
            if in_view(v, state=g.state, holder_id=g.holder_id, principal_id=principal_id):
                out[v] += g.count
    out[View.SENT] = sent
    return out


_QUOTED_LINE = re.compile(r"^\s*>")
#: "On Tue, 1 Dec 2026, Alice wrote:" and its common translations ("Am …, schrieb Bob:"): the line that
#: introduces a quoted original, ending in a colon.
_ATTRIBUTION = re.compile(r"^\s*(On|Am|Le|El|Il)\b.*\b(wrote|schrieb|a écrit|escribió|ha scritto)\b.*:\s*$",
                          re.IGNORECASE)


def snippet(text: str | None, size: int = budgets.QUEUE_SNIPPET_CHARS) -> str:
    """The first ``size`` characters a reader has not read before: ``text`` without quoted lines (``>``)
    and the "On … wrote:" line introducing them, white space collapsed, ``…`` where cut. Empty for None."""
    if not text:
        return ""
    lines = [ln for ln in text.splitlines() if not _QUOTED_LINE.match(ln) and not _ATTRIBUTION.match(ln)]
    flat = " ".join(" ".join(lines).split())
    return flat if len(flat) <= size else flat[:size].rstrip() + "…"


def age_seconds(at: datetime, now: datetime) -> int:
    """Whole seconds from ``at`` to ``now`` (both UTC); 0 for a time in the future (a clock ahead)."""
    return max(0, int((now - at).total_seconds()))


#: The units an age is said in, largest first: (seconds in one, its abbreviation).
_AGE_UNITS = ((86_400 * 365, "y"), (86_400 * 7, "w"), (86_400, "d"), (3_600, "h"), (60, "min"))


def age_words(seconds: int) -> str:
    """An age as a person scans it: ``just now`` under a minute, else the largest whole unit (``5 min``,
    ``3 h``, ``2 d``, ``6 w``, ``1 y``)."""
    for size, unit in _AGE_UNITS:
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return "just now"


def holder_label(holder_id: str | None, names: dict[str, str], principal_id: str) -> str | None:
    """How a row names who holds its case: ``you``, the holder's name (``names``: id → name), or the bare id
    when the name is unknown (a deleted user); None when nobody holds it."""
    if holder_id is None:
        return None
    if holder_id == principal_id:
        return "you"
    return names.get(holder_id) or holder_id


def correspondent_of_send(to: list[str], display_names: dict[str, str] | None) -> tuple[str | None, str | None]:
    """``(display name, address)`` a Sent row names: the first To recipient, with the name the send gave it."""
    if not to:
        return None, None
    first = to[0]
    return (display_names or {}).get(first), first


def next_cursor(keys: list[str], limit: int) -> str | None:
    """The cursor of the page after one whose rows have ``keys`` (in order): the last key when the page is
    full (there may be more), else None."""
    return keys[-1] if keys and len(keys) == limit else None
