"""A mailbox's queue through the API (``GET /api/mailboxes/{id}/queue``, ``POST /api/cases/bulk``), fed through
the real ingress, on SQLite and PostgreSQL alike: the views and their counts, what a row shows, keyset paging
newest activity first, who may see which mailbox and snippet, and bulk claim and close with a refusal per case."""

from __future__ import annotations

from typing import Any

from mailnode.ingress import receipts, routing
from mailnode.ingress.materialise import materialise_receipt
from tests.search.conftest import World, mail


def queue(world: World, mailbox_id: str | None = None, headers: dict[str, str] | None = None, **params: Any) -> Any:
    """The queue page's JSON (asserting 200)."""
    r = world.api.get(f"/api/mailboxes/{mailbox_id or world.installed.mailbox_id}/queue", params=params,
                      headers=headers or world.admin)
    assert r.status_code == 200, r.text
    return r.json()["queue"]


def subjects(page: dict[str, Any]) -> list[str]:
    """The rows' subjects, in order."""
    return [r["subject"] for r in page["rows"]]


def case_of(world: World, message_id: str) -> str:
    """The case a delivered message opened."""
    r = world.api.get(f"/api/messages/{message_id}", headers=world.admin)
    return str(r.json()["message"]["case_id"])


def reply(subject: str, n: int, to_n: int, body: str = "more",
          sender: str = "Alice Müller <alice@remote.test>") -> bytes:
    """A reply to the message built by ``mail(subject=..., n=to_n)``."""
    parent = f"<m{to_n}.{abs(hash(subject))}@remote.test>"
    return mail(subject=f"Re: {subject}", body=body, sender=sender, n=n,
                extra=f"In-Reply-To: {parent}\r\nReferences: {parent}\r\n")


def test_views_and_counts_follow_claims_and_closes(world: World) -> None:
    a = world.deliver(mail(subject="Order A", body="where is it", n=1))
    b = world.deliver(mail(subject="Order B", body="broken", sender="bob@remote.test", n=2))
    c = world.deliver(mail(subject="Order C", body="refund", sender="carol@remote.test", n=3))
    page = queue(world)
    assert page["view"] == "unassigned"
    assert page["counts"] == {"unassigned": 3, "mine": 0, "open": 3, "closed": 0, "sent": 0}
    assert subjects(page) == ["Order C", "Order B", "Order A"]
    assert world.api.post(f"/api/cases/{case_of(world, b)}/claim", headers=world.admin).status_code == 200
    assert world.api.post(f"/api/cases/{case_of(world, c)}/claim", headers=world.admin).status_code == 200
    assert world.api.post(f"/api/cases/{case_of(world, c)}/close", headers=world.admin).status_code == 200
    page = queue(world, view="mine")
    assert page["counts"] == {"unassigned": 1, "mine": 1, "open": 2, "closed": 1, "sent": 0}
    assert subjects(page) == ["Order B"]
    assert subjects(queue(world, view="unassigned")) == ["Order A"]
    assert subjects(queue(world, view="open")) == ["Order B", "Order A"]
    assert subjects(queue(world, view="closed")) == ["Order C"]
    assert a  # delivered


def test_a_row_shows_correspondent_snippet_age_holder_and_markers(world: World) -> None:
    first = world.deliver(mail(subject="Parcel", body="Hello,\n\nmy parcel never came.", n=1))
    world.node.clock.advance(120)
    world.deliver(reply("Parcel", 2, 1, body="Any news?\n\nOn Tue, Alice wrote:\n> my parcel never came."))
    world.deliver(mail(subject="Out of office", body="I am away.", sender="Bot <bot@remote.test>", n=3,
                       extra="Auto-Submitted: auto-replied\r\n"))
    world.node.clock.advance(300)
    world.api.post(f"/api/cases/{case_of(world, first)}/claim", headers=world.admin)
    rows = queue(world, view="open")["rows"]
    assert [(r["subject"], r["messages"], r["automated"]) for r in rows] == [
        ("Out of office", 1, "auto_submitted"), ("Re: Parcel", 2, None)]
    parcel = rows[1]
    assert (parcel["correspondent_name"], parcel["correspondent_address"]) == ("Alice Müller", "alice@remote.test")
    assert parcel["snippet"] == "Any news?"  # the quoted original is not repeated
    assert (parcel["age_seconds"], parcel["holder"], parcel["holder_id"]) == (300, "you", world.installed.user_id)
    assert parcel["conversation_id"].startswith("cnv_") and parcel["id"] == case_of(world, first)
    assert (parcel["attachments"], rows[0]["holder"]) == (False, None)


