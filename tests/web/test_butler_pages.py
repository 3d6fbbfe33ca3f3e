"""The Butler pages over HTTP (``web.butlers``, ``web.butler_editor``, ``web.butler_run_page``): the list with
state, last runs and spend; the editor's findings beside their node, price, dry run, diff and publish; disable,
enable and resume with their reasons; a run's effects and offers; and each refusal as the API's error in words.
The pure decisions (``web.butler_view``) are tested as tables at the end."""

from __future__ import annotations

import json
import re
from html import unescape
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID

from mailnode.butler import check, pause
from mailnode.butler.engine import run_butler
from mailnode.butler.trigger import open_runs_in
from mailnode.web.butler_view import StateWord, document_diff, node_line, outline, price_reading, state_words
from tests.butler.runs.builders import World, dbos, message, person, settings, world  # noqa: F401
from tests.butler.runs.conftest import ack_program
from tests.web.conftest import csrf_of, sign_in

POT = 1000


@pytest.fixture
def w(world: World) -> World:  # noqa: F811  (the imported fixture, requested by name)
    """The installed organisation with DBOS running (``tests.butler.runs``' world)."""
    return world


def signed_in(w: World, token: str | None = None) -> Any:
    """The w's client signed in (as the administrator unless ``token``); the first page's response."""
    r = sign_in(w.api, token or w.installed.token)
    assert r.status_code == 200, r.text
    return r


