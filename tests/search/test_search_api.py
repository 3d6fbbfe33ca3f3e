"""``GET /api/search`` through the HTTP API, on SQLite and PostgreSQL alike (``MAILNODE_TEST_DB``): a
message is found by ``from:`` and by a word of its body, a send by its words and state, the filters
combine, pages are newest first, nothing of a mailbox the caller may not read is ever answered, a purged
message leaves the index, and a query the parser cannot read is refused naming the token."""

from __future__ import annotations

from typing import Any

from mailnode.retention import io as retention_io
from mailnode.search import index as search_index
from tests.corpus import corpus
from tests.search.conftest import World, mail

DAY = 86_400


def test_a_message_is_found_by_from_and_by_a_word_in_its_body(world: World) -> None:
    invoice = world.deliver(mail(subject="Invoice INV-2291", body="Hello,\n\nthe invoice is overdue since March."))
    corpus_msg = world.deliver((corpus() / "bounces" / "is-not-bounce-01.eml").read_bytes(),
                               mail_from="shironeko@example.com")
    other = world.deliver(mail(subject="Lunch", body="Shall we meet at noon?", sender="bob@remote.test", n=2))
    assert world.found("from:alice") == [invoice]
    assert world.found("from:alice@remote.test") == [invoice]
    assert world.found('from:"Alice Müller"') == [invoice]
    assert world.found("overdue") == [invoice]
    assert world.found("OVERDUE march") == [invoice]
    assert world.found('"invoice is overdue"') == [invoice]
    assert world.found('"overdue invoice"') == []
    assert world.found("from:kijitora") == [corpus_msg]
    assert world.found("from:shironeko@example.com") == [corpus_msg]
    assert world.found("subject:lunch") == [other]
    assert world.found("subject:overdue") == []
    r = world.search("overdue").json()["results"][0]
    assert r == {"kind": "message", "id": invoice, "mailbox_id": world.installed.mailbox_id,
                 "conversation_id": r["conversation_id"], "case_id": r["case_id"], "subject": "Invoice INV-2291",
                 "from": "Alice Müller <alice@remote.test>", "to": ["support@example.test", "support@example.test"],
                 "snippet": "Hello, the invoice is overdue since March.", "date": r["date"], "attachments": 0,
                 "automated": False, "state": None}
    assert r["conversation_id"].startswith("cnv_") and r["case_id"].startswith("cas_")


def test_a_send_is_found_by_its_words_and_its_state(world: World) -> None:
    parent = world.deliver(mail(subject="Refund please", body="I want my money back."))
    sent = world.api.post("/api/sends", json={"mailbox_id": world.installed.mailbox_id, "to": ["alice@remote.test"],
                                              "subject": "Re: Refund please", "body": "Your refund was approved.",
                                              "in_reply_to_message_id": parent}, headers=world.admin)
    assert sent.status_code == 201, sent.text
    send_id = sent.json()["send"]["id"]
    assert world.found("approved") == [send_id]
    assert world.found("refund") == [send_id, parent]  # newest first: the reply was sealed after the message
    assert world.found("to:alice refund") == [send_id]  # the message was to support@, the reply to alice@
    assert world.found("from:support refund") == [send_id]
    assert world.found("state:held") == [send_id]
    assert world.found("state:handed_over") == []
    assert world.found("state:held refund is:open") == []  # state: is about sends, is:open about messages
    result = world.search("approved").json()["results"][0]
    assert (result["kind"], result["state"], result["from"], result["to"]) == (
        "send", "held", "support@example.test", ["alice@remote.test"])
    assert result["conversation_id"] == world.search("money").json()["results"][0]["conversation_id"]
    world.api.post(f"/api/sends/{send_id}/cancel", headers=world.admin)
    assert world.found("state:cancelled") == [send_id]


