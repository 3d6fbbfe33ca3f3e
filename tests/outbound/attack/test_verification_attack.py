"""Contact-address verification attacked (spec/transactional.md §4): requests and guesses fired in parallel,
codes wrong, reused, expired and brute-forced, junk input. The cooldown must bound the provider requests a
person can cause, and ``max_attempts`` the guesses one code can take, however the requests are timed."""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select

from mailnode import budgets
from mailnode.schema.directory_contacts import verification_records
from tests.conftest import bearer
from tests.support.resend_emulator import Fault

from .conftest import Org

#: Requests fired at once in the parallel tests (well above the attempts a code allows).
PARALLEL = 16


def _parallel(call: Callable[[int], Any], n: int = PARALLEL) -> list[Any]:
    """Run ``call(i)`` for ``i`` in ``range(n)`` on ``n`` threads released together; the results in order."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = call(i)
        except Exception as exc:  # noqa: BLE001 - the test asserts on it
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


def _code(org: Org) -> str:
    found = re.search(r"code is (\d+)", org.emulator.sends()[-1].body.decode())
    assert found
    return found.group(1)


def _wrong(good: str, i: int = 0) -> str:
    """A six-digit code that is not ``good``."""
    candidate = f"{(int(good) + 1 + i) % 10**6:06d}"
    return candidate


def _record(org: Org) -> Any:
    with org.node.read() as conn:
        return conn.execute(select(verification_records)
                            .where(verification_records.c.user_id == org.installed.user_id)).first()


def test_parallel_code_requests_send_one_code_and_spend_one_provider_request(api: Any, org: Org) -> None:
    h = bearer(org.installed.token)
    results = _parallel(lambda i: api.post("/api/me/contact-email", json={"address": f"home{i}@remote.test"},
                                           headers=h))
    outcomes = Counter((r.status_code, r.json().get("error")) for r in results)
    assert outcomes == {(200, None): 1, (429, "E_VERIFICATION_COOLDOWN"): PARALLEL - 1}, outcomes
    assert org.requests() == 1, "the cooldown bounds provider requests however requests are timed"
    [winner] = [r for r in results if r.status_code == 200]
    me = api.get("/api/me", headers=h).json()["me"]
    assert me["contact_email"] == winner.json()["contact_email"]["address"]
    assert _record(org).address == me["contact_email"]
    assert api.post("/api/me/contact-email/verify", json={"code": _code(org)}, headers=h).status_code == 200


def test_parallel_wrong_guesses_spend_an_attempt_each(api: Any, org: Org) -> None:
    h = bearer(org.installed.token)
    assert api.post("/api/me/contact-email", json={"address": "home@remote.test"}, headers=h).status_code == 200
    good = _code(org)
    results = _parallel(lambda i: api.post("/api/me/contact-email/verify", json={"code": _wrong(good, i)},
                                           headers=h))
    outcomes = Counter(r.json()["error"] for r in results)
    guesses = outcomes["E_VERIFICATION_CODE_WRONG"] + outcomes["E_VERIFICATION_ATTEMPTS_EXHAUSTED"]
    assert guesses == budgets.VERIFICATION_MAX_ATTEMPTS, outcomes
    assert outcomes["E_VERIFICATION_ATTEMPTS_EXHAUSTED"] == 1, outcomes
    assert outcomes["E_VERIFICATION_REQUEST_NEW"] == PARALLEL - budgets.VERIFICATION_MAX_ATTEMPTS, outcomes
    left = sorted(r.json()["detail"]["attempts_left"] for r in results
                  if r.json()["error"] == "E_VERIFICATION_CODE_WRONG")
    assert left == list(range(1, budgets.VERIFICATION_MAX_ATTEMPTS)), "every wrong guess spent its own attempt"
    # The code is gone: even the right one asks for a new code now.
    r = api.post("/api/me/contact-email/verify", json={"code": good}, headers=h)
    assert r.status_code == 409 and r.json()["error"] == "E_VERIFICATION_REQUEST_NEW"
    assert api.get("/api/me", headers=h).json()["me"]["contact_email_verified"] is False


def test_a_code_works_once_and_not_for_another_address(api: Any, org: Org) -> None:
    h = bearer(org.installed.token)
    assert api.post("/api/me/contact-email", json={"address": "first@remote.test"}, headers=h).status_code == 200
    first_code = _code(org)
    org.clock.advance(budgets.VERIFICATION_COOLDOWN_SECONDS)
    assert api.post("/api/me/contact-email", json={"address": "second@remote.test"}, headers=h).status_code == 200
    second_code = _code(org)
    if first_code != second_code:
        r = api.post("/api/me/contact-email/verify", json={"code": first_code}, headers=h)
        assert r.status_code == 422 and r.json()["error"] == "E_VERIFICATION_CODE_WRONG"
    r = api.post("/api/me/contact-email/verify", json={"code": second_code}, headers=h)
    assert r.status_code == 200 and r.json()["contact_email"] == {"address": "second@remote.test", "verified": True}
    again = api.post("/api/me/contact-email/verify", json={"code": second_code}, headers=h)
    assert again.status_code == 409 and again.json()["error"] == "E_CONTACT_EMAIL_ALREADY_VERIFIED"
    assert api.get("/api/me", headers=h).json()["me"]["contact_email_verified"] is True


@pytest.mark.parametrize(("body", "status", "code"), [
    ({}, 422, "E_REQUEST_INVALID"),
    ({"address": 5}, 422, "E_REQUEST_INVALID"),
    ({"address": "a@remote.test", "verified": True}, 422, "E_REQUEST_INVALID"),
    ({"address": ""}, 422, "E_ADDRESS_MALFORMED"),
    ({"address": "nobody"}, 422, "E_ADDRESS_MALFORMED"),
    ({"address": "a@remote.test\r\nBcc: evil@remote.test"}, 422, "E_HEADER_INJECTION"),
    ({"address": '"Me" <a@remote.test>'}, 422, "E_ADDRESS_MALFORMED"),
    ({"address": "a@localhost"}, 422, "E_ADDRESS_MALFORMED"),
    ({"address": "x" * 10_000 + "@remote.test"}, 422, "E_ADDRESS_MALFORMED"),
])
def test_a_bad_address_writes_nothing_and_arms_no_cooldown(api: Any, org: Org, body: dict[str, Any], status: int,
                                                           code: str) -> None:
    h = bearer(org.installed.token)
    r = api.post("/api/me/contact-email", json=body, headers=h)
    assert r.status_code == status and r.json()["error"] == code, r.text
    assert r.json()["why"] and r.json()["fix"]
    assert org.requests() == 0 and _record(org) is None
    assert api.get("/api/me", headers=h).json()["me"]["contact_email"] is None
    assert api.post("/api/me/contact-email", json={"address": "ok@remote.test"}, headers=h).status_code == 200


def test_the_vague_503_carries_no_empty_detail(api: Any, org: Org) -> None:
    h = bearer(org.installed.token)
    org.emulator.add_fault(Fault(status=401, name="restricted_api_key"))
    r = api.post("/api/me/contact-email", json={"address": "home@remote.test"}, headers=h)
    assert r.status_code == 503 and r.json()["error"] == "E_VERIFICATION_UNAVAILABLE", r.text
    # The breaker is now shut (systemic): the next press is refused before anything is minted.
    org.clock.advance(budgets.VERIFICATION_COOLDOWN_SECONDS)
    again = api.post("/api/me/contact-email", json={"address": "home@remote.test"}, headers=h)
    assert again.status_code == 503 and again.json()["detail"] == {}, again.text
    assert "key" not in again.text.lower() and org.requests() == 1