def test_a_case_with_an_attachment_is_marked(world: World) -> None:
    raw = (b"From: alice@remote.test\r\nTo: support@example.test\r\nSubject: Scan\r\nMessage-ID: <scan@remote.test>\r\n"
           b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n--XX\r\n"
           b"Content-Type: text/plain\r\n\r\nSee attached.\r\n--XX\r\nContent-Type: application/pdf\r\n"
           b"Content-Disposition: attachment; filename=scan.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n"
           b"JVBERi0xLjQK\r\n--XX--\r\n")
    world.deliver(raw)
    world.deliver(mail(subject="Plain", body="no files", n=2))
    rows = queue(world)["rows"]
    assert [(r["subject"], r["attachments"]) for r in rows] == [("Plain", False), ("Scan", True)]


def test_pages_are_newest_activity_first_and_a_reply_moves_its_case_up(world: World) -> None:
    for n in range(1, 6):
        world.deliver(mail(subject=f"Topic {n}", body="text", n=n))
    first = queue(world, limit=2)
    assert subjects(first) == ["Topic 5", "Topic 4"]
    second = queue(world, limit=2, cursor=first["next_cursor"])
    assert subjects(second) == ["Topic 3", "Topic 2"]
    third = queue(world, limit=2, cursor=second["next_cursor"])
    assert subjects(third) == ["Topic 1"] and third["next_cursor"] is None
    world.deliver(reply("Topic 2", 9, 2))
    assert subjects(queue(world, limit=3)) == ["Re: Topic 2", "Topic 5", "Topic 4"]
    assert queue(world)["counts"]["open"] == 5  # the reply joined its case
    assert subjects(queue(world)) == ["Re: Topic 2", "Topic 5", "Topic 4", "Topic 3", "Topic 1"]  # listed once


def test_a_bad_view_or_cursor_is_refused(world: World) -> None:
    mbx = world.installed.mailbox_id
    r = world.api.get(f"/api/mailboxes/{mbx}/queue", params={"view": "inbox"}, headers=world.admin)
    assert (r.status_code, r.json()["error"]) == (422, "E_QUEUE_VIEW_UNKNOWN")
    r = world.api.get(f"/api/mailboxes/{mbx}/queue",
                      params={"view": "sent", "cursor": "msg_01J0000000000000000000000A"},
                      headers=world.admin)
    assert (r.status_code, r.json()["error"]) == (422, "E_QUEUE_CURSOR_INVALID")


def test_sent_lists_the_mailboxs_sends_with_their_state_in_words(world: World) -> None:
    parent = world.deliver(mail(subject="Refund", body="money back please", n=1))
    sent = world.api.post("/api/sends", json={"mailbox_id": world.installed.mailbox_id,
                                              "to": ["Alice Müller <alice@remote.test>"],
                                              "subject": "Re: Refund", "body": "Your refund was approved.",
                                              "in_reply_to_message_id": parent}, headers=world.admin)
    assert sent.status_code == 201, sent.text
    page = queue(world, view="sent")
    assert page["counts"]["sent"] == 1
    (row,) = page["rows"]
    assert (row["kind"], row["id"], row["state"], row["correspondent_name"], row["correspondent_address"]) == (
        "send", sent.json()["send"]["id"], "held", "Alice Müller", "alice@remote.test")
    assert row["snippet"] == "Your refund was approved."
    assert row["state_words"].startswith("Sealed and queued: it leaves at its release_at")


def test_who_sees_which_mailbox_and_snippet(world: World) -> None:
    world.deliver(mail(subject="Secret plan", body="the plan", n=1))
    mbx = world.installed.mailbox_id
    _, meta = world.person("meta@example.test", ("mailbox.metadata.read", mbx))
    _, outsider = world.person("out@example.test")
    row = queue(world, headers=meta)["rows"][0]
    assert (row["subject"], row["snippet"], row["snippet_hidden"]) == ("Secret plan", None, "no_content_read")
    assert queue(world, headers=meta)["may_work"] is False
    r = world.api.get(f"/api/mailboxes/{mbx}/queue", headers=outsider)
    assert (r.status_code, r.json()["error"]) == (404, "E_NO_SUCH_MAILBOX")


