"""Retrying a person's send is safe (issue 14 item 7): ``POST /api/sends`` under an ``Idempotency-Key``
seals once and answers a retry with the first send; ``POST /api/mail`` takes the header as well as its body
field. Over the ASGI client on the run's database, and across a real ``kill -9`` of a served node."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from mailnode.schema.outbound import drafts, send_manifests
from tests.conftest import bearer
from tests.support.served import Served, served_env


def _manifests(node: Any) -> int:
    with node.read() as conn:
        return int(conn.execute(select(func.count()).select_from(send_manifests)).scalar_one())


def _send(installed: Any, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"mailbox_id": installed.mailbox_id, "to": ["ann@remote.test"], "subject": "Your order",
                            "body": "It left today."}
    body.update(changes)
    return body


def _refused(r: Any, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = dict(r.json())
    assert body["error"] == code and body["message"] and body["why"] and body["fix"], body
    return body


def test_the_same_send_twice_under_one_key_seals_once_and_replays_the_first(
        api: Any, node: Any, installed: Any) -> None:
    h = {**bearer(installed.token), "Idempotency-Key": "order-42-shipped"}
    first = api.post("/api/sends", json=_send(installed), headers=h)
    assert first.status_code == 201, first.text
    # Recipients reordered and re-cased are the same mail.
    again = api.post("/api/sends", json=_send(installed, to=["Ann@Remote.Test"]), headers=h)
    assert again.status_code == 201, again.text
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first.headers
    assert _manifests(node) == 1


@pytest.mark.parametrize(("field", "value", "differs"), [
    ("subject", "Your order (corrected)", "subject"),
    ("body", "It left yesterday.", "text"),
    ("to", ["bob@remote.test"], "to"),
    ("cc", ["boss@remote.test"], "cc"),
])
def test_a_different_send_under_a_used_key_is_refused_and_seals_nothing(
        api: Any, node: Any, installed: Any, field: str, value: Any, differs: str) -> None:
    h = {**bearer(installed.token), "Idempotency-Key": "order-42-shipped"}
    first = api.post("/api/sends", json=_send(installed), headers=h)
    assert first.status_code == 201, first.text
    body = _refused(api.post("/api/sends", json=_send(installed, **{field: value}), headers=h),
                    409, "E_IDEMPOTENCY_KEY_REUSED")
    assert body["detail"]["send_id"] == first.json()["send"]["id"] and body["detail"]["differs"] == [differs]
    assert "Idempotency-Key" in body["fix"] and "/api/sends/" in body["fix"]
    assert _manifests(node) == 1


def test_without_a_key_every_request_seals(api: Any, node: Any, installed: Any) -> None:
    h = bearer(installed.token)
    assert api.post("/api/sends", json=_send(installed), headers=h).status_code == 201
    assert api.post("/api/sends", json=_send(installed), headers=h).status_code == 201
    assert _manifests(node) == 2


@pytest.mark.parametrize(("key", "code"), [
    ("mailnode:notice:ntf_1", "E_IDEMPOTENCY_KEY_RESERVED"),
    ("k" * 257, "E_IDEMPOTENCY_KEY_MALFORMED"),
    ("k\x01", "E_IDEMPOTENCY_KEY_MALFORMED"),
])
def test_a_key_that_cannot_name_a_send_is_refused_before_anything_is_sealed(
        api: Any, node: Any, installed: Any, key: str, code: str) -> None:
    h = {**bearer(installed.token), "Idempotency-Key": key}
    _refused(api.post("/api/sends", json=_send(installed), headers=h), 422, code)
    assert _manifests(node) == 0


def test_a_retried_send_from_a_draft_replays_though_the_seal_retired_the_draft(
        api: Any, node: Any, installed: Any) -> None:
    h = bearer(installed.token)
    r = api.post("/api/drafts", json={"mailbox_id": installed.mailbox_id, "to": ["ann@remote.test"],
                                      "subject": "Draft", "body": "From a draft."}, headers=h)
    assert r.status_code == 201, r.text
    draft_id = r.json()["draft"]["id"]
    keyed = {**h, "Idempotency-Key": "draft-send-1"}
    first = api.post("/api/sends", json={"draft_id": draft_id}, headers=keyed)
    assert first.status_code == 201, first.text
    with node.read() as conn:
        assert conn.execute(select(func.count()).select_from(drafts)).scalar_one() == 0
    again = api.post("/api/sends", json={"draft_id": draft_id}, headers=keyed)
    assert again.status_code == 201, again.text
    assert again.json()["send"]["id"] == first.json()["send"]["id"]
    # Another (absent) draft under the same key is not the first request repeated.
    _refused(api.post("/api/sends", json={"draft_id": "dft_01JDKZ8Q4M6V8R2T0W3X5Y7Z9B"}, headers=keyed),
             404, "E_NO_SUCH_DRAFT")
    assert _manifests(node) == 1


def test_concurrent_requests_under_one_key_seal_once(api: Any, node: Any, installed: Any) -> None:
    h = {**bearer(installed.token), "Idempotency-Key": "raced-1"}
    answers: list[Any] = []
    start = threading.Barrier(6)

    def post() -> None:
        start.wait()
        answers.append(api.post("/api/sends", json=_send(installed), headers=h))

    threads = [threading.Thread(target=post) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(r.status_code for r in answers) == [201] * 6, [r.text for r in answers]
    assert len({r.json()["send"]["id"] for r in answers}) == 1
    assert _manifests(node) == 1


def _mail(installed: Any, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"mailbox_id": installed.mailbox_id, "class": "deferrable", "to": ["ann@remote.test"],
                            "subject": "Your receipt", "text": "Thank you."}
    body.update(changes)
    return body


def test_post_mail_takes_the_key_as_a_header_too(api: Any, node: Any, installed: Any) -> None:
    h = {**bearer(installed.token), "Idempotency-Key": "receipt-7"}
    first = api.post("/api/mail", json=_mail(installed), headers=h)
    assert first.status_code == 202, first.text
    assert first.json()["mail"]["idempotency_key"] == "receipt-7"
    # The header alone, the body field alone and both (equal) name the same mail.
    again = api.post("/api/mail", json=_mail(installed), headers=h)
    by_body = api.post("/api/mail", json=_mail(installed, idempotency_key="receipt-7"), headers=bearer(installed.token))
    both = api.post("/api/mail", json=_mail(installed, idempotency_key="receipt-7"), headers=h)
    assert {r.status_code for r in (again, by_body, both)} == {202}
    assert {r.json()["mail"]["id"] for r in (first, again, by_body, both)} == {first.json()["mail"]["id"]}
    assert _manifests(node) == 1


def test_post_mail_refuses_two_different_keys_and_none(api: Any, node: Any, installed: Any) -> None:
    h = {**bearer(installed.token), "Idempotency-Key": "receipt-7"}
    body = _refused(api.post("/api/mail", json=_mail(installed, idempotency_key="receipt-8"), headers=h),
                    422, "E_IDEMPOTENCY_KEY_CONFLICT")
    assert body["detail"] == {"header": "receipt-7", "body": "receipt-8"}
    _refused(api.post("/api/mail", json=_mail(installed), headers=bearer(installed.token)),
             422, "E_IDEMPOTENCY_KEY_MISSING")
    _refused(api.post("/api/mail", json=_mail(installed), headers={**h, "Idempotency-Key": "mailnode:x"}),
             422, "E_IDEMPOTENCY_KEY_RESERVED")
    assert _manifests(node) == 0


@pytest.fixture
def served(tmp_path: Path, database_url: str) -> Iterator[Served]:
    s = Served(tmp_path / "node", served_env(database_url))
    yield s
    s.stop()


def test_a_send_retried_after_the_node_was_killed_is_not_sealed_again(served: Served) -> None:
    served.start()
    h = {**served.headers, "Idempotency-Key": "before-the-crash"}
    url = f"http://127.0.0.1:{served.http}/api/sends"
    body = {"mailbox_id": served.installed["mailbox_id"], "to": ["ann@remote.test"], "subject": "Hi", "body": "Hi"}
    first = httpx.post(url, json=body, headers=h, timeout=30)
    assert first.status_code == 201, first.text
    served.kill9()
    served.start()
    again = httpx.post(f"http://127.0.0.1:{served.http}/api/sends", json=body, headers=h, timeout=30)
    assert again.status_code == 201, again.text
    assert again.json()["send"]["id"] == first.json()["send"]["id"]
    assert len(served.call("GET", "/api/sends")["sends"]) == 1
