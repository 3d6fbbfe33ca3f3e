"""The suppression list's pure decisions: which delivery signal suppresses with what reason (a table over the
whole event vocabulary), the seal's state when every recipient is listed, and the CSV import's checks."""

from __future__ import annotations

import pytest

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.outbound.events import DELIVERY_STATE_FOR_EVENT
from mailnode.outbound.seal import seal_state
from mailnode.outbound.suppression import Reason, decide, parse_csv
from mailnode.vocabulary.send_states import SendState

#: (event, bounce_type, attributed) -> the reason it suppresses with, or None. Every event of the vocabulary
#: with every bounce type, attributed or not; ``test_the_table_covers_the_vocabulary`` keeps it whole.
TABLE: dict[tuple[str | None, str | None, bool], Reason | None] = {}
for _event in [*DELIVERY_STATE_FOR_EVENT, None, "opened", "BOUNCED"]:
    for _bounce in ("hard", "soft", None, "permanent"):
        for _attributed in (True, False):
            TABLE[(_event, _bounce, _attributed)] = None
TABLE[("bounced", "hard", True)] = Reason.HARD_BOUNCE
for _bounce in ("hard", "soft", None):
    TABLE[("complained", _bounce, True)] = Reason.COMPLAINT


@pytest.mark.parametrize(("event", "bounce_type", "attributed"), sorted(TABLE, key=repr))
def test_which_signal_suppresses(event: str | None, bounce_type: str | None, attributed: bool) -> None:
    assert decide(event, bounce_type, attributed=attributed) is TABLE[(event, bounce_type, attributed)]


def test_the_table_covers_the_vocabulary() -> None:
    events = {e for e, _, _ in TABLE}
    assert set(DELIVERY_STATE_FOR_EVENT) <= events
    # A soft bounce and a deferral never suppress; nothing unattributed does.
    assert all(TABLE[(e, b, False)] is None for e, b, _ in TABLE)
    assert TABLE[("bounced", "soft", True)] is None and TABLE[("deferred", "soft", True)] is None


@pytest.mark.parametrize(("decided", "recipients", "suppressed", "state"), [
    (SendState.HELD, 2, 2, SendState.SUPPRESSED),
    (SendState.HELD, 2, 1, SendState.HELD),
    (SendState.HELD, 2, 0, SendState.HELD),
    (SendState.AWAITING, 1, 1, SendState.SUPPRESSED),
    (SendState.WITHHELD, 3, 1, SendState.WITHHELD),
    (SendState.HELD, 0, 0, SendState.HELD),
])
def test_the_seal_state(decided: SendState, recipients: int, suppressed: int, state: SendState) -> None:
    assert seal_state(decided, recipients, suppressed) is state


def test_an_import_reads_the_export_columns_and_keeps_first_mentions() -> None:
    rows = parse_csv(b"address,reason,created_at,note\r\nAnn@Example.TEST,hard_bounce,2026-01-01,first\r\n"
                     b"bob@example.test,,,\r\n\r\nann@example.test,complaint,,again\r\n")
    assert [(r.line, r.address, r.reason, r.note) for r in rows] == [
        (2, "ann@example.test", Reason.HARD_BOUNCE, "first"), (3, "bob@example.test", Reason.IMPORT, None)]


@pytest.mark.parametrize(("body", "code", "line"), [
    (b"address,reason\r\nok@example.test,manual\r\nnot an address,manual\r\n", "E_SUPPRESSION_IMPORT_BAD_LINE", 3),
    (b"address,reason\r\nok@example.test,bounced\r\n", "E_SUPPRESSION_IMPORT_BAD_LINE", 2),
    (b"address,note\r\nok@example.test," + b"x" * (budgets.SUPPRESSION_NOTE_MAX_CHARS + 1) + b"\r\n",
     "E_SUPPRESSION_IMPORT_BAD_LINE", 2),
    (b"email,reason\r\nok@example.test,manual\r\n", "E_SUPPRESSION_IMPORT_MALFORMED", None),
    (b"address\r\n\xff\xfe@example.test\r\n", "E_SUPPRESSION_IMPORT_MALFORMED", None),
    (b"", "E_SUPPRESSION_IMPORT_MALFORMED", None),
])
def test_a_bad_import_names_what_is_wrong(body: bytes, code: str, line: int | None) -> None:
    with pytest.raises(MailnodeError) as caught:
        parse_csv(body)
    assert caught.value.code == code
    assert caught.value.detail.get("line") == line


def test_an_import_is_bounded() -> None:
    rows = range(budgets.SUPPRESSION_IMPORT_MAX_ROWS + 1)
    many = b"address\r\n" + b"".join(b"a%d@example.test\r\n" % i for i in rows)
    with pytest.raises(MailnodeError) as caught:
        parse_csv(many)
    assert caught.value.code == "E_SUPPRESSION_IMPORT_TOO_MANY_ROWS"
    with pytest.raises(MailnodeError) as caught:
        parse_csv(b"address\r\n" + b"a" * budgets.SUPPRESSION_IMPORT_MAX_BYTES)
    assert caught.value.code == "E_SUPPRESSION_IMPORT_TOO_LARGE" and caught.value.status == 413