def test_bulk_claim_reports_each_cases_refusal_and_does_the_rest(world: World) -> None:
    ids = [case_of(world, world.deliver(mail(subject=f"Bulk {n}", body="x", n=n))) for n in range(1, 4)]
    mbx = world.installed.mailbox_id
    olga, olga_h = world.person("olga@example.test", ("send.propose", mbx), ("mailbox.content.read", mbx))
    assert world.api.post(f"/api/cases/{ids[1]}/claim", headers=olga_h).status_code == 200
    r = world.api.post("/api/cases/bulk", json={"action": "claim", "case_ids": ids + ["cas_nonsense"]},
                       headers=world.admin)
    assert r.status_code == 200, r.text
    out = r.json()["outcomes"]
    assert [(o["case_id"], o["ok"], o["error"] and o["error"]["code"]) for o in out] == [
        (ids[0], True, None), (ids[1], False, "E_CASE_HELD"), (ids[2], True, None),
        ("cas_nonsense", False, "E_ID_MALFORMED")]
    assert set(out[1]["error"]) == {"code", "what", "why", "fix"} and olga in out[1]["error"]["what"]
    page = queue(world, view="mine")
    assert page["counts"]["mine"] == 2 and sorted(r["id"] for r in page["rows"]) == sorted([ids[0], ids[2]])
    closed = world.api.post("/api/cases/bulk", json={"action": "close", "case_ids": ids}, headers=world.admin).json()
    assert [(o["ok"], o["error"] and o["error"]["code"]) for o in closed["outcomes"]] == [
        (True, None), (False, "E_NOT_YOUR_CASE"), (True, None)]
    assert queue(world)["counts"] == {"unassigned": 0, "mine": 0, "open": 1, "closed": 2, "sent": 0}


def test_bulk_refuses_none_and_too_many_before_touching_any(world: World) -> None:
    r = world.api.post("/api/cases/bulk", json={"action": "claim", "case_ids": []}, headers=world.admin)
    assert (r.status_code, r.json()["error"]) == (422, "E_QUEUE_BULK_EMPTY")
    case = case_of(world, world.deliver(mail(subject="One", body="x", n=1)))
    many = [case] + [f"cas_{n:026d}" for n in range(60)]
    r = world.api.post("/api/cases/bulk", json={"action": "claim", "case_ids": many}, headers=world.admin)
    assert (r.status_code, r.json()["error"]) == (422, "E_QUEUE_BULK_TOO_MANY")
    assert queue(world)["counts"]["unassigned"] == 1  # the first case was not claimed


def test_search_in_a_mailbox_uses_the_search_filters(world: World) -> None:
    from mailnode.mail.queue import search_mailbox

    other_box = world.mailbox("Sales", "sales@example.test")
    mine = world.deliver(mail(subject="Invoice", body="pay", n=1))
    world.deliver(mail(subject="Invoice", body="pay", n=2), to="sales@example.test")
    world.deliver(mail(subject="Invoice", body="pay", sender="bob@remote.test", n=3))
    with world.node.read() as conn:
        found, _ = search_mailbox(conn, org_id=world.installed.org_id, principal_id=world.installed.user_id,
                                  mailbox_id=world.installed.mailbox_id, q="from:alice invoice")
    assert [r["id"] for r in found] == [mine]
    assert other_box


def test_a_page_costs_the_same_statements_with_few_or_many_conversations(world: World) -> None:
    from mailnode.mail.queue import read_queue
    from mailnode.mail.queue_rules import View

    def statements(view: View) -> int:
        with world.node.read() as conn, world.node.meter.measure() as m:
            read_queue(conn, org_id=world.installed.org_id, principal_id=world.installed.user_id,
                       mailbox_id=world.installed.mailbox_id, view=view, now=world.node.clock.now(), limit=5)
        return m.count

    for n in range(1, 3):
        world.deliver(mail(subject=f"Few {n}", body="x", n=n))
    few = {v: statements(v) for v in View}
    for n in range(3, 13):
        world.deliver(mail(subject=f"Many {n}", body="x", n=n))
    assert {v: statements(v) for v in View} == few
    assert max(few.values()) <= 10


def test_the_queue_lists_mail_in_the_order_it_arrived_whichever_materialised_first(world: World) -> None:
    # Materialisations run concurrently: the later arrival may finish first (the keyboard browser test saw
    # it). The queue is newest arrival first all the same.
    with world.node.read() as conn:
        route = routing.resolve(conn, world.installed.mailbox_address)
    assert route is not None
    envelope = receipts.Envelope(mail_from="sender@remote.test", routes=(route,))
    first = receipts.accept(world.node, mail(subject="Arrived first", body="one", n=1), envelope)[0]
    second = receipts.accept(world.node, mail(subject="Arrived second", body="two", n=2), envelope)[0]
    materialise_receipt(world.node, second)
    materialise_receipt(world.node, first)
    assert subjects(queue(world)) == ["Arrived second", "Arrived first"]