def text_of(html: str) -> str:
    """The page's visible words, tags dropped and spaces folded (what a reader sees, roughly)."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def parked_run(w: World, bid: str, subject: str = "Order 42") -> str:
    """Deliver a message, run the Butler on it until its reply awaits release; the run id."""
    mid = w.deliver(message(subject=subject), start=False)
    with w.node.begin() as conn:
        [run_id] = open_runs_in(conn, mid, w.node.clock.now())
    with SetWorkflowID(run_id):
        DBOS.start_workflow(run_butler, run_id)
    w.wait_run(mid, until=lambda r: r.state == "awaiting_release")
    return str(run_id)


def post(w: World, url: str, page_url: str, **data: Any) -> Any:
    """POST a form from ``page_url`` with its CSRF token (redirects followed)."""
    token = csrf_of(w.api.get(page_url).text)
    return w.api.post(url, data={"csrf_token": token, **data})


# --- the list and a Butler's page --------------------------------------------------------------------------

def test_the_list_shows_each_butler_with_its_live_version_last_runs_and_spend(w: World) -> None:
    bid, _ = w.publish(ack_program(), name="acknowledge")
    w.grant(bid, "send.propose", "mailbox.content.read", "mailbox.metadata.read")
    run_id = parked_run(w, bid)
    signed_in(w)
    r = w.api.get("/butlers")
    assert r.status_code == 200
    words = text_of(r.text)
    assert "acknowledge" in words and "Live: version 1" in words
    assert f'href="/butlers/runs/{run_id}"' in r.text and "awaiting_release" in words
    # The spend is the runs' own figure, or says there is none: never a made-up 0.
    spent = next(r.statements_spent for r in w.runs() if r.id == run_id)
    assert (f"{spent} statements" if spent is not None else "no spend stated") in words
    assert 'aria-current="page"' in r.text and 'id="nav-butlers"' in r.text


def test_someone_who_is_not_an_administrator_is_refused_with_the_apis_error(w: World) -> None:
    w.publish(ack_program(), name="acknowledge")
    h = person(w, "clerk@example.test", ("mailbox.content.read", w.installed.mailbox_id))
    signed_in(w, h["Authorization"].removeprefix("Bearer "))
    r = w.api.get("/butlers")
    assert r.status_code == 404
    assert "E_NO_SUCH_BUTLER" in r.text and "Butlers are administered by administrators; ask one." in r.text
    assert "acknowledge" not in r.text


def test_disable_needs_a_reason_then_disables_and_enable_undoes_it(w: World) -> None:
    bid, _ = w.publish(ack_program(), name="acknowledge")
    signed_in(w)
    page_url = f"/butlers/{bid}"
    r = post(w, f"/butlers/{bid}/disable", page_url, reason="  ")
    assert r.status_code == 422 and "E_BUTLER_DISABLE_REASON_REQUIRED" in r.text
    assert "Disabling a Butler needs a reason." in text_of(r.text)
    r = post(w, f"/butlers/{bid}/disable", page_url, reason="answers the wrong mailbox")
    assert r.status_code == 200 and 'id="done"' in r.text
    words = text_of(r.text)
    assert "Disabled: no new runs until an administrator enables it — answers the wrong mailbox" in words
    r = post(w, f"/butlers/{bid}/enable", page_url, reason="moved to the right mailbox")
    assert r.status_code == 200 and "Enabled: deliveries open its runs again." in text_of(r.text)
    assert 'id="disable-reason"' in r.text
    r = post(w, f"/butlers/{bid}/enable", page_url)
    assert r.status_code == 409 and "E_BUTLER_NOT_DISABLED" in r.text


def test_a_pause_the_node_placed_is_resumed_with_a_reason_only(w: World) -> None:
    bid, _ = w.publish(ack_program(), name="acknowledge")
    with w.node.begin() as conn:
        pid = pause.place(conn, org_id=w.installed.org_id, butler_id=bid, name="acknowledge",
                          figure=pause.reading(5, [bid]), message_id="msg_x", at=w.node.clock.now())
    signed_in(w)
    page_url = f"/butlers/{bid}"
    shown = text_of(w.api.get(page_url).text)
    assert "Paused by the node" in shown and "loop_detected" in shown and "E_BUTLER_LOOP" in shown
    r = post(w, f"/butlers/{bid}/pauses/{pid}/resume", page_url, reason="")
    assert r.status_code == 422 and "E_BUTLER_PAUSE_REASON_REQUIRED" in r.text
    r = post(w, f"/butlers/{bid}/pauses/{pid}/resume", page_url, reason="the loop was a test")
    assert r.status_code == 200
    words = text_of(r.text)
    assert "Resumed: the node's pause is lifted" in words and "the loop was a test" in words
    assert 'id="pause-in-force"' not in r.text


def test_a_post_without_the_csrf_token_is_refused(w: World) -> None:
    bid, _ = w.publish(ack_program(), name="acknowledge")
    signed_in(w)
    r = w.api.post(f"/butlers/{bid}/disable", data={"reason": "x"})
    assert r.status_code == 403 and "E_CSRF_INVALID" in r.text


# --- the editor -------------------------------------------------------------------------------------------

def test_the_checker_puts_a_finding_beside_the_node_it_concerns(w: World) -> None:
    bid, _ = w.publish(ack_program(), name="acknowledge")
    signed_in(w)
    doc = ack_program()
    doc["nodes"][1]["next"] = "nowhere"  # the draft node "reply" points at no node
    source = json.dumps(doc, indent=2)
    token = csrf_of(w.api.get(f"/butlers/{bid}/edit").text)
    r = w.api.post(f"/butlers/{bid}/check", data={"source": source}, headers={"X-CSRF-Token": token})
    assert r.status_code == 200
    body = r.json()
    assert body["ok"] is False
    assert [(f["code"], f["node"]) for f in body["findings"]] == [("E_BUTLER_EDGE_DANGLING", "reply")]
    row = re.search(r'<li class="outline-node has-findings" data-node="reply">(.*?)</li>\s*</ul>', body["html"],
                    re.DOTALL)
    assert row and "E_BUTLER_EDGE_DANGLING" in row.group(1) and f"line {node_line(source, 'reply')}" in row.group(1)
    assert 'data-node="propose">' in body["html"]  # the other nodes are listed, without findings
    assert "No price" in body["html"]


def test_a_draft_that_does_not_check_is_refused_and_the_text_stays(w: World) -> None:
    bid, _ = w.publish(ack_program(), name="acknowledge")
    signed_in(w)
    r = post(w, f"/butlers/{bid}/draft", f"/butlers/{bid}/edit", source='{"nodes": [}')
    assert r.status_code == 422 and "E_BUTLER_DOES_NOT_CHECK" in r.text
    assert "{&#34;nodes&#34;: [}</textarea>" in r.text
    assert "E_BUTLER_SOURCE_NOT_JSON" in r.text


def test_save_dry_run_diff_and_publish(w: World) -> None:
    bid, _ = w.publish(ack_program(), name="acknowledge")
    w.grant(bid, "send.propose", "mailbox.content.read", "mailbox.metadata.read")
    run_id = parked_run(w, bid)
    signed_in(w)
    edit = f"/butlers/{bid}/edit"
    doc = ack_program()
    doc["nodes"][1]["body"] = "Thank you. We answer within two working days."
    r = post(w, f"/butlers/{bid}/draft", edit, source=json.dumps(doc))
    assert r.status_code == 200 and "Draft saved." in r.text
    assert "It checks: no findings." in text_of(r.text) and "it fits" in text_of(r.text)
    diff = re.search(r'<pre class="diff" id="diff">(.*?)</pre>', r.text, re.DOTALL)
    assert diff is not None
    assert "-" in diff.group(1) and "two working days" in unescape(diff.group(1))
    assert re.search(r'class="del">-.*one working day', unescape(diff.group(1)))

    r = post(w, f"/butlers/{bid}/dry-run", edit, run_id=run_id)
    assert r.status_code == 200
    nodes = re.findall(r'<tr data-node="([^"]+)">', r.text)
    assert nodes == ["may_reply", "reply", "propose"]
    assert "would end finished" in text_of(r.text)

    r = post(w, f"/butlers/{bid}/publish", edit)
    assert r.status_code == 200 and "Published: the draft is now the live version." in r.text
    assert "Live: version 2" in text_of(r.text)
    r = post(w, f"/butlers/{bid}/publish", f"/butlers/{bid}")
    assert r.status_code == 409 and "E_BUTLER_NO_DRAFT" in r.text


# --- a run's page -----------------------------------------------------------------------------------------

def test_a_runs_page_shows_its_effects_costs_and_the_offers_made(w: World) -> None:
    bid, _ = w.publish(ack_program(), name="acknowledge")
    w.grant(bid, "send.propose", "mailbox.content.read", "mailbox.metadata.read")
    run_id = parked_run(w, bid)
    signed_in(w)
    r = w.api.get(f"/butlers/runs/{run_id}")
    assert r.status_code == 200
    words = text_of(r.text)
    assert "awaiting_release" in words and "mail.send.propose" in words
    assert re.search(r'<tr class="effect effect-ok" data-node="propose">', r.text)
    assert "No retry offered: not_yet_attempted" in words  # a send awaiting release has nothing to retry
    assert 'id="rerun"' in r.text and "No re-run is offered" not in words  # published, not paused, facts kept
    r = w.api.get("/butlers/runs/bru_nosuchrun")
    assert r.status_code == 404 and "E_NO_SUCH_BUTLER_RUN" in r.text


def test_retry_with_an_unknown_mode_is_the_apis_refusal(w: World) -> None:
    bid, _ = w.publish(ack_program(), name="acknowledge")
    w.grant(bid, "send.propose", "mailbox.content.read", "mailbox.metadata.read")
    run_id = parked_run(w, bid)
    signed_in(w)
    page_url = f"/butlers/runs/{run_id}"
    send_id = w.effects(run_id)[-1].subject
    r = post(w, f"/butlers/runs/{run_id}/sends/{send_id}/retry", page_url, mode="again")
    assert r.status_code == 422 and "E_RETRY_MODE_UNKNOWN" in r.text
    r = post(w, f"/butlers/runs/{run_id}/sends/{send_id}/retry", page_url, mode="retry-effect")
    assert r.status_code == 409 and "E_RETRY_NOT_PROVEN" in r.text


# --- the pure decisions -----------------------------------------------------------------------------------

LIVE = {"id": "bvr_1", "version": 3}


@pytest.mark.parametrize("item,keys", [
    ({"live": LIVE, "draft": None, "pause": None, "disabled": None}, ["live"]),
    ({"live": None, "draft": {"id": "d"}, "pause": None, "disabled": None}, ["no_live", "draft"]),
    ({"live": LIVE, "draft": None, "pause": {"reason": "loop_detected"}, "disabled": None}, ["live", "paused"]),
    ({"live": LIVE, "draft": None, "pause": None, "disabled": {"reason": "r"}}, ["live", "disabled"]),
    ({"live": LIVE, "draft": {"id": "d"}, "pause": {"reason": "x"}, "disabled": {"reason": "y"}},
     ["live", "draft", "paused", "disabled"]),
])
def test_state_words(item: dict[str, Any], keys: list[str]) -> None:
    assert [s.key for s in state_words(item)] == keys


def test_state_words_carry_the_reason_and_never_say_running() -> None:
    paused = state_words({"live": LIVE, "pause": {"reason": "loop_detected"}, "disabled": {"reason": "spam"}})
    assert paused[0] == StateWord("live", "Live: version 3")
    assert [s.reason for s in paused[1:]] == ["loop_detected", "spam"]
    assert not any("running" in s.words.lower() for s in paused)


def test_outline_places_each_finding_on_its_node_and_keeps_the_orphans() -> None:
    source = '{\n "nodes": [\n  {"id": "a", "type": "stop"},\n  {"id": "b", "type": "guard"}\n ]\n}'
    f_doc = check.Finding("E_BUTLER_NO_ENTRY", None, "w", "y", "f")
    f_b = check.Finding("E_BUTLER_EDGE_DANGLING", "b", "w", "y", "f")
    f_gone = check.Finding("E_BUTLER_CYCLE", "zz", "w", "y", "f")
    rows = outline(source, [f_doc, f_b, f_gone])
    assert [(r.node, r.type, r.line, [f.code for f in r.findings]) for r in rows] == [
        (None, None, None, ["E_BUTLER_NO_ENTRY"]), ("a", "stop", 3, []), ("b", "guard", 4, ["E_BUTLER_EDGE_DANGLING"]),
        ("zz", None, None, ["E_BUTLER_CYCLE"])]
    assert [r.node for r in outline("not json", [f_b])] == [None, "b"]


@pytest.mark.parametrize("source,node,line", [
    ('{"id": "a"}', "a", 1), ('{\n\n  "id" :  "b"}', "b", 3), ('{"id": "ab"}', "a", None), ('{"x": "a"}', "a", None),
])
def test_node_line(source: str, node: str, line: int | None) -> None:
    assert node_line(source, node) == line


def test_the_price_is_honest_about_a_document_that_does_not_check() -> None:
    good = check.check(json.dumps(ack_program()), pot=POT)
    reading = price_reading(good, POT)
    assert reading.total is not None and reading.total > 0 and reading.fits is True
    assert price_reading(good, 1).fits is False
    bad = price_reading(check.check("{", pot=POT), POT)
    assert (bad.total, bad.fits) == (None, None)


def test_the_diff_is_of_canonical_documents() -> None:
    doc = ack_program()
    spaced = json.dumps(doc, indent=4)
    assert document_diff(json.dumps(doc), spaced, POT) == []  # spacing alone is no change
    doc2 = ack_program()
    doc2["nodes"][3]["reason"] = "quiet now"
    diff = document_diff(json.dumps(doc), json.dumps(doc2), POT)
    assert diff[:2] == ["--- live", "+++ draft"]
    assert [d for d in diff if d.startswith(("+ ", "- ", "+\t", "-\t")) or (d[:1] in "+-" and d[1:2] == " ")]
    assert any(d.startswith("+") and "quiet now" in d for d in diff)
    assert all(d.startswith("+") for d in document_diff(None, json.dumps(doc), POT)[2:] if not d.startswith("@@"))


def test_the_editor_and_its_checker_refuse_someone_who_is_not_an_administrator(w: World) -> None:
    bid, _ = w.publish(ack_program(), name="acknowledge")
    h = person(w, "clerk@example.test", ("mailbox.content.read", w.installed.mailbox_id))
    home = signed_in(w, h["Authorization"].removeprefix("Bearer "))
    r = w.api.get(f"/butlers/{bid}/edit")
    assert r.status_code == 404 and "E_NO_SUCH_BUTLER" in r.text and "acknowledge" not in r.text
    r = w.api.post(f"/butlers/{bid}/check", data={"source": "{}"}, headers={"X-CSRF-Token": csrf_of(home.text)})
    assert r.status_code == 404 and r.json()["error"] == "E_NO_SUCH_BUTLER" and "html" not in r.json()
    r = w.api.post(f"/butlers/{bid}/publish", data={"csrf_token": csrf_of(home.text)})
    assert r.status_code == 403 and "E_NOT_AN_ADMINISTRATOR" in r.text
