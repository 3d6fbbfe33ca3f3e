"""What of the doctor's report a caller may see: the same relations as the routes that own each object.

``viewer_of`` reads the caller's relations once (one statement each); ``sees`` and ``view`` are pure. A
finding keeps its name, severity and ``ok`` for everyone (the verdict is the node's health, not a secret);
its words and data are shown only as far as the caller could read the objects through their own routes:

- ``node``: every token holder. ``organisation``: administrators (``GET /api/audit``, ``/api/users``,
  ``/api/provider-status``, ``/api/approvals`` answer administrators).
- ``mailboxes``: administrators and any principal holding a relation on some mailbox (the organisation's
  rate breakers gate every mailbox's sends; ``GET /api/breakers``).
- ``mailbox``: administrators and holders of a metadata relation on it (``GET /api/mailboxes/{id}``).
- ``butler``: administrators (``GET /api/butlers`` answers anyone else 404).
- ``user``, ``application``: administrators and that principal itself.
- ``domain``: every token holder (``GET /api/domain-pauses`` lists the pauses in force to anyone).

An item the caller may not see is left out, uncounted (how many people have an unverified address is not
the caller's either), and ``data["withheld"]`` is true; a finding whose whole concern the caller may not
see shows no words or data beyond that some were withheld and why.

A new finding joins by saying what it concerns: ``Finding(..., concerns=NODE)`` for facts about the process
(the default, ``ORGANISATION``, shows administrators only), and, when it lists objects, one
``findings.Item`` per object with its ``Concern`` (build it with ``findings.listed``). Nothing here changes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Connection

from mailnode import authz
from mailnode.doctor.findings import Concern, Finding, listing_detail, listing_fix

#: What a caller is told in place of words it may not read, per concern kind.
_WITHHELD = {
    "organisation": "it concerns the organisation as a whole, which administrators see",
    "mailboxes": "it concerns every mailbox's mail, which administrators and holders of a mailbox relation see",
    "mailbox": "it concerns a mailbox you hold no relation on",
    "butler": "it concerns Butlers, which administrators see",
    "user": "it concerns another person",
    "application": "it concerns another application",
}


@dataclass(frozen=True)
class Viewer:
    """The facts about a caller that decide what it sees (``viewer_of``); ``ALL`` sees everything."""

    principal_id: str | None
    admin: bool
    mailboxes: frozenset[str] = frozenset()
    any_mailbox: bool = False


#: The installer at the data directory (``mailnode doctor``) and administrators: everything.
ALL = Viewer(principal_id=None, admin=True)


def viewer_of(conn: Connection, org_id: str, principal_id: str) -> Viewer:
    """The caller's visibility: administrator, or the mailboxes it holds a metadata relation on and whether
    it holds any relation on some mailbox. Reads the relation tuples (at most three statements)."""
    if authz.is_admin(conn, org_id, principal_id):
        return Viewer(principal_id, True)
    readable = authz.mailboxes_visible(conn, org_id, principal_id, authz.METADATA_READERS)
    return Viewer(principal_id, False, frozenset(readable), authz.sees_breakers(conn, org_id, principal_id))


def sees(viewer: Viewer, concern: Concern) -> bool:
    """True when ``viewer`` may read what ``concern`` names (the table in the module docstring; pure).

    An unknown kind is not seen (fail closed)."""
    if viewer.admin or concern.kind in ("node", "domain"):
        return True
    if concern.kind == "mailboxes":
        return viewer.any_mailbox
    if concern.kind == "mailbox":
        return concern.id in viewer.mailboxes
    if concern.kind in ("user", "application"):
        return viewer.principal_id is not None and concern.id == viewer.principal_id
    return False


def _withheld(concern: Concern) -> str:
    return _WITHHELD.get(concern.kind, f"it concerns a {concern.kind}")


def view(finding: Finding, viewer: Viewer) -> Finding:
    """``finding`` as ``viewer`` may see it (pure).

    Whole concern seen and every item seen: unchanged. Otherwise the items not seen are dropped and counted
    (``data["withheld"]`` true), ``detail`` and ``fix`` are re-said over the items kept (``listing_detail``,
    ``listing_fix``), and the finding's own data beyond its items is kept only when its whole concern is
    seen. ``name``, ``severity`` and ``ok`` never change.
    """
    whole = sees(viewer, finding.concerns)
    kept = tuple(i for i in finding.items if sees(viewer, i.concerns))
    hidden = len(finding.items) - len(kept)
    if whole and hidden == 0:
        return finding
    item_keys = {i.key for i in finding.items}
    data: dict[str, Any] = {k: v for k, v in finding.data.items() if whole and k not in item_keys}
    for item in kept:
        data.setdefault(item.key, []).append(item.data)
    data["withheld"] = True
    if not finding.items:
        return replace(finding, detail=f"withheld: {_withheld(finding.concerns)}",
                       fix="" if finding.ok else "Ask an administrator to read this finding (GET /api/doctor).",
                       data=data, items=())
    words = [listing_detail(finding.lead, kept)] if kept else []
    if hidden:
        first = next(i.concerns for i in finding.items if i not in kept)
        words.append(f"{'more' if kept else 'its'} items withheld: {_withheld(first)}")
    # Without a ``fix_lead`` a listed finding's ``fix`` names no object (``findings.Finding``), so it is
    # shown to whoever sees one of its items.
    fix = listing_fix(finding.fix_lead, kept) if finding.fix_lead else (finding.fix if whole or kept else "")
    if hidden and not kept and not finding.ok:
        fix = "Ask an administrator to read this finding (GET /api/doctor)."
    return replace(finding, detail="; ".join(words), fix=fix, data=data, items=kept)
