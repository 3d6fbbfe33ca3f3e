"""``GET /api/mail`` against a real node (issue 20): an application lists the mail it sent through
``POST /api/mail`` newest first, each item as ``GET /api/mail/{id}`` shows it, filtered by state, class,
recipient and sealing time, paged by cursor; an administrator lists the organisation's application mail and
nobody else sees another's; a bad filter value is 422 naming it; a page costs the same statements whatever
its size."""

from __future__ import annotations

from datetime import timedelta
from itertools import count
from typing import Any

import pytest

from mailnode.outbound.mail_reads import LIST_STATEMENTS, MailFilter, list_mail
from tests.api.conftest import Cast, h

_KEYS = count()


def _grant(cast: Cast, subject_id: str) -> None:
    r = cast.api.post("/api/access", json={"subject_id": subject_id, "relation": "send.propose",
                                           "object_id": cast.installed.mailbox_id}, headers=cast.admin)
    assert r.status_code == 201, r.text


def _send(cast: Cast, headers: dict[str, str], *, to: tuple[str, ...] = ("ann@remote.test",), cc: tuple[str, ...] = (),
          bcc: tuple[str, ...] = (), mail_class: str = "deferrable") -> str:
    r = cast.api.post("/api/mail", json={"mailbox_id": cast.installed.mailbox_id, "class": mail_class,
                                         "to": list(to), "cc": list(cc), "bcc": list(bcc), "subject": "Receipt",
                                         "text": "Thank you.", "idempotency_key": f"k-{next(_KEYS)}"},
                      headers=headers)
    # The test node's transport writes files: realtime mail is handed over before the answer.
    assert r.status_code == (200 if mail_class == "realtime" else 202), r.text
    return str(r.json()["mail"]["id"])


def _ids(cast: Cast, headers: dict[str, str], **params: Any) -> list[str]:
    r = cast.api.get("/api/mail", params={"limit": 500, **params}, headers=headers)
    assert r.status_code == 200, r.text
    return [m["id"] for m in r.json()["mail"]]


@pytest.fixture
def apps(cast: Cast) -> tuple[dict[str, str], dict[str, str]]:
    """``billing`` (the cast's application) and a second application ``shipping``, both with send.propose."""
    other = cast.api.post("/api/apps", json={"name": "shipping"}, headers=cast.admin)
    assert other.status_code == 201, other.text
    _grant(cast, cast.app_id)
    _grant(cast, other.json()["application"]["id"])
    return cast.app, h(other.json()["token"])


def test_an_application_lists_its_mail_newest_first_each_as_get_shows_it(cast: Cast, apps: Any) -> None:
    billing, _ = apps
    sent = [_send(cast, billing, to=(f"n{i}@remote.test",)) for i in range(3)]
    r = cast.api.get("/api/mail", headers=billing)
    assert r.status_code == 200, r.text
    listed = r.json()["mail"]
    assert [m["id"] for m in listed] == sent[::-1]
    for item in listed:
        assert item == cast.api.get(f"/api/mail/{item['id']}", headers=billing).json()["mail"]
    assert listed[0]["recipients"] == [{"address": "n2@remote.test", "kind": "to", "submission_state": "held",
                                        "delivery_state": None, "suppression_reason": None, "events": []}]
    assert r.json()["next_cursor"] is None


def test_the_cursor_walks_every_mail_once(cast: Cast, apps: Any) -> None:
    billing, _ = apps
    sent = [_send(cast, billing) for _ in range(5)]
    seen: list[str] = []
    pages = []
    params: dict[str, Any] = {"limit": 2}
    for _ in range(len(sent) + 1):  # bounded: a cursor that does not advance would loop forever
        body = cast.api.get("/api/mail", params=params, headers=billing).json()
        pages.append(len(body["mail"]))
        seen += [m["id"] for m in body["mail"]]
        if body["next_cursor"] is None:
            break
        params["cursor"] = body["next_cursor"]
    assert seen == sent[::-1] and pages == [2, 2, 1]


