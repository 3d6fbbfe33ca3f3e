"""Signing in with a code mailed to the person's verified contact address, over HTTP, against the local
Resend server (which counts every request the node makes to the provider)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from mailnode import budgets
from mailnode.clock import FrozenClock
from mailnode.config import Settings
from mailnode.outbound import sweeper
from mailnode.outbound.seal import SealRequest, seal
from mailnode.schema.mail import mailboxes
from tests.conftest import bearer
from tests.support.resend_emulator import EmulatorConfig, Fault, ResendEmulator
from tests.web.conftest import csrf_of

#: A Tuesday morning, far from a day's or a month's end (the provider's quota days follow this clock).
T0 = datetime(2026, 3, 10, 8, 0, tzinfo=UTC)
HOME = "alex.home@remote.test"


@pytest.fixture
def clock() -> FrozenClock:
    """The frozen clock at ``T0``."""
    c = FrozenClock()
    c.set(T0)
    return c


@pytest.fixture
def emulator(clock: FrozenClock) -> Iterator[ResendEmulator]:
    """The local Resend server on the test's clock."""
    emu = ResendEmulator(EmulatorConfig(), clock=clock.now)
    emu.start()
    yield emu
    emu.stop()


@pytest.fixture
def settings(tmp_path: Path, database_url: str, emulator: ResendEmulator) -> Settings:
    """A node whose transport is the local Resend server."""
    return Settings(data_dir=tmp_path / "node", database_url=database_url, transport="resend",
                    resend_base_url=emulator.base_url, resend_api_key="re_test_full")


def _last_code(emulator: ResendEmulator, pattern: str) -> str:
    body = emulator.sends()[-1].body.decode()
    found = re.search(pattern, body)
    assert found, body
    return found.group(1)


@pytest.fixture
def verified(web: Any, installed: Any, emulator: ResendEmulator) -> str:
    """Alex's contact address, verified through the API (as a person does before using codes)."""
    h = bearer(installed.token)
    with web.app.state.node.begin() as conn:
        conn.execute(update(mailboxes).values(hold_window_seconds=0))
    assert web.post("/api/me/contact-email", json={"address": HOME}, headers=h).status_code == 200
    code = _last_code(emulator, r"verification code is (\d+)")
    r = web.post("/api/me/contact-email/verify", json={"code": code}, headers=h)
    assert r.status_code == 200, r.text
    return HOME


def ask_code(web: Any, address: str) -> Any:
    """Ask for a code through the sign-in page's form; the answer."""
    form = web.get("/signin")
    return web.post("/signin/code", data={"address": address, "csrf_token": csrf_of(form.text)})


def type_code(web: Any, page: Any, address: str, code: str) -> Any:
    """Type ``code`` into the code page ``page``; the final answer (redirects followed)."""
    return web.post("/signin/code/check", data={"address": address, "code": code, "csrf_token": csrf_of(page.text)})


def test_a_person_signs_in_with_the_code_mailed_to_their_verified_address(
        web: Any, installed: Any, emulator: ResendEmulator, verified: str) -> None:
    page = ask_code(web, verified)
    assert page.status_code == 200 and 'id="code-sent"' in page.text
    mail = json.loads(emulator.sends()[-1].body)
    assert mail["to"] == [verified] and mail["subject"] == "Your mailnode sign-in code"
    code = _last_code(emulator, r"sign-in code is (\d+)")
    r = type_code(web, page, verified, code)
    assert r.status_code == 200 and r.url.path == "/" and 'id="mailbox-name"' in r.text
    # The code works once.
    again = type_code(web, page, verified, code)
    assert again.status_code == 409 and "E_SIGNIN_CODE_REQUEST_NEW" in again.text


def test_a_wrong_code_is_refused_in_words_and_opens_nothing(web: Any, emulator: ResendEmulator,
                                                             verified: str) -> None:
    page = ask_code(web, verified)
    code = _last_code(emulator, r"sign-in code is (\d+)")
    r = type_code(web, page, verified, "000000" if code != "000000" else "111111")
    assert r.status_code == 422 and "E_SIGNIN_CODE_WRONG" in r.text and "That code does not match." in r.text
    assert web.get("/", follow_redirects=False).status_code == 303


def test_an_address_nobody_verified_gets_the_same_page_and_no_mail(web: Any, installed: Any,
                                                                    emulator: ResendEmulator) -> None:
    before = len(emulator.sends())
    page = ask_code(web, "stranger@remote.test")
    assert page.status_code == 200 and 'id="code-sent"' in page.text
    assert len(emulator.sends()) == before


def test_an_unverified_contact_address_gets_no_code(web: Any, installed: Any, emulator: ResendEmulator) -> None:
    h = bearer(installed.token)
    assert web.post("/api/me/contact-email", json={"address": HOME}, headers=h).status_code == 200
    before = len(emulator.sends())
    assert 'id="code-sent"' in ask_code(web, HOME).text
    assert len(emulator.sends()) == before


def test_a_contact_address_code_does_not_sign_in(web: Any, installed: Any, emulator: ResendEmulator) -> None:
    h = bearer(installed.token)
    web.post("/api/me/contact-email", json={"address": HOME}, headers=h)
    page = ask_code(web, HOME)
    contact_code = _last_code(emulator, r"verification code is (\d+)")
    r = type_code(web, page, HOME, contact_code)
    assert r.status_code == 409 and "E_SIGNIN_CODE_REQUEST_NEW" in r.text


