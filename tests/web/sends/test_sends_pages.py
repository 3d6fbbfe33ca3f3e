"""The Sends pages over HTTP (``web.sends``): the list's filters (as a table, the same as ``GET /api/sends``),
a send's timeline (sealed, each gate, hand-over, the remote server's words in a DSN), the raw submitted
message, the actions with their refusals in four parts, and who may see and do what."""

from __future__ import annotations

import html
import re
from types import SimpleNamespace
from typing import Any

import pytest

from mailnode.authz import grant_unchecked
from mailnode.ids import new_id
from mailnode.outbound import dispatch
from mailnode.outbound.seal import SealRequest, seal
from mailnode.transports.base import Submission, SubmitOutcome, TransportCapabilities
from mailnode.web.send_timeline import Step, timeline
from mailnode.web.sends import send_context
from tests.outbound.db.conftest import deliver
from tests.outbound.db.test_pipeline import dsn
from tests.search.conftest import World
from tests.web.conftest import csrf_of, sign_in


def _send(world: World, subject: str, to: list[str], mailbox_id: str | None = None, **extra: Any) -> str:
    r = world.api.post("/api/sends", json={"mailbox_id": mailbox_id or world.installed.mailbox_id, "to": to,
                                           "subject": subject, "body": f"Body of {subject}.", **extra},
                       headers=world.admin)
    assert r.status_code == 201, r.text
    return str(r.json()["send"]["id"])


def _subjects(page: str) -> list[str]:
    return [html.unescape(s) for s in re.findall(r'<a href="/sends/snd_[^"]+">([^<]*)</a>', page)]


def _butler_send(world: World, subject: str, to: str) -> str:
    node = world.node
    butler = new_id("btl")
    with node.begin() as conn:
        grant_unchecked(conn, org_id=world.installed.org_id, at=node.clock.now(), subject_id=butler,
                        relation="send.propose", object_id=world.installed.mailbox_id, actor_id=None)
    return seal(node, org_id=world.installed.org_id, author_id=butler, request=SealRequest(
        mailbox_id=world.installed.mailbox_id, to=[to], subject=subject, body="Hi")).id


#: (filters, subjects the list shows, newest first). Dates: the first three were sealed on the frozen
#: clock's day, "Other box" and the Butler's two days later.
FILTERS: list[tuple[dict[str, str], list[str]]] = [
    ({}, ["By a Butler", "Other box", "Cancelled one", "To bob", "To ann"]),
    ({"state": "cancelled"}, ["Cancelled one"]),
    ({"state": "awaiting"}, ["By a Butler"]),
    ({"mailbox": "OTHER"}, ["Other box"]),
    ({"author_kind": "butler"}, ["By a Butler"]),
    ({"author_kind": "person"}, ["Other box", "Cancelled one", "To bob", "To ann"]),
    ({"author_kind": "application"}, []),
    ({"class": "correspondence"}, ["By a Butler", "Other box", "Cancelled one", "To bob", "To ann"]),
    ({"class": "realtime"}, []),
    ({"recipient": "BOB@remote.test"}, ["To bob"]),
    ({"recipient": "ann@remote.test"}, ["Cancelled one", "To ann"]),
    ({"after": "LATER"}, ["By a Butler", "Other box"]),
    ({"before": "TODAY"}, ["Cancelled one", "To bob", "To ann"]),
    ({"after": "TODAY", "before": "TODAY", "recipient": "ann@remote.test"}, ["Cancelled one", "To ann"]),
    ({"state": "held", "author_kind": "person", "recipient": "bob@remote.test"}, ["To bob"]),
]


