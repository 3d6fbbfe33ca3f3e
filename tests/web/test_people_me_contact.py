"""``/people/me``'s contact address over HTTP against the local Resend server: set it, the code is mailed,
typing it verifies the address; a wrong code and an immediate second request are refused in words; and a token
minted in a session opened with a mailed code has no parent token."""

from __future__ import annotations

import html
import json
from typing import Any

from sqlalchemy import update

from mailnode.schema.mail import mailboxes
from tests.conftest import bearer
from tests.support.resend_emulator import ResendEmulator
from tests.web.conftest import csrf_of, sign_in
from tests.web.test_signin_code import _last_code, ask_code, clock, emulator, settings, type_code, verified  # noqa: F401  (fixtures)

HOME = "alex.home@remote.test"


def _no_hold(web: Any) -> None:
    with web.app.state.node.begin() as conn:
        conn.execute(update(mailboxes).values(hold_window_seconds=0))


def _post(web: Any, path: str, **data: str) -> Any:
    page = web.get("/people/me")
    return web.post(path, data={"csrf_token": csrf_of(page.text), **data})


def test_a_contact_address_is_set_mailed_a_code_and_verified_from_the_page(web: Any, installed: Any,
                                                                           emulator: ResendEmulator) -> None:  # noqa: F811
    _no_hold(web)
    assert sign_in(web, installed.token).status_code == 200
    r = _post(web, "/people/me/contact-email", address=HOME)
    assert r.status_code == 200, r.text
    page = html.unescape(r.text)
    assert f"A code was mailed to {HOME}" in page and 'id="verify-form"' in page and "not verified" in page
    assert json.loads(emulator.sends()[-1].body)["to"] == [HOME]
    wrong = _post(web, "/people/me/contact-email/verify", code="000000")
    assert wrong.status_code == 422 and "E_VERIFICATION_CODE_WRONG" in wrong.text
    code = _last_code(emulator, r"verification code is (\d+)")
    r = _post(web, "/people/me/contact-email/verify", code=code)
    assert r.status_code == 200 and "Your contact address is verified." in r.text
    assert '<strong id="contact-state">verified</strong>' in r.text and 'id="verify-form"' not in r.text
    me = web.get("/api/me", headers=bearer(installed.token)).json()["me"]
    assert (me["contact_email"], me["contact_email_verified"]) == (HOME, True)


def test_asking_for_a_second_code_at_once_is_refused_with_the_cooldown(web: Any, installed: Any,
                                                                       emulator: ResendEmulator) -> None:  # noqa: F811
    _no_hold(web)
    sign_in(web, installed.token)
    assert _post(web, "/people/me/contact-email", address=HOME).status_code == 200
    sent = len(emulator.sends())
    r = _post(web, "/people/me/contact-email", address=HOME)
    assert r.status_code == 429 and "E_VERIFICATION_COOLDOWN" in r.text and len(emulator.sends()) == sent


def test_a_malformed_address_is_refused_and_mails_nothing(web: Any, installed: Any,
                                                          emulator: ResendEmulator) -> None:  # noqa: F811
    sign_in(web, installed.token)
    r = _post(web, "/people/me/contact-email", address="not an address")
    assert r.status_code == 422 and "E_ADDRESS_MALFORMED" in r.text and emulator.sends() == []


def test_a_token_minted_in_a_session_opened_with_a_code_has_no_parent(web: Any, installed: Any,
                                                                      emulator: ResendEmulator,  # noqa: F811
                                                                      verified: str) -> None:  # noqa: F811
    page = ask_code(web, verified)
    code = _last_code(emulator, r"sign-in code is (\d+)")
    assert type_code(web, page, verified, code).status_code == 200
    me = web.get("/people/me")
    assert "a mailed code" in me.text and "opened this session" not in me.text
    r = web.post("/people/me/tokens", data={"csrf_token": csrf_of(me.text), "label": "from a code"})
    assert r.status_code == 200 and 'id="token-once"' in r.text
    minted = [t for t in web.get("/api/tokens", headers=bearer(installed.token)).json()["tokens"]
              if t["label"] == "from a code"]
    assert len(minted) == 1 and minted[0]["parent_token_id"] is None
