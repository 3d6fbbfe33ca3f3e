"""The site navigation every signed-in page shows in its header: the areas of the web inbox and the operator's
controls, and the count of what waits on the signed-in person.

``AREAS`` is the closed list of areas (path, label, key); a page says which area it belongs to with the
template variable ``area`` (one of the keys), and the header marks that link ``aria-current="page"``.
``waiting_count(node, principal)`` is the number shown beside "Waiting for me" (``web.waiting`` counts it: the
Butler proposals, approvals, domain pauses and hold lifts that wait on this person), or None while that
count cannot be read, in which case the header shows no number rather than a reassuring zero.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mailnode.directory.tokens import Principal
from mailnode.node import Node


@dataclass(frozen=True)
class Area:
    """One link of the site navigation: its path, its label and its key (``area`` in a page's context)."""

    path: str
    label: str
    key: str


#: The areas, in the order the header lists them.
AREAS: tuple[Area, ...] = (
    Area("/", "Inbox", "inbox"),
    Area("/waiting", "Waiting for me", "waiting"),
    Area("/sends", "Sends", "sends"),
    Area("/limits", "Limits and health", "limits"),
    Area("/butlers", "Butlers", "butlers"),
    Area("/people", "People and access", "people"),
)

#: The counter of what waits on a person; ``web.waiting`` installs its own at import (None: no count).
WaitingCounter = Callable[[Node, Principal], int]
_counter: list[WaitingCounter] = []


def set_waiting_counter(counter: WaitingCounter) -> None:
    """Install ``counter`` as the header's "Waiting for me" count (called once, by ``web.waiting``)."""
    _counter[:] = [counter]


def waiting_count(node: Node, principal: Principal) -> int | None:
    """What waits on ``principal`` (an int), or None when no counter is installed."""
    if not _counter:
        return None
    return _counter[0](node, principal)