def test_the_list_filters_as_the_api_does_by_state_mailbox_author_class_recipient_and_date(world: World) -> None:
    node = world.node
    today = node.clock.now().date().isoformat()
    _send(world, "To ann", ["ann@remote.test"])
    _send(world, "To bob", ["bob@remote.test"])
    cancelled = _send(world, "Cancelled one", ["Ann@Remote.test"])
    assert world.api.post(f"/api/sends/{cancelled}/cancel", headers=world.admin).status_code == 200
    node.clock.advance(2 * 86400)
    later = node.clock.now().date().isoformat()
    other = world.mailbox("Billing", "billing@example.test")
    g = world.api.post("/api/access", json={"subject_id": world.installed.user_id, "relation": "send.propose",
                                            "object_id": other}, headers=world.admin)
    assert g.status_code == 201, g.text
    _send(world, "Other box", ["carol@remote.test"], mailbox_id=other)
    _butler_send(world, "By a Butler", "dan@remote.test")
    sign_in(world.api, world.installed.token)
    for filters, expected in FILTERS:
        params = {k: {"OTHER": other, "TODAY": today, "LATER": later}.get(v, v) for k, v in filters.items()}
        page = world.api.get("/sends", params=params)
        assert page.status_code == 200, (filters, page.text)
        assert _subjects(page.text) == expected, filters
        # The API answers the same sends for the same filters (the page's "until" day includes the day).
        api_params = {("mailbox_id" if k == "mailbox" else k): v for k, v in params.items()}
        if "before" in api_params:
            api_params["before"] = today + "T23:59:59.999999+00:00"
        listed = world.api.get("/api/sends", params=api_params, headers=world.admin)
        assert listed.status_code == 200, (filters, listed.text)
        assert [s["subject"] for s in listed.json()["sends"]] == expected, filters
    page = world.api.get("/sends").text
    assert "butler" in page and "Billing" in page and "correspondence" in page
    assert "You see each send's fields here; its body only" in page


@pytest.mark.parametrize(("params", "code", "field"), [
    ({"state": "sent"}, "E_STATE_UNKNOWN", None),
    ({"author_kind": "robot"}, "E_REQUEST_INVALID", "author_kind"),
    ({"class": "bulk"}, "E_REQUEST_INVALID", "class"),
    ({"recipient": "not an address"}, "E_REQUEST_INVALID", "recipient"),
    ({"after": "2026-13-01"}, "E_REQUEST_INVALID", "after"),
    ({"after": "2026-02-02", "before": "2026-02-01"}, "E_REQUEST_INVALID", "before"),
    ({"mailbox": "usr_nope"}, "E_REQUEST_INVALID", "mailbox"),
])
def test_a_bad_filter_is_the_apis_refusal_above_the_form(world: World, params: dict[str, str], code: str,
                                                         field: str | None) -> None:
    sign_in(world.api, world.installed.token)
    page = world.api.get("/sends", params=params)
    assert page.status_code == 422
    assert f'<dd id="refusal-code"><code>{code}</code></dd>' in page.text
    assert 'id="send-filters"' in page.text and 'id="sends-table"' not in page.text
    if field:
        assert f"query.{field}" in html.unescape(page.text)


def test_the_list_pages_by_the_budgets_page_size(world: World, monkeypatch: Any) -> None:
    from mailnode import budgets
    monkeypatch.setattr(budgets, "WEB_SENDS_PAGE_SIZE", 2)
    for i in range(3):
        _send(world, f"Send {i}", ["ann@remote.test"])
    sign_in(world.api, world.installed.token)
    first = world.api.get("/sends", params={"recipient": "ann@remote.test"})
    assert _subjects(first.text) == ["Send 2", "Send 1"]
    older = html.unescape(re.search(r'href="([^"]+)" id="older"', first.text).group(1))  # type: ignore[union-attr]
    assert "recipient=ann%40remote.test" in older
    second = world.api.get(older)
    assert _subjects(second.text) == ["Send 0"] and 'id="older"' not in second.text and 'id="newest"' in second.text