def test_each_caller_lists_only_the_mail_it_may(cast: Cast, apps: Any) -> None:
    billing, shipping = apps
    mine = _send(cast, billing)
    theirs = _send(cast, shipping)
    admins = _send(cast, cast.admin)
    correspondence = cast.api.post("/api/sends", json={"mailbox_id": cast.installed.mailbox_id,
                                                       "to": ["ann@remote.test"], "subject": "Hello",
                                                       "body": "Hi."}, headers=cast.admin)
    assert correspondence.status_code == 201, correspondence.text
    assert _ids(cast, billing) == [mine]
    assert _ids(cast, shipping) == [theirs]
    assert _ids(cast, cast.person) == []  # Bob holds no relation and sent nothing
    # The administrator sees the organisation's application mail, never correspondence.
    assert _ids(cast, cast.admin) == [admins, theirs, mine]
    assert correspondence.json()["send"]["id"] not in _ids(cast, cast.admin)
    assert cast.api.get(f"/api/mail/{theirs}", headers=billing).json()["error"] == "E_NO_SUCH_MAIL"


def test_the_node_s_own_mail_is_not_application_mail(cast: Cast, apps: Any) -> None:
    # A sign-in code is realtime mail sealed under the person it goes to, Auto-Submitted: auto-generated.
    from mailnode.outbound.seal import SealRequest, seal

    node = cast.api.app.state.node
    own = seal(node, org_id=cast.installed.org_id, author_id=cast.installed.user_id, request=SealRequest(
        mailbox_id=cast.installed.mailbox_id, to=["alex@example.test"], subject="Your code", body="123456",
        mail_class="deferrable", system=True, sender_address="support@example.test")).id
    mine = _send(cast, cast.admin)
    assert _ids(cast, cast.admin) == [mine]
    assert own not in _ids(cast, cast.admin)


