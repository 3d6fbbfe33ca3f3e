"""The suppression list on a real database with a real smarthost and the real inbound path: a hard bounce and a
complaint fed as reports over SMTP put the address on the list in the event's transaction (once), a soft bounce
does not, provider events do the same, a listed recipient is ``suppressed`` at seal and again at hand-over while
the others go, and neither the volume nor the bounce breaker counts it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from mailnode.governance import breakers
from mailnode.governance.breakers import Breaker
from mailnode.outbound import dispatch, suppression
from mailnode.outbound.provider_events import record_provider_event
from mailnode.outbound.seal import SealRequest, seal
from mailnode.outbound.webhooks import parse_event
from mailnode.schema.outbound import send_recipients
from mailnode.schema.outbound_suppression import suppressions
from tests.outbound.db.conftest import deliver
from tests.outbound.db.test_pipeline import dsn

H = lambda token: {"Authorization": f"Bearer {token}"}


def arf(complainant: str, original_message_id: str, to: str) -> bytes:
    """A minimal RFC 5965 feedback report (a complaint) about one of this node's messages."""
    boundary = "arf-boundary-1"
    return (
        f"From: fbl@isp.test\r\nTo: {to}\r\nSubject: Complaint\r\n"
        f"Message-ID: <arf-{abs(hash(complainant))}@isp.test>\r\nMIME-Version: 1.0\r\n"
        f"Content-Type: multipart/report; report-type=feedback-report; boundary=\"{boundary}\"\r\n\r\n"
        f"--{boundary}\r\nContent-Type: text/plain\r\n\r\nA recipient marked this message as spam.\r\n"
        f"--{boundary}\r\nContent-Type: message/feedback-report\r\n\r\n"
        f"Feedback-Type: abuse\r\nUser-Agent: isp-fbl/1.0\r\nVersion: 1\r\nOriginal-Rcpt-To: {complainant}\r\n\r\n"
        f"--{boundary}\r\nContent-Type: text/rfc822-headers\r\n\r\n"
        f"From: support@example.test\r\nTo: {complainant}\r\nSubject: Hello\r\n"
        f"Message-ID: <{original_message_id}>\r\n\r\n"
        f"--{boundary}--\r\n"
    ).encode("ascii")


def _send(node: Any, installed: Any, *to: str) -> str:
    sealed = seal(node, org_id=installed.org_id, author_id=installed.user_id,
                  request=SealRequest(mailbox_id=installed.mailbox_id, to=list(to), subject="Hello", body="Hi"))
    return sealed.id


def _handed_over(node: Any, installed: Any, sink: Any, *to: str) -> tuple[str, dict[str, str]]:
    """A send to ``to`` handed over to the sink; ``(send id, {address: recipient id})``."""
    send_id = _send(node, installed, *to)
    assert [r.state for r in dispatch.sweep(node, transport=sink.transport()).results] == ["handed_over"]
    with node.read() as conn:
        rows = conn.execute(select(send_recipients.c.address, send_recipients.c.id)
                            .where(send_recipients.c.manifest_id == send_id)).all()
    return send_id, {r.address: r.id for r in rows}


def _listed(node: Any, org_id: str) -> dict[str, tuple[str, str | None, str | None]]:
    with node.read() as conn:
        rows = conn.execute(select(suppressions).where(suppressions.c.org_id == org_id)).all()
    return {r.address: (r.reason, r.recipient_id, r.event_id) for r in rows}


def _recipients(api: Any, installed: Any, send_id: str) -> dict[str, tuple[str, str | None]]:
    got = api.get(f"/api/sends/{send_id}", headers=H(installed.token)).json()["send"]
    return {r["address"]: (r["submission_state"], r["suppression_reason"]) for r in got["recipients"]}


def test_reports_over_smtp_suppress_hard_bounces_and_complaints_once_and_never_soft_bounces(
        api: Any, node: Any, installed: Any, listener: Any, sink: Any, hold_zero: None) -> None:
    send_id, ids = _handed_over(node, installed, sink, "Gone@Remote.test", "angry@remote.test", "full@remote.test")
    verp = {a: f"bounces+{i.lower()}@example.test" for a, i in ids.items()}
    deliver(listener, dsn("gone@remote.test", "x@elsewhere.test", verp["Gone@remote.test"]), "",
            [verp["Gone@remote.test"]])
    deliver(listener, dsn("full@remote.test", "x@elsewhere.test", verp["full@remote.test"], status="4.2.2"), "",
            [verp["full@remote.test"]])
    from mailnode.schema.outbound import send_manifests

    with node.read() as conn:
        rfc_id = conn.execute(select(send_manifests.c.rfc_message_id)
                              .where(send_manifests.c.id == send_id)).scalar_one()
    deliver(listener, arf("angry@remote.test", rfc_id, "support@example.test"), "", ["support@example.test"])
    listed = _listed(node, installed.org_id)
    assert {a: r for a, (r, _, _) in listed.items()} == {"gone@remote.test": "hard_bounce",
                                                         "angry@remote.test": "complaint"}
    assert listed["gone@remote.test"][1] == ids["Gone@remote.test"] and listed["gone@remote.test"][2]
    first = listed["gone@remote.test"]

    # A second hard bounce (another report) keeps the first row.
    deliver(listener, dsn("gone@remote.test", rfc_id, "support@example.test", status="5.1.2"), "",
            ["support@example.test"])
    assert _listed(node, installed.org_id)["gone@remote.test"] == first

    # The next send to them and to someone else: the listed two are suppressed at seal with their reasons.
    node.clock.advance(1)
    sink.handler.received.clear()
    nxt = _send(node, installed, "GONE@remote.test", "angry@remote.test", "full@remote.test", "new@remote.test")
    assert _recipients(api, installed, nxt) == {
        "GONE@remote.test": ("suppressed", "hard_bounce"), "angry@remote.test": ("suppressed", "complaint"),
        "full@remote.test": ("held", None), "new@remote.test": ("held", None)}
    assert [r.state for r in dispatch.sweep(node, transport=sink.transport()).results] == ["handed_over"]
    assert sorted(t.rcpt_tos[0] for t in sink.handler.received) == ["full@remote.test", "new@remote.test"]
    assert _recipients(api, installed, nxt)["GONE@remote.test"] == ("suppressed", "hard_bounce")