def test_the_timeline_shows_seal_gate_release_hand_over_and_the_remote_servers_words(
        world: World, listener: Any, sink: Any, hold_zero: None) -> None:
    node = world.node
    send_id = _send(world, "Your order", ["ann@remote.test", "bob@remote.test"])
    sign_in(world.api, world.installed.token)
    held = world.api.get(f"/sends/{send_id}").text
    assert "Sealed: held" in held and 'id="cancel"' in held and "Open the raw submitted message" in held
    dispatch.sweep(node, transport=sink.transport())
    got = world.api.get(f"/api/sends/{send_id}", headers=world.admin).json()["send"]
    ann = next(r for r in got["recipients"] if r["address"] == "ann@remote.test")
    verp = f"bounces+{ann['id'].lower()}@example.test"
    deliver(listener, dsn("ann@remote.test", "x@elsewhere.test", verp), "", [verp])
    page = world.api.get(f"/sends/{send_id}").text
    timeline_html = html.unescape(page.split('id="timeline"')[1].split("</ol>")[0])
    assert timeline_html.count("handed_over to the transport (to)") == 2
    assert "ann@remote.test" in timeline_html and "bob@remote.test" in timeline_html
    assert "bounced" in timeline_html and "hard bounce" in timeline_html
    assert "the remote server said:" in timeline_html and "550 5.1.1 user unknown" in timeline_html
    assert timeline_html.index("Sealed") < timeline_html.index("handed_over") < timeline_html.index("bounced")
    assert "not observed" in page  # bob: no delivery event, no reassuring "delivered"
    assert 'id="no-actions"' in page and "acceptance_observed" in page
    # The Butler's send waits at its gate, with the reason in words.
    butler_send = _butler_send(world, "By a Butler", "dan@remote.test")
    page = html.unescape(world.api.get(f"/sends/{butler_send}").text)
    assert "Sealed: awaiting (butler_release_required)" in page and "Waited on the" in page
    assert "Butler btl_" in page


def test_the_timeline_reads_a_fixed_number_of_statements(world: World, listener: Any, sink: Any,
                                                         hold_zero: None) -> None:
    node = world.node
    small = _send(world, "One", ["ann@remote.test"])
    big = _send(world, "Many", [f"r{i}@remote.test" for i in range(6)], cc=["cc@remote.test"])
    dispatch.sweep(node, transport=sink.transport())
    got = world.api.get(f"/api/sends/{big}", headers=world.admin).json()["send"]
    for r in got["recipients"][:3]:
        verp = f"bounces+{r['id'].lower()}@example.test"
        deliver(listener, dsn(r["address"], "x@elsewhere.test", verp), "", [verp])
    person = sign_in(world.api, world.installed.token)
    assert person.status_code == 200
    # send_context reads only the person's principal and the app's node.
    who = SimpleNamespace(principal=SimpleNamespace(org_id=world.installed.org_id,
                                                    principal_id=world.installed.user_id))
    request = SimpleNamespace(app=world.api.app)
    counts = []
    for send_id in (small, big):
        with node.meter.measure() as m:
            ctx = send_context(request, who, send_id)  # type: ignore[arg-type]
        counts.append(m.count)
        assert ctx["steps"]
    assert counts[0] == counts[1], counts


def test_the_raw_message_opens_for_body_readers_and_is_refused_in_words_to_others(world: World) -> None:
    send_id = _send(world, "Raw please", ["ann@remote.test"])
    sign_in(world.api, world.installed.token)
    raw = world.api.get(f"/sends/{send_id}/raw")
    assert raw.status_code == 200 and raw.headers["content-type"].startswith("text/plain")
    assert "Subject: Raw please" in raw.text and "Body of Raw please." in raw.text
    assert world.api.get(f"/api/sends/{send_id}/raw", headers=world.admin).text == raw.text
    _, meta = world.person("meta@example.test", ("mailbox.metadata.read", world.installed.mailbox_id))
    sign_in(world.api, meta["Authorization"].removeprefix("Bearer "))
    page = world.api.get(f"/sends/{send_id}")
    assert page.status_code == 200 and "Not shown to you: you see this send's fields, not its body." in page.text
    assert 'id="raw-link"' not in page.text
    refused = world.api.get(f"/sends/{send_id}/raw")
    assert refused.status_code == 403 and "E_SEND_RAW_NOT_VISIBLE" in refused.text
    assert world.api.get(f"/api/sends/{send_id}/raw", headers=meta).status_code == 403
    _, stranger = world.person("stranger@example.test")
    sign_in(world.api, stranger["Authorization"].removeprefix("Bearer "))
    assert world.api.get(f"/sends/{send_id}/raw").status_code == 404
    gone = world.api.get(f"/sends/{send_id}")
    assert gone.status_code == 404 and "E_NO_SUCH_SEND" in gone.text
    assert _subjects(world.api.get("/sends").text) == []


