"""The access matrix of ``/people/access``, decided in one pure function: rows are the principals, columns the
organisation and its mailboxes, each cell the relations held there, directly or through a team.

``build_matrix`` reads no database: the page reads users, teams, applications, mailboxes and grants through
the services the API calls (``directory.people``, ``directory.applications``, ``mail.mailboxes``,
``authz.list_grants``) and hands them here. The expansion is ``authz``'s own rule: a person holds what they
hold directly or through a team; a team, an application or a Butler holds only its own tuples.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from mailnode.authz import METADATA_READERS, RELATIONS, Grant

SubjectKind = Literal["person", "team", "application", "butler", "other"]

#: The kind of a subject by its id's prefix (``authz._check_subject``'s list); anything else is ``other``.
KIND_OF_PREFIX: dict[str, SubjectKind] = {"usr": "person", "tm": "team", "app": "application", "btl": "butler"}


@dataclass(frozen=True)
class Subject:
    """A row: a principal's id, kind and the words it is shown by."""

    id: str
    kind: SubjectKind
    label: str


@dataclass(frozen=True)
class Column:
    """A column: the organisation (``org.admin``) or one mailbox."""

    id: str
    object_type: Literal["organisation", "mailbox"]
    label: str


@dataclass(frozen=True)
class Held:
    """One relation held in a cell: the grant that gives it and, when through a team, that team."""

    relation: str
    grant_id: str
    via_team_id: str | None = None
    via_team_label: str | None = None

    @property
    def direct(self) -> bool:
        """Whether the row's subject holds the grant itself (only a direct grant is revoked from the row)."""
        return self.via_team_id is None


@dataclass(frozen=True)
class Cell:
    """What a row holds on a column, what may still be granted there directly, and whether the row
    administers the organisation without reading this mailbox (an administrator does not read mail by being
    one)."""

    held: tuple[Held, ...]
    grantable: tuple[str, ...]
    administers_without_reading: bool


@dataclass(frozen=True)
class Row:
    """One subject and its cells, in the columns' order; ``is_admin`` when it holds ``org.admin`` in any way."""

    subject: Subject
    cells: tuple[Cell, ...]
    is_admin: bool


@dataclass(frozen=True)
class Matrix:
    """The whole matrix: its columns and rows."""

    columns: tuple[Column, ...]
    rows: tuple[Row, ...]


def kind_of(subject_id: str) -> SubjectKind:
    """The kind of a subject id by its prefix (pure)."""
    return KIND_OF_PREFIX.get(subject_id.partition("_")[0], "other")


def build_matrix(subjects: Sequence[Subject], columns: Sequence[Column], grants: Iterable[Grant],
                 members: Mapping[str, Iterable[str]]) -> Matrix:
    """The matrix of ``subjects`` x ``columns`` (pure).

    ``grants`` are every tuple of the organisation; ``members`` maps a team id to its members' user ids. A
    subject holding a grant but missing from ``subjects`` (a Butler, say) gets a row of its own labelled by
    its id, so the matrix hides no grant. Cells list direct grants first, then those through teams, each in
    relation order (``authz.RELATIONS``). ``grantable`` lists the relations of the column's object type the
    subject does not hold directly.
    """
    order = {r: i for i, r in enumerate(RELATIONS)}
    team_label = {s.id: s.label for s in subjects if s.kind == "team"}
    teams_of: dict[str, list[str]] = {}
    for team_id, users in members.items():
        for user_id in users:
            teams_of.setdefault(user_id, []).append(team_id)
    by_subject: dict[str, list[Grant]] = {}
    for g in grants:
        by_subject.setdefault(g.subject_id, []).append(g)
    rows_of = list(subjects)
    known = {s.id for s in subjects}
    rows_of += [Subject(sid, kind_of(sid), sid) for sid in sorted(by_subject) if sid not in known]

    def held_on(subject: Subject, column: Column) -> list[Held]:
        direct = [Held(g.relation, g.id) for g in by_subject.get(subject.id, []) if g.object_id == column.id]
        through = []
        if subject.kind == "person":
            for team_id in sorted(teams_of.get(subject.id, []), key=lambda t: (team_label.get(t, t), t)):
                through += [Held(g.relation, g.id, team_id, team_label.get(team_id, team_id))
                            for g in by_subject.get(team_id, []) if g.object_id == column.id]
        return (sorted(direct, key=lambda h: order.get(h.relation, len(order)))
                + sorted(through, key=lambda h: order.get(h.relation, len(order))))

    rows = []
    for subject in rows_of:
        held = [held_on(subject, c) for c in columns]
        acting_as = [subject.id] + (teams_of.get(subject.id, []) if subject.kind == "person" else [])
        is_admin = any(g.relation == "org.admin" for sid in acting_as for g in by_subject.get(sid, []))
        cells = []
        for column, hs in zip(columns, held, strict=True):
            direct = {h.relation for h in hs if h.direct}
            grantable = tuple(r for r, t in RELATIONS.items() if t == column.object_type and r not in direct)
            reads = any(h.relation in METADATA_READERS for h in hs)
            cells.append(Cell(tuple(hs), grantable, is_admin and column.object_type == "mailbox" and not reads))
        rows.append(Row(subject, tuple(cells), is_admin))
    return Matrix(tuple(columns), tuple(rows))