def test_a_shut_provider_breaker_refuses_a_code_honestly_and_mails_nothing(
        web: Any, installed: Any, emulator: ResendEmulator, verified: str, clock: FrozenClock) -> None:
    node = web.app.state.node
    emulator.add_fault(Fault(status=429, name="daily_quota_exceeded"))
    seal(node, org_id=installed.org_id, author_id=installed.user_id,
         request=SealRequest(mailbox_id=installed.mailbox_id, to=["person@remote.test"], subject="Notice",
                             body="Hello", mail_class="deferrable"))
    sweeper.run_pass(node)
    before = len(emulator.sends())
    for address in (verified, "stranger@remote.test"):
        r = ask_code(web, address)
        assert r.status_code == 503 and "E_SIGNIN_CODE_UNAVAILABLE" in r.text
        assert "cannot be sent at the moment" in r.text and "quota" not in r.text.lower()
    assert len(emulator.sends()) == before


def test_asking_again_at_once_is_refused_with_the_cooldown(web: Any, emulator: ResendEmulator,
                                                           verified: str, clock: FrozenClock) -> None:
    ask_code(web, verified)
    before = len(emulator.sends())
    r = ask_code(web, verified)
    assert r.status_code == 429 and "E_SIGNIN_CODE_COOLDOWN" in r.text
    assert len(emulator.sends()) == before
    clock.advance(budgets.VERIFICATION_COOLDOWN_SECONDS)
    assert ask_code(web, verified).status_code == 200
    assert len(emulator.sends()) == before + 1


def test_too_many_attempts_at_one_address_are_refused_naming_the_limit(web: Any, emulator: ResendEmulator,
                                                                        installed: Any) -> None:
    for _ in range(budgets.WEB_SIGNIN_ATTEMPTS_PER_ADDRESS):
        assert ask_code(web, "stranger@remote.test").status_code == 200
    r = ask_code(web, "Stranger@remote.test")
    assert r.status_code == 429 and "E_SIGNIN_RATE_LIMITED" in r.text
    assert f"WEB_SIGNIN_ATTEMPTS_PER_ADDRESS is {budgets.WEB_SIGNIN_ATTEMPTS_PER_ADDRESS}" in r.text
    # Another address from the same client is not limited yet (the client's limit is higher).
    assert ask_code(web, "other@remote.test").status_code == 200


def test_a_code_sign_in_is_audited_with_its_method(web: Any, installed: Any, emulator: ResendEmulator,
                                                   verified: str) -> None:
    page = ask_code(web, verified)
    type_code(web, page, verified, _last_code(emulator, r"sign-in code is (\d+)"))
    h = bearer(installed.token)
    (entry,) = web.get("/api/audit", params={"action": "web.signed_in"}, headers=h).json()["entries"]
    assert json.loads(entry["detail"])["method"] == "code"
    (asked,) = web.get("/api/audit", params={"action": "web.signin_code_requested"}, headers=h).json()["entries"]
    assert asked["actor_id"] == installed.user_id


def test_a_colleague_who_reads_the_mailbox_cannot_read_someone_elses_sign_in_code(
        web: Any, installed: Any, emulator: ResendEmulator, verified: str) -> None:
    # The code goes out from the organisation's oldest mailbox; Dana reads that mailbox's mail and may answer
    # from it. Reading Alex's code there would let her sign in as the administrator.
    from mailnode.directory.tokens import create_token

    admin = bearer(installed.token)
    dana = web.post("/api/users", json={"email": "dana@example.test"}, headers=admin).json()["user"]["id"]
    for relation in ("mailbox.metadata.read", "mailbox.content.read", "send.propose", "approval.decide"):
        r = web.post("/api/access", json={"subject_id": dana, "relation": relation,
                                          "object_id": installed.mailbox_id}, headers=admin)
        assert r.status_code == 201, r.text
    node = web.app.state.node
    with node.begin() as conn:
        _, plaintext = create_token(conn, org_id=installed.org_id, principal_id=dana, at=node.clock.now(),
                                    actor_id=installed.user_id, label="dana's laptop")
    as_dana = bearer(plaintext)
    assert ask_code(web, verified).status_code == 200
    code = _last_code(emulator, r"sign-in code is (\d+)")

    listed = web.get("/api/sends", params={"mailbox_id": installed.mailbox_id}, headers=as_dana).json()["sends"]
    code_send = next(s for s in listed if s["subject"] == "Your mailnode sign-in code")
    shown = [web.get(f"/api/sends/{code_send['id']}", headers=as_dana).text,
             web.get(f"/api/mailboxes/{installed.mailbox_id}/queue", params={"view": "sent"}, headers=as_dana).text]
    if code_send.get("conversation_id"):
        shown.append(web.get(f"/api/conversations/{code_send['conversation_id']}", headers=as_dana).text)
    shown.append(web.get("/api/search", params={"q": "sign-in code"}, headers=as_dana).text)
    for text in shown:
        assert code not in text
    # Alex, who asked for it, still reads their own mail.
    assert code in web.get(f"/api/sends/{code_send['id']}", headers=admin).text
