"""The access matrix as a table (``web.people_matrix.build_matrix``, pure): direct grants and grants through a
team, who holds only their own tuples, the administrator who may not read, and rows for unlisted holders; and
``web.people.collect``, which pages a listing up to its cap and says whether more exist."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mailnode.authz import RELATIONS, Grant
from mailnode.web.people import RELATION_WORDS
from mailnode.web.people_matrix import Column, Matrix, Subject, build_matrix, kind_of

T = datetime(2026, 3, 10, tzinfo=UTC)
ORG = Column("org_1", "organisation", "The organisation")
BOX = Column("mbx_1", "mailbox", "Support")
ANA = Subject("usr_ana", "person", "Ana <ana@example.test>")
BEN = Subject("usr_ben", "person", "ben@example.test")
OPS = Subject("tm_ops", "team", "ops")
APP = Subject("app_crm", "application", "crm")
SUBJECTS = (ANA, BEN, OPS, APP)


def g(gid: str, subject: str, relation: str, obj: str = "mbx_1") -> Grant:
    """A grant of ``relation`` on ``obj`` to ``subject``."""
    return Grant(gid, subject, relation, RELATIONS[relation], obj, T)


def cell(m: Matrix, subject_id: str, column_id: str) -> list[tuple[str, str | None]]:
    """A cell's held relations as ``(relation, team or None)``."""
    row = next(r for r in m.rows if r.subject.id == subject_id)
    i = [c.id for c in m.columns].index(column_id)
    return [(h.relation, h.via_team_label) for h in row.cells[i].held]


def no_read(m: Matrix, subject_id: str) -> bool:
    """Whether the subject's Support cell says it administers without reading."""
    row = next(r for r in m.rows if r.subject.id == subject_id)
    return row.cells[1].administers_without_reading


@pytest.mark.parametrize(("grants", "members", "subject", "column", "expected"), [
    # A direct grant shows on its own row only.
    ([g("rt_1", "usr_ana", "send.propose")], {}, "usr_ana", "mbx_1", [("send.propose", None)]),
    ([g("rt_1", "usr_ana", "send.propose")], {}, "usr_ben", "mbx_1", []),
    # A team's grant shows on the team's row directly and on each member's row through the team.
    ([g("rt_1", "tm_ops", "mailbox.content.read")], {"tm_ops": ["usr_ben"]}, "tm_ops", "mbx_1",
     [("mailbox.content.read", None)]),
    ([g("rt_1", "tm_ops", "mailbox.content.read")], {"tm_ops": ["usr_ben"]}, "usr_ben", "mbx_1",
     [("mailbox.content.read", "ops")]),
    ([g("rt_1", "tm_ops", "mailbox.content.read")], {"tm_ops": ["usr_ben"]}, "usr_ana", "mbx_1", []),
    # Direct first, then through teams, each in the relations' order.
    ([g("rt_2", "tm_ops", "send.propose"), g("rt_1", "usr_ben", "approval.decide"),
      g("rt_3", "usr_ben", "mailbox.metadata.read")], {"tm_ops": ["usr_ben"]}, "usr_ben", "mbx_1",
     [("mailbox.metadata.read", None), ("approval.decide", None), ("send.propose", "ops")]),
    # org.admin sits in the organisation's column, not a mailbox's.
    ([g("rt_1", "usr_ana", "org.admin", "org_1")], {}, "usr_ana", "org_1", [("org.admin", None)]),
    ([g("rt_1", "usr_ana", "org.admin", "org_1")], {}, "usr_ana", "mbx_1", []),
])
def test_a_cell_shows_what_is_held_there_and_how(grants: list[Grant], members: dict[str, list[str]], subject: str,
                                                 column: str, expected: list[tuple[str, str | None]]) -> None:
    assert cell(build_matrix(SUBJECTS, (ORG, BOX), grants, members), subject, column) == expected


@pytest.mark.parametrize(("grants", "members", "subject", "expected"), [
    # An administrator holding no read relation on a mailbox is told they may not read it ...
    ([g("rt_1", "usr_ana", "org.admin", "org_1")], {}, "usr_ana", True),
    # ... also when administering through a team, or holding only relations that read nothing.
    ([g("rt_1", "tm_ops", "org.admin", "org_1")], {"tm_ops": ["usr_ben"]}, "usr_ben", True),
    ([g("rt_1", "usr_ana", "org.admin", "org_1"), g("rt_2", "usr_ana", "send.propose")], {}, "usr_ana", True),
    # Either read relation, directly or through a team, reads it.
    ([g("rt_1", "usr_ana", "org.admin", "org_1"), g("rt_2", "usr_ana", "mailbox.metadata.read")], {}, "usr_ana",
     False),
    ([g("rt_1", "usr_ben", "org.admin", "org_1"), g("rt_2", "tm_ops", "mailbox.content.read")],
     {"tm_ops": ["usr_ben"]}, "usr_ben", False),
    # Someone who administers nothing is not an administrator who cannot read.
    ([], {}, "usr_ana", False),
    ([g("rt_1", "usr_ana", "org.admin", "org_1")], {}, "usr_ben", False),
])
def test_an_administrator_who_may_not_read_a_mailbox_is_said_so(grants: list[Grant], members: dict[str, list[str]],
                                                                subject: str, expected: bool) -> None:
    assert no_read(build_matrix(SUBJECTS, (ORG, BOX), grants, members), subject) is expected


