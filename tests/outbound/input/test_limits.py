"""The numbers behind ``budgets.SEND_BODY_MAX_BYTES`` and ``API_REQUEST_MAX_BYTES``, measured: a body at the
limit, in the shapes that cost the most to encode, renders within ``MESSAGE_MAX_BYTES`` and travels to Resend
within ``RESEND_EMAIL_MAX_BYTES``; and the largest legitimate request fits the API's bound."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from mailnode import budgets
from mailnode.outbound.render import OutboundMessage, normalise_body, render
from mailnode.transports.base import Submission
from mailnode.transports.resend import request_body

LIMIT = budgets.SEND_BODY_MAX_BYTES


def _fill(unit: str, prefix: str = "") -> str:
    """``prefix`` then ``unit`` repeated, at most LIMIT UTF-8 bytes in all (within one unit of it)."""
    room = LIMIT - len(prefix.encode("utf-8"))
    return prefix + unit * (room // len(unit.encode("utf-8")))


#: Bodies that cost the most to render in 7 bits. Python's email picks quoted-printable or base64 from the
#: first ten lines only, so ASCII lines then non-ASCII text is quoted-printable at ~3 bytes per byte.
WORST_BODIES = {
    "qp-after-ten-ascii-lines": _fill("é", "ascii\n" * 10),
    "non-ascii-lines": _fill("é\n"),
    "empty-lines": _fill("\n"),
    "lone-crs": _fill("\r"),
    "trailing-spaces": _fill(" \n"),
    "astral": _fill("\U0001f600"),
}


@pytest.mark.parametrize("name", list(WORST_BODIES))
def test_a_body_at_the_limit_renders_within_the_message_limit(name: str) -> None:
    body = WORST_BODIES[name]
    assert len(body.encode("utf-8")) <= LIMIT
    rendered = render(OutboundMessage(from_address="a@example.test", to=("b@example.test",), subject="x" * 998,
                                      date=datetime(2026, 1, 1, tzinfo=UTC), message_id="<snd_1@example.test>",
                                      body=body))
    assert len(rendered) <= budgets.MESSAGE_MAX_BYTES, (name, len(rendered) / LIMIT)


@pytest.mark.parametrize("unit", ["\x01", "\n", '"', "\U0001f600"])
def test_a_body_at_the_limit_fits_resend_as_json(unit: str) -> None:
    """The Resend transport sends the normalised text as JSON (``ensure_ascii=False``): a control character
    costs 6 bytes, the dearest."""
    text = normalise_body(_fill(unit))
    payload = request_body(Submission(manifest_id="snd_1", recipient_id="srp_1", recipient="b@example.test",
                                      envelope_from="bounces@example.test", rendered=b"",
                                      message_id="<snd_1@example.test>", from_header="a@example.test",
                                      to=("b@example.test",), subject="x" * 998, text=text))
    assert len(payload) <= budgets.RESEND_EMAIL_MAX_BYTES


def test_the_largest_legitimate_send_request_fits_the_api_bound() -> None:
    """A client escaping non-ASCII (Python's json default) writes 12 bytes per 4-byte emoji: 3 per body byte."""
    body = {"mailbox_id": "mbx_" + "x" * 26, "to": [f"r{i}@example.test" for i in range(budgets.SEND_RECIPIENTS_MAX)],
            "subject": "\U0001f600" * (budgets.SEND_SUBJECT_MAX_CHARS // 2), "body": _fill("\U0001f600")}
    assert len(json.dumps(body).encode("utf-8")) <= budgets.API_REQUEST_MAX_BYTES