class Raising:
    """A transport with a defect: the outcome is unknown, so only a resend is offered."""

    capabilities = TransportCapabilities("raising", 1, None, "none", "authored")

    async def submit(self, request: Submission) -> SubmitOutcome:
        raise RuntimeError("socket exploded")

    async def aclose(self) -> None:
        return None


def test_actions_show_the_apis_offer_and_refusals_in_four_parts(world: World, hold_zero: None) -> None:
    node = world.node
    sign_in(world.api, world.installed.token)
    # Cancel, then cancel again from the stale page: the refusal in words, with its status.
    held = _send(world, "Stop me", ["ann@remote.test"])
    token = csrf_of(world.api.get(f"/sends/{held}").text)
    done = world.api.post(f"/sends/{held}/cancel", data={"csrf_token": token})
    assert "Cancelled" in done.text and 'id="cancel"' not in done.text
    again = world.api.post(f"/sends/{held}/cancel", data={"csrf_token": token})
    assert again.status_code == 409
    assert '<dd id="refusal-code"><code>E_SEND_NOT_STOPPABLE</code></dd>' in again.text
    assert 'id="timeline"' in again.text  # the page, not a bare error
    # Outcome unknown: the API offers resend-may-duplicate; the page shows it and refuses without the risk.
    unknown = _send(world, "Maybe left", ["ann@remote.test"])
    dispatch.sweep(node, transport=Raising())
    page = world.api.get(f"/sends/{unknown}").text
    assert "<code>resend-may-duplicate</code> (<code>duplicate_possible</code>)" in page
    assert 'id="resend-form"' in page and 'id="retry"' not in page
    r = world.api.post(f"/sends/{unknown}/retry", data={"csrf_token": token, "mode": "resend-may-duplicate",
                                                        "reason": "customer asked"})
    assert r.status_code == 422 and "E_DUPLICATE_RISK_NOT_ACCEPTED" in r.text
    r = world.api.post(f"/sends/{unknown}/retry", data={"csrf_token": token, "mode": "retry-effect"})
    assert r.status_code == 409 and "E_RETRY_NOT_PROVEN" in r.text
    r = world.api.post(f"/sends/{unknown}/retry", data={"csrf_token": token, "mode": "resend-may-duplicate",
                                                        "reason": "customer asked", "accept_duplicate_risk": "yes"},
                       follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] != f"/sends/{unknown}"
    copy = html.unescape(world.api.get(r.headers["location"]).text)
    assert f'href="/sends/{unknown}"' in copy and "Sealed as a resend (resend-may-duplicate)" in copy
    assert "customer asked" in copy
    # A POST without the CSRF token changes nothing.
    held2 = _send(world, "Keep me", ["ann@remote.test"])
    assert world.api.post(f"/sends/{held2}/cancel", data={}).status_code in (400, 403, 422)
    assert world.api.get(f"/api/sends/{held2}", headers=world.admin).json()["send"]["state"] == "held"