def test_a_team_an_application_or_a_butler_hold_only_their_own_grants() -> None:
    # Membership lists only people, but even a stray member entry for a team or an application expands nothing.
    m = build_matrix(SUBJECTS, (ORG, BOX), [g("rt_1", "tm_ops", "send.propose")],
                     {"tm_ops": ["app_crm", "tm_ops"]})
    assert cell(m, "app_crm", "mbx_1") == [] and cell(m, "tm_ops", "mbx_1") == [("send.propose", None)]


def test_a_holder_missing_from_the_lists_gets_a_row_so_no_grant_is_hidden() -> None:
    m = build_matrix(SUBJECTS, (ORG, BOX), [g("rt_1", "btl_x", "send.propose")], {})
    row = m.rows[-1]
    assert (row.subject.id, row.subject.kind, row.subject.label) == ("btl_x", "butler", "btl_x")
    assert cell(m, "btl_x", "mbx_1") == [("send.propose", None)]


def test_grantable_is_what_the_column_takes_less_what_is_held_directly() -> None:
    m = build_matrix(SUBJECTS, (ORG, BOX), [g("rt_1", "usr_ben", "send.propose"),
                                            g("rt_2", "tm_ops", "mailbox.content.read")], {"tm_ops": ["usr_ben"]})
    ben = next(r for r in m.rows if r.subject.id == "usr_ben")
    assert ben.cells[0].grantable == ("org.admin",)
    # A relation held only through a team may still be granted directly (it then survives leaving the team).
    assert ben.cells[1].grantable == ("mailbox.metadata.read", "mailbox.content.read", "approval.decide")


def test_administrator_is_read_from_the_grants_not_from_the_columns_shown() -> None:
    m = build_matrix(SUBJECTS, (BOX,), [g("rt_1", "tm_ops", "org.admin", "org_1")], {"tm_ops": ["usr_ana"]})
    assert [r.subject.id for r in m.rows if r.is_admin] == ["usr_ana", "tm_ops"]
    assert no_read(build_matrix(SUBJECTS, (ORG, BOX), [g("rt_1", "tm_ops", "org.admin", "org_1")],
                                {"tm_ops": ["usr_ana"]}), "usr_ana")


@pytest.mark.parametrize(("subject_id", "kind"), [("usr_a", "person"), ("tm_a", "team"), ("app_a", "application"),
                                                  ("btl_a", "butler"), ("zzz_a", "other"), ("plain", "other")])
def test_a_subjects_kind_is_read_from_its_prefix(subject_id: str, kind: str) -> None:
    assert kind_of(subject_id) == kind


def test_every_relation_has_words() -> None:
    assert set(RELATION_WORDS) == set(RELATIONS)


@pytest.mark.parametrize(("total", "page", "cap", "shown", "more"), [
    (0, 3, 5, 0, False), (2, 3, 5, 2, False), (3, 3, 5, 3, False), (5, 3, 5, 5, False), (6, 3, 5, 5, True),
    (6, 3, 6, 6, False), (7, 3, 6, 6, True), (100, 3, 5, 5, True),
])
def test_collect_pages_up_to_the_cap_and_says_whether_more_exist(monkeypatch: pytest.MonkeyPatch, total: int,
                                                                  page: int, cap: int, shown: int,
                                                                  more: bool) -> None:
    from mailnode import budgets
    from mailnode.web.people import collect

    monkeypatch.setattr(budgets, "LIST_LIMIT_MAX", page)
    monkeypatch.setattr(budgets, "WEB_PEOPLE_ROWS_MAX", cap)
    ids = [f"usr_{i:03d}" for i in range(total)]

    def fetch(cursor: str | None) -> list[dict[str, str]]:
        after = [i for i in ids if cursor is None or i > cursor]
        return [{"id": i} for i in after[:page]]

    items, truncated = collect(fetch)
    assert ([x["id"] for x in items], truncated) == (ids[:shown], more)
