"""``decide_publication`` as a table: no database, the digests and version numbers decide."""

from __future__ import annotations

import pytest

from mailnode import budgets
from mailnode.butler.lifecycle import StoredVersion, checked, decide_publication
from mailnode.errors import MailnodeError

from .conftest import program

NEW = checked(program("new"), budgets.BUTLER_RUN_POT_STATEMENTS)
OLD = checked(program("old"), budgets.BUTLER_RUN_POT_STATEMENTS)
DRAFT = StoredVersion("btv_D", None, NEW.ast_sha256, NEW.source_sha256)
LIVE_OLD = StoredVersion("btv_L", 3, OLD.ast_sha256, OLD.source_sha256)
LIVE_SAME_PROGRAM = StoredVersion("btv_L", 3, NEW.ast_sha256, "f" * 64)


@pytest.mark.parametrize(("draft", "live", "last", "expected"), [
    (DRAFT, None, 0, (1, None)),
    (DRAFT, LIVE_OLD, 3, (4, "btv_L")),
    # Numbers continue after the highest ever used, not after the live one's.
    (DRAFT, LIVE_OLD, 7, (8, "btv_L")),
    (DRAFT, LIVE_SAME_PROGRAM, 3, "E_BUTLER_UNCHANGED"),
    (StoredVersion("btv_D", None, OLD.ast_sha256, NEW.source_sha256), None, 0, "E_BUTLER_DRAFT_INCOHERENT"),
    (StoredVersion("btv_D", None, NEW.ast_sha256, OLD.source_sha256), None, 0, "E_BUTLER_DRAFT_INCOHERENT"),
])
def test_decide_publication(draft: StoredVersion, live: StoredVersion | None, last: int,
                            expected: tuple[int, str | None] | str) -> None:
    if isinstance(expected, str):
        with pytest.raises(MailnodeError) as raised:
            decide_publication("btl_B", draft, NEW, live, last)
        assert raised.value.code == expected and raised.value.status == 409 and raised.value.fix
        return
    p = decide_publication("btl_B", draft, NEW, live, last)
    assert (p.version, p.superseded_id) == expected and p.draft_id == "btv_D"
    assert p.trigger == {"event": "mail.received", "mailbox": "support@example.test"}