def test_application_mail_is_found_by_subject_but_not_by_its_body(world: World) -> None:
    r = world.api.post("/api/mail", json={"mailbox_id": world.installed.mailbox_id, "class": "deferrable",
                                          "to": ["ann@remote.test"], "subject": "Your sign-in link",
                                          "text": "Use code 834211 to sign in.", "idempotency_key": "k1"},
                       headers=world.admin)
    assert r.status_code == 202, r.text
    assert world.found("sign in link") == [r.json()["mail"]["id"]]
    assert world.found("834211") == []


def test_case_filters_read_the_case_as_it_is_now(world: World) -> None:
    a = world.deliver(mail(subject="Order 1", body="parcel missing", n=1))
    b = world.deliver(mail(subject="Order 2", body="parcel broken", sender="bob@remote.test", n=2))
    assert world.found("parcel is:open") == [b, a]
    assert world.found("parcel is:unassigned") == [b, a]
    case_a = world.search("missing").json()["results"][0]["case_id"]
    assert world.api.post(f"/api/cases/{case_a}/claim", headers=world.admin).status_code == 200
    assert world.found("parcel is:mine") == [a]
    assert world.found("parcel is:unassigned") == [b]
    assert world.api.post(f"/api/cases/{case_a}/close", headers=world.admin).status_code == 200
    assert world.found("parcel is:closed") == [a]
    assert world.found("parcel is:open") == [b]
    assert world.found("is:open is:closed") == []


def test_attachment_automated_mailbox_and_date_filters_combine(world: World) -> None:
    sales = world.mailbox("Vertrieb ÜBERSEE", "sales@example.test")
    plain = world.deliver(mail(subject="Quote", body="quote attached below"))
    attached = world.deliver(
        b"From: carol@remote.test\r\nTo: support@example.test\r\nSubject: Quote PDF\r\n"
        b"Message-ID: <att1@remote.test>\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n'
        b"quote attached\r\n--b\r\nContent-Type: application/pdf\r\n"
        b'Content-Disposition: attachment; filename="quote.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
        b"JVBERi0xLjQK\r\n--b--\r\n")
    auto = world.deliver(mail(subject="Out of office", body="quote later", extra="Auto-Submitted: auto-replied\r\n",
                              n=3))
    world.node.clock.advance(3 * DAY)
    to_sales = world.deliver(mail(subject="Quote for sales", body="quote for sales", to="sales@example.test", n=4),
                             to="sales@example.test")
    assert world.found("quote") == [to_sales, auto, attached, plain]
    assert world.found("quote has:attachment") == [attached]
    assert world.found("quote is:automated") == [auto]
    assert world.found('quote mailbox:"vertrieb übersee"') == [to_sales]
    assert world.found(f"quote mailbox:{sales}") == [to_sales]
    assert world.found(f"mailbox:Support mailbox:{sales} has:attachment") == [attached]
    today = world.node.clock.now().date().isoformat()
    assert world.found(f"quote after:{today}") == [to_sales]
    assert world.found(f"quote before:{today}") == [auto, attached, plain]
    r = world.search("quote mailbox:Marketing")
    assert (r.status_code, r.json()["error"], r.json()["detail"]["token"]) == (
        422, "E_SEARCH_MAILBOX_UNKNOWN", "mailbox:Marketing")


def test_nothing_of_a_mailbox_the_caller_may_not_read_is_answered(world: World) -> None:
    sales = world.mailbox("Sales", "sales@example.test")
    support_msg = world.deliver(mail(subject="Secret plan", body="confidential words"))
    sales_msg = world.deliver(mail(subject="Sales plan", body="confidential words", to="sales@example.test", n=2),
                              to="sales@example.test")
    _, nobody = world.person("nobody@example.test")
    _, seller = world.person("seller@example.test", ("mailbox.content.read", sales))
    _, glancer = world.person("glancer@example.test", ("mailbox.metadata.read", world.installed.mailbox_id))
    assert world.found("confidential") == [sales_msg, support_msg]
    assert world.found("confidential", nobody) == []
    assert world.found("confidential", seller) == [sales_msg]
    assert world.found("confidential", glancer) == []
    r = world.search("confidential mailbox:Support", seller)
    assert (r.status_code, r.json()["error"]) == (422, "E_SEARCH_MAILBOX_UNKNOWN")
    r = world.search(f"mailbox:{world.installed.mailbox_id}", seller)
    assert (r.status_code, r.json()["error"]) == (422, "E_SEARCH_MAILBOX_UNKNOWN")
    assert world.api.get("/api/search", params={"q": "confidential"}).status_code == 401