def test_provider_events_suppress_a_permanent_bounce_and_a_complaint_but_not_a_transient_bounce(
        node: Any, installed: Any, sink: Any, hold_zero: None) -> None:
    _, ids = _handed_over(node, installed, sink, "a@remote.test", "b@remote.test", "c@remote.test")
    with node.begin() as conn:
        for address, rid in ids.items():
            conn.execute(send_recipients.update().where(send_recipients.c.id == rid)
                         .values(provider_message_id=f"em_{address[0]}"))
    events = [("evt_1", "email.bounced", "a", {"bounce": {"type": "Permanent"}}),
              ("evt_2", "email.bounced", "b", {"bounce": {"type": "Transient"}}),
              ("evt_3", "email.complained", "c", {})]
    with node.begin() as conn:
        for event_id, kind, who, extra in events:
            payload = {"type": kind, "created_at": "2026-12-01T10:00:00Z",
                       "data": {"email_id": f"em_{who}", "to": [f"{who}@remote.test"], **extra}}
            assert record_provider_event(conn, parse_event(event_id, payload), node.clock.now())["attributed"]
        # The same event delivered again adds nothing and changes nothing.
        again = {"type": "email.bounced", "data": {"email_id": "em_a", "to": ["a@remote.test"]}}
        assert record_provider_event(conn, parse_event("evt_1", again), node.clock.now())["duplicate"]
    assert {a: r for a, (r, _, _) in _listed(node, installed.org_id).items()} == {
        "a@remote.test": "hard_bounce", "c@remote.test": "complaint"}


def test_an_address_listed_after_the_seal_is_suppressed_at_hand_over(
        api: Any, node: Any, installed: Any, sink: Any, hold_zero: None) -> None:
    only = _send(node, installed, "late@remote.test")
    two = _send(node, installed, "late@remote.test", "fine@remote.test")
    assert _recipients(api, installed, two)["late@remote.test"] == ("held", None)
    r = api.post("/api/suppressions", json={"address": "Late@Remote.TEST"}, headers=H(installed.token))
    assert r.status_code == 201, r.text
    states = {x.manifest_id: x.state for x in dispatch.sweep(node, transport=sink.transport()).results}
    assert states == {only: "suppressed", two: "handed_over"}
    assert [t.rcpt_tos for t in sink.handler.received] == [["fine@remote.test"]]
    assert _recipients(api, installed, two) == {"late@remote.test": ("suppressed", "manual"),
                                                "fine@remote.test": ("handed_over", None)}
    mail = api.get(f"/api/sends/{only}", headers=H(installed.token)).json()["send"]
    assert mail["state"] == "suppressed" and mail["recipients"][0]["suppression_reason"] == "manual"


def test_a_suppressed_recipient_counts_toward_no_breaker(
        node: Any, installed: Any, sink: Any, hold_zero: None) -> None:
    with node.begin() as conn:
        suppression.add(conn, org_id=installed.org_id, address_key="gone@remote.test",
                        reason=suppression.Reason.HARD_BOUNCE, at=node.clock.now())
    _handed_over(node, installed, sink, "gone@remote.test", "here@remote.test")
    everyone = _send(node, installed, "gone@remote.test")
    with node.read() as conn:
        state = breakers.evaluate(conn, org_id=installed.org_id, now=node.clock.now(),
                                  delivery_signals=breakers.delivery_signals_of("smtp"))
        rows = conn.execute(select(send_recipients.c.submission_state)
                            .where(send_recipients.c.manifest_id == everyone)).scalars().all()
    # One hand-over in all: the volume breaker's count and the bounce rate's observations (basis handed_over).
    assert state.reading(Breaker.VOLUME).observed == 1
    assert state.reading(Breaker.BOUNCE_RATE).observations == 1
    assert state.reading(Breaker.BOUNCE_RATE).observed == 0
    assert rows == ["suppressed"]