def test_release_hold_and_retry_effect_go_through_the_services(world: World, hold_zero: None) -> None:
    from mailnode.transports.base import SubmitState

    class Busy:
        capabilities = TransportCapabilities("busy", 1, None, "none", "authored")

        async def submit(self, request: Submission) -> SubmitOutcome:
            return SubmitOutcome(state=SubmitState.THROTTLED, error_code=421, detail="421 try later")

        async def aclose(self) -> None:
            return None

    sign_in(world.api, world.installed.token)
    send_id = _send(world, "Busy", ["ann@remote.test"])
    dispatch.sweep(world.node, transport=Busy())
    page = world.api.get(f"/sends/{send_id}").text
    assert "<code>retry-effect</code> (<code>throttled</code>)" in page and 'id="retry"' in page
    r = world.api.post(f"/sends/{send_id}/retry", data={"csrf_token": csrf_of(page), "mode": "retry-effect"})
    assert r.status_code == 200 and "Retried (retry-effect)" in r.text
    assert world.api.get(f"/api/sends/{send_id}", headers=world.admin).json()["send"]["state"] == "held"
    # release-hold on a send no policy holds: the service's refusal, in words.
    r = world.api.post(f"/sends/{send_id}/release-hold", data={"csrf_token": csrf_of(page)})
    assert r.status_code == 409 and "E_SEND_NOT_ON_POLICY_HOLD" in r.text


def test_a_reader_sees_the_send_read_only_and_acting_is_the_apis_refusal(world: World) -> None:
    send_id = _send(world, "Look only", ["ann@remote.test"])
    _, meta = world.person("reader@example.test", ("mailbox.content.read", world.installed.mailbox_id))
    sign_in(world.api, meta["Authorization"].removeprefix("Bearer "))
    assert _subjects(world.api.get("/sends").text) == ["Look only"]
    page = world.api.get(f"/sends/{send_id}")
    assert page.status_code == 200 and 'id="read-only"' in page.text and 'id="cancel"' not in page.text
    assert 'id="raw-link"' in page.text  # content readers read the body
    r = world.api.post(f"/sends/{send_id}/cancel", data={"csrf_token": csrf_of(page.text)})
    assert r.status_code == 404 and "E_NO_SUCH_SEND" in r.text
    assert world.api.get(f"/api/sends/{send_id}", headers=world.admin).json()["send"]["state"] == "held"


def test_the_timeline_is_ordered_and_invents_nothing() -> None:
    send = {"sealed_at": "2026-01-01T00:00:00+00:00", "recipients": [
        {"address": "a@x.test", "kind": "to", "submission_state": "held", "submission_state_at": None}],
        "events": []}
    assert timeline(send, [], {}) == [Step("2026-01-01T00:00:00+00:00", "sealed", "Sealed", "")]
    from datetime import UTC, datetime
    audit = [{"at": datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC), "action": "send.withheld", "actor_id": None,
              "actor_kind": "node", "outcome": "refused", "detail": {"reason": "domain_paused", "evidence": "p1"}},
             {"at": datetime(2026, 1, 1, tzinfo=UTC), "action": "send.sealed", "actor_id": "usr_1",
              "actor_kind": "user", "outcome": "ok", "detail": {"state": "held"}}]
    steps = timeline(send, audit, {"usr_1": "Alex"})
    assert [(s.kind, s.actor) for s in steps] == [("sealed", "Alex"), ("withheld", "the node")]
    assert steps[1].title == "withheld (domain_paused)" and steps[1].words.endswith("p1")


def test_a_dispatch_pass_and_an_unknown_entry_keep_what_they_recorded() -> None:
    from datetime import UTC, datetime
    send = {"sealed_at": None, "recipients": [], "events": []}
    at = datetime(2026, 1, 1, tzinfo=UTC)
    audit = [{"at": at, "action": "send.throttled", "actor_id": None, "actor_kind": "node", "outcome": "failed",
              "detail": {"attempts": 2, "recipients": {"throttled": 1}, "last_error": "421 try later"}},
             {"at": at, "action": "send.something_new", "actor_id": None, "actor_kind": "node", "outcome": "ok",
              "detail": {"reason": "why not"}}]
    steps = timeline(send, audit, {})
    expected = "Attempt 2; recipients: 1 throttled. 421 try later"
    assert (steps[0].title, steps[0].words) == ("Dispatch: throttled", expected)
    assert (steps[1].title, steps[1].words) == ("send.something_new", "why not")