def test_pages_are_newest_first_and_the_cursor_continues(world: World) -> None:
    ids = []
    for n in range(5):
        ids.append(world.deliver(mail(subject=f"Ticket {n}", body="printer jam", n=n)))
        if n != 2:
            world.node.clock.advance(60)  # tickets 2 and 3 share a time: the later indexed comes first
    expected = ids[::-1]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        body = world.search("printer", **params).json()
        seen += [x["id"] for x in body["results"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == expected and pages == 3
    r = world.search("printer", cursor="msg_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert (r.status_code, r.json()["detail"]["problems"][0]["field"]) == (422, "query.cursor")


def test_an_unreadable_query_is_422_naming_the_token(world: World) -> None:
    r = world.search("invoice re:hello")
    body = r.json()
    assert (r.status_code, body["error"], body["detail"]) == (422, "E_SEARCH_OPERATOR_UNKNOWN",
                                                              {"token": "re:hello", "position": 8})
    assert body["why"] and '"re:hello"' in body["fix"]
    r = world.search("before:2026-13-01")
    assert (r.status_code, r.json()["error"], r.json()["detail"]["token"]) == (
        422, "E_SEARCH_DATE_INVALID", "before:2026-13-01")
    r = world.api.get("/api/search", headers=world.admin)
    assert r.status_code == 422 and r.json()["detail"]["problems"][0]["field"] == "query.q"


def test_q_on_a_list_route_is_refused_and_points_to_search(world: World) -> None:
    for url in ("/api/cases", f"/api/mailboxes/{world.installed.mailbox_id}/messages", "/api/sends"):
        r = world.api.get(url, params={"q": "invoice"}, headers=world.admin)
        body = r.json()
        assert (r.status_code, body["error"], body["detail"]["problems"][0]["field"]) == (
            422, "E_REQUEST_INVALID", "query.q"), url
        assert "GET /api/search?q=" in body["detail"]["problems"][0]["problem"], body


def test_a_purged_message_leaves_the_index(world: World) -> None:
    gone = world.deliver(mail(subject="Lab results", body="patient zqxvirus positive"))
    world.node.clock.advance(3 * DAY)
    kept = world.deliver(mail(subject="Lab results again", body="patient zqxvirus negative", n=2))
    assert world.found("zqxvirus") == [kept, gone]
    world.node.clock.advance(5 * DAY)
    report = retention_io.run_pass(world.node, world.node.clock.now()).sweeps[world.installed.org_id]
    assert report.purged == (gone,)
    assert world.found("zqxvirus") == [kept]
    assert world.found("subject:lab") == [kept]
    with world.node.begin() as conn:
        assert not search_index.reindex(conn, gone)  # a later reindex does not bring it back
    assert world.found("subject:lab") == [kept]


def test_a_search_costs_three_statements(world: World) -> None:
    for n in range(3):
        world.deliver(mail(subject=f"Note {n}", body="budget review", n=n))
    node = world.node
    from mailnode.search import run
    from mailnode.search.query import parse_query

    with node.read() as conn, node.meter.measure(keep_sql=True) as m:
        results, _ = run.search(conn, org_id=world.installed.org_id, principal_id=world.installed.user_id,
                                query=parse_query("budget from:alice is:open has:attachment is:automated"
                                                  " after:2020-01-01 before:2100-01-01"), limit=10)
    # The readable mailboxes, then the page; no send on it, so no state read.
    assert results == [] and m.count == 2, m.statements
    with node.read() as conn, node.meter.measure(keep_sql=True) as m:
        results, _ = run.search(conn, org_id=world.installed.org_id, principal_id=world.installed.user_id,
                                query=parse_query("budget mailbox:Support"), limit=10)
    assert len(results) == 3 and m.count == 3, m.statements
