"""A Butler's effective authority: pinned ceiling ∩ the Butler's live tuples ∩ the sponsor's live tuples.

Seed 003 "The principal is one term of three"; spec/butler.md §7. The ceiling is the version's
``capabilities`` (frozen in the AST); the Butler's tuples are those naming its ``btl_`` id, never
expanded through teams; the sponsor is the version's ``published_by`` (frozen), with the teams that
person belongs to now. A Butler with no tuple can do nothing. Every check is live and costs at most
two statements: the sponsor's subjects (one), then one statement holding the other two terms.

Two shapes, by whether the node names its mailbox or discovers it:

- ``effective_on_mailbox`` (``draft``, ``mail.send.propose``): returns None when allowed, else the
  first failing term as a reason, in order ``capability_not_declared`` (no statement at all),
  ``butler_not_granted``, ``sponsor_lacks_it``;
- ``readable`` (``lookup``, ``case.assign``, ``case.close``): a SQL condition on the row's mailbox
  column, folded into the row read, so a row the intersection does not reach reads as absent
  (``not_readable`` / ``case_not_actionable``): the three reasons collapse there by construction.

The four terms all compare addresses case-insensitively. The pairs ``mailbox.metadata.read`` |
``mailbox.content.read`` are OR'ed within each term (content read implies metadata read).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, exists, false, func, literal, select, union_all
from sqlalchemy.sql.elements import ColumnElement

from mailnode.schema.directory import relationship_tuples, team_members
from mailnode.schema.mail import mailbox_addresses

#: The effect-row reasons this module produces.
CAPABILITY_NOT_DECLARED = "capability_not_declared"
BUTLER_NOT_GRANTED = "butler_not_granted"
SPONSOR_LACKS_IT = "sponsor_lacks_it"

_RESOURCE_PREFIX = "mailbox:"


@dataclass(frozen=True)
class Ceiling:
    """The pinned ceiling: for each declared action, the lower-cased addresses it is declared on."""

    by_action: Mapping[str, frozenset[str]]

    @classmethod
    def from_capabilities(cls, capabilities: Iterable[Mapping[str, Any]]) -> Ceiling:
        """Read ``[{action, resource: "mailbox:<address>"}]``; an entry of another grain grants nothing."""
        out: dict[str, set[str]] = {}
        for cap in capabilities:
            resource = str(cap.get("resource", ""))
            if resource.startswith(_RESOURCE_PREFIX):
                out.setdefault(str(cap.get("action")), set()).add(resource[len(_RESOURCE_PREFIX):].strip().lower())
        return cls({action: frozenset(addrs) for action, addrs in out.items()})

    def to_json(self) -> dict[str, list[str]]:
        """``{action: [addresses]}`` (sorted), for a step's recorded input."""
        return {action: sorted(addrs) for action, addrs in sorted(self.by_action.items())}

    def addresses(self, relations: Sequence[str]) -> frozenset[str]:
        """Every address declared for any of ``relations``."""
        found: set[str] = set()
        for r in relations:
            found |= self.by_action.get(r, frozenset())
        return frozenset(found)


@dataclass(frozen=True)
class Principal:
    """Who acts and who caps it: the organisation, the Butler's ``btl_`` id, the sponsor's ``usr_`` id."""

    org_id: str
    butler_id: str
    sponsor_id: str
    ceiling: Ceiling


def sponsor_subjects(conn: Connection, org_id: str, sponsor_id: str) -> list[str]:
    """The sponsor and every team the sponsor belongs to now (one statement)."""
    teams = conn.execute(select(team_members.c.team_id).where(team_members.c.org_id == org_id,
                                                            team_members.c.user_id == sponsor_id)).scalars().all()
    return [sponsor_id, *sorted(teams)]


def _declared_mailboxes(org_id: str, addresses: frozenset[str]) -> Any:
    return select(mailbox_addresses.c.mailbox_id).where(mailbox_addresses.c.org_id == org_id,
                                                        func.lower(mailbox_addresses.c.address).in_(sorted(addresses)))


def _tuple_exists(org_id: str, subjects: Sequence[str], relations: Sequence[str],
                  mailbox: ColumnElement[Any]) -> ColumnElement[bool]:
    t = relationship_tuples.c
    return exists(select(t.id).where(t.org_id == org_id, t.object_type == "mailbox", t.object_id == mailbox,
                                     t.relation.in_(list(relations)), t.subject_id.in_(list(subjects))))


def effective_on_mailbox(conn: Connection, who: Principal, mailbox_id: str, relation: str) -> str | None:
    """None when all three terms allow ``relation`` on ``mailbox_id``, else the first failing reason.

    At most two statements: none when the ceiling does not declare the action at all; otherwise the
    sponsor's subjects, then one ``UNION ALL`` naming who holds it (``#ceiling`` when a declared
    address belongs to this mailbox, then each holder among the Butler and the sponsor's subjects).
    """
    addresses = who.ceiling.addresses((relation,))
    if not addresses:
        return CAPABILITY_NOT_DECLARED
    subjects = sponsor_subjects(conn, who.org_id, who.sponsor_id)
    t = relationship_tuples.c
    ceiling = select(literal("#ceiling").label("holder")).where(
        exists(_declared_mailboxes(who.org_id, addresses).where(mailbox_addresses.c.mailbox_id == mailbox_id)))
    holders = select(t.subject_id.label("holder")).where(
        t.org_id == who.org_id, t.object_type == "mailbox", t.object_id == mailbox_id, t.relation == relation,
        t.subject_id.in_([who.butler_id, *subjects])).distinct()
    found = set(conn.execute(union_all(ceiling, holders)).scalars().all())
    if "#ceiling" not in found:
        return CAPABILITY_NOT_DECLARED
    if who.butler_id not in found:
        return BUTLER_NOT_GRANTED
    if not found.intersection(subjects):
        return SPONSOR_LACKS_IT
    return None


def readable(who: Principal, subjects: Sequence[str], relations: Sequence[str],
             mailbox: ColumnElement[Any]) -> ColumnElement[bool]:
    """The three terms as one condition on a row's ``mailbox`` column (no statement of its own).

    ``subjects`` comes from ``sponsor_subjects``. An action the ceiling does not declare is ``false``.
    """
    addresses = who.ceiling.addresses(relations)
    if not addresses:
        return false()
    return and_(mailbox.in_(_declared_mailboxes(who.org_id, addresses)),
                _tuple_exists(who.org_id, [who.butler_id], relations, mailbox),
                _tuple_exists(who.org_id, subjects, relations, mailbox))
