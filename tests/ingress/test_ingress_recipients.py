"""Which envelope recipients are the same address (RFC 5321 §2.4), as a table."""

from __future__ import annotations

import pytest

from mailnode.ingress.receipts import distinct_routes, recipient_key
from mailnode.ingress.routing import Route


@pytest.mark.parametrize(("one", "other", "same"), [
    ("a@example.test", "a@example.test", True),
    ("a@example.test", "a@EXAMPLE.TEST", True),  # domains compare without case
    ("<a@example.test>", "a@example.test", True),  # brackets are not part of the address
    (" a@example.test ", "a@example.test", True),
    ("a@example.test", "A@example.test", False),  # the local part is as written (case-sensitive)
    ("a@example.test", "b@example.test", False),
    ("a@example.test", "a@example.org", False),
    ('"a@b"@example.test', '"a@b"@EXAMPLE.test', True),  # the last @ splits local part from domain
])
def test_recipient_key_compares_addresses(one: str, other: str, same: bool) -> None:
    assert (recipient_key(one) == recipient_key(other)) is same


def test_distinct_routes_keeps_the_first_of_each_address_in_order() -> None:
    a = Route(org_id="o", mailbox_id="m1", address="a@example.test")
    a_upper = Route(org_id="o", mailbox_id="m1", address="a@EXAMPLE.test")
    b = Route(org_id="o", mailbox_id="m2", address="b@example.test")
    assert distinct_routes((a, b, a_upper, a, b)) == (a, b)