def test_filters_narrow_the_list(cast: Cast, apps: Any) -> None:
    billing, _ = apps
    clock = cast.api.app.state.node.clock
    start = clock.now()
    plain = _send(cast, billing, to=("Ann@Remote.test",))
    clock.advance(3600)
    copied = _send(cast, billing, to=("bo@remote.test",), cc=("ann@remote.test",))
    clock.advance(3600)
    hidden = _send(cast, billing, to=("cy@remote.test",), bcc=("ANN@remote.test",))
    clock.advance(3600)
    urgent = _send(cast, billing, to=("dee@remote.test",), mail_class="realtime")
    cancelled = cast.api.post(f"/api/sends/{copied}/cancel", headers=billing)
    assert cancelled.status_code == 200, cancelled.text

    assert _ids(cast, billing) == [urgent, hidden, copied, plain]
    assert _ids(cast, billing, state="cancelled") == [copied]
    assert _ids(cast, billing, state="held") == [hidden, plain]
    assert _ids(cast, billing, state="handed_over") == [urgent]
    assert _ids(cast, billing, **{"class": "realtime"}) == [urgent]
    assert _ids(cast, billing, **{"class": "deferrable"}) == [hidden, copied, plain]
    assert _ids(cast, billing, recipient="ann@remote.test") == [hidden, copied, plain]
    assert _ids(cast, billing, recipient="bo@remote.test") == [copied]
    assert _ids(cast, billing, recipient="nobody@remote.test") == []
    one_hour = (start + timedelta(hours=1)).isoformat()
    assert _ids(cast, billing, after=one_hour) == [urgent, hidden, copied]
    assert _ids(cast, billing, before=one_hour) == [plain]
    assert _ids(cast, billing, after=one_hour, before=(start + timedelta(hours=2)).isoformat()) == [copied]
    # A date alone is midnight UTC; a date-time without an offset is UTC; another offset is converted.
    assert _ids(cast, billing, before=start.date().isoformat()) == []
    assert _ids(cast, billing, after=(start + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S")) == [
        urgent, hidden, copied]
    assert _ids(cast, billing, before=(start + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%S+02:00")) == [plain]
    assert _ids(cast, billing, state="held", recipient="ann@remote.test", after=one_hour) == [hidden]


@pytest.mark.parametrize(("params", "field"), [
    ({"state": "weird"}, "query.state"),
    ({"state": "sent"}, "query.state"),
    ({"class": "correspondence"}, "query.class"),
    ({"class": "bulk"}, "query.class"),
    ({"recipient": "not-an-address"}, "query.recipient"),
    ({"recipient": "ann@remote.test\r\nBcc: x@y.test"}, "query.recipient"),
    ({"after": "yesterday"}, "query.after"),
    ({"before": "2026-13-01"}, "query.before"),
    ({"after": "0001-01-01T00:00:00+05:00"}, "query.after"),
    ({"after": "2026-02-01", "before": "2026-02-01"}, "query.before"),
    ({"cursor": "msg_01JDKZ8Q4M6V8R2T0W3X5Y7Z9A"}, "query.cursor"),
    ({"tag": "two words"}, "query.tag"),
    ({"tag": "x" * 65}, "query.tag"),
    ({"metadata": "order_id"}, "query.metadata"),
    ({"metadata": ":42"}, "query.metadata"),
    ({"metadata": "order id:42"}, "query.metadata"),
    ({"metadata": "order_id:4\u00002"}, "query.metadata"),
    ({"unknown": "x"}, "query.unknown"),
])
def test_a_bad_filter_value_is_422_naming_it(cast: Cast, apps: Any, params: dict[str, str], field: str) -> None:
    billing, _ = apps
    r = cast.api.get("/api/mail", params=params, headers=billing)
    body = r.json()
    assert r.status_code == 422 and body["error"] == "E_REQUEST_INVALID", r.text
    assert [p["field"] for p in body["detail"]["problems"]] == [field]


def test_a_page_costs_the_same_statements_whatever_its_size(cast: Cast, apps: Any) -> None:
    billing, _ = apps
    node = cast.api.app.state.node

    def statements(principal_id: str) -> tuple[int, int]:
        with node.read() as conn, node.meter.measure() as m:
            page = list_mail(conn, org_id=cast.installed.org_id, principal_id=principal_id, filters=MailFilter(),
                             limit=50, cursor=None)
        return len(page), m.count

    for _ in range(2):
        _send(cast, billing, to=("a@remote.test", "b@remote.test"))
    few = statements(cast.app_id), statements(cast.installed.user_id)
    for _ in range(10):
        _send(cast, billing, to=("a@remote.test", "b@remote.test", "c@remote.test"))
    many = statements(cast.app_id), statements(cast.installed.user_id)
    assert [n for n, _ in few] == [2, 2] and [n for n, _ in many] == [12, 12]
    assert [c for _, c in few] == [c for _, c in many] == [LIST_STATEMENTS, LIST_STATEMENTS]


def _labelled(cast: Cast, headers: dict[str, str], tags: list[str], metadata: dict[str, str]) -> str:
    r = cast.api.post("/api/mail", json={"from": "support@example.test", "class": "deferrable",
                                         "to": ["ann@remote.test"], "subject": "Receipt", "text": "Thank you.",
                                         "tags": tags, "metadata": metadata, "idempotency_key": f"k-{next(_KEYS)}"},
                      headers=headers)
    assert r.status_code == 202, r.text
    return str(r.json()["mail"]["id"])


def test_the_list_filters_by_tag_and_by_metadata(cast: Cast, apps: Any) -> None:
    billing, shipping = apps
    welcome = _labelled(cast, billing, ["welcome", "campaign:a"], {"order_id": "42", "customer": "ann"})
    invoice = _labelled(cast, billing, ["invoice"], {"order_id": "42"})
    other = _labelled(cast, billing, ["invoice", "campaign:a"], {"order_id": "43"})
    theirs = _labelled(cast, shipping, ["invoice"], {"order_id": "42"})
    assert _ids(cast, billing, tag="invoice") == [other, invoice]
    assert _ids(cast, billing, tag="campaign:a") == [other, welcome]
    assert _ids(cast, billing, tag="Invoice") == []
    assert _ids(cast, billing, metadata="order_id:42") == [invoice, welcome]
    assert _ids(cast, billing, metadata="customer:ann") == [welcome]
    assert _ids(cast, billing, metadata="order_id:4") == []
    assert _ids(cast, billing, tag="invoice", metadata="order_id:42") == [invoice]
    # An administrator lists the organisation's; the filters hold for it too.
    assert _ids(cast, cast.admin, tag="invoice", metadata="order_id:42") == [theirs, invoice]
    listed = cast.api.get("/api/mail", params={"tag": "welcome"}, headers=billing).json()["mail"]
    assert listed[0]["tags"] == ["welcome", "campaign:a"]
    assert listed[0]["metadata"] == {"customer": "ann", "order_id": "42"}
