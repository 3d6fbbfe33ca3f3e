"""The suppression list on a real ``mailnode serve`` sending through a real aiosmtpd smarthost (issue 20, "Done
when"): an application's mail is handed over; a hard-bounce DSN and an ARF complaint fed to the node's own SMTP
listener at the VERP return paths put those addresses on the list, a soft bounce does not; the application's
next ``POST /api/mail`` to them and to another address hands over only to the others, and ``GET /api/mail/{id}``
shows the listed recipients ``suppressed`` with their reasons."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from tests.outbound.db.conftest import SinkHandler
from tests.outbound.db.test_pipeline import dsn
from tests.outbound.db.test_suppression import arf
from tests.support.served import Served, free_port, served_env

from .conftest import Client, app_token, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def smarthost() -> Iterator[tuple[SinkHandler, int]]:
    """A real aiosmtpd server on loopback: the node's smarthost."""
    handler = SinkHandler()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    yield handler, port
    controller.stop()


@pytest.fixture
def smtp_node(tmp_path: Path, database_url: str, smarthost: tuple[SinkHandler, int]) -> Iterator[Served]:
    """An initialised node sending over SMTP to ``smarthost``, dispatching every second."""
    env = served_env(database_url, MAILNODE_DISPATCH_INTERVAL_SECONDS="1", MAILNODE_TRANSPORT="smtp",
                     MAILNODE_SMTP_RELAY=f"127.0.0.1:{smarthost[1]}", MAILNODE_SMTP_TLS="none")
    s = Served(tmp_path / "node", env)
    yield s
    s.stop()


def _post(app: Client, served: Served, key: str, *to: str) -> str:
    body = {"mailbox_id": served.installed["mailbox_id"], "class": "deferrable", "to": list(to),
            "subject": "Your upload stopped", "text": "The upload of run 7 stopped arriving.", "idempotency_key": key}
    r = app.call("POST", "/api/mail", json=body)
    assert r.status_code == 202, r.text
    return str(r.json()["mail"]["id"])


def _mail(app: Client, send_id: str) -> dict[str, Any]:
    r = app.call("GET", f"/api/mail/{send_id}")
    assert r.status_code == 200, r.text
    return dict(r.json()["mail"])


def _report(served: Served, raw: bytes, rcpt: str) -> None:
    with smtplib.SMTP("127.0.0.1", served.smtp) as c:
        c.sendmail("", [rcpt], raw)


def test_a_hard_bounce_and_a_complaint_over_smtp_suppress_and_the_next_send_skips_them(
        smtp_node: Served, smarthost: tuple[SinkHandler, int]) -> None:
    handler, _ = smarthost
    served = smtp_node.start()
    base = f"http://127.0.0.1:{served.http}"
    _, token = app_token(served)
    admin, app = Client(base, served.installed["token"]), Client(base, token)

    first = _post(app, served, "first", "gone@remote.test", "angry@remote.test", "soft@remote.test")
    wait_for("the first mail handed over", lambda: _mail(app, first)["state"] == "handed_over")
    verp = {t.rcpt_tos[0]: t.mail_from for t in handler.received}
    assert set(verp) == {"gone@remote.test", "angry@remote.test", "soft@remote.test"}
    rfc_id = admin.call("GET", f"/api/sends/{first}").json()["send"]["rfc_message_id"]

    _report(served, dsn("gone@remote.test", rfc_id, verp["gone@remote.test"]), verp["gone@remote.test"])
    _report(served, arf("angry@remote.test", rfc_id, verp["angry@remote.test"]), verp["angry@remote.test"])
    _report(served, dsn("soft@remote.test", rfc_id, verp["soft@remote.test"], status="4.2.2"),
            verp["soft@remote.test"])

    def listed() -> dict[str, str] | None:
        r = admin.call("GET", "/api/suppressions")
        assert r.status_code == 200, r.text
        rows = {s["address"]: s["reason"] for s in r.json()["suppressions"]}
        return rows if len(rows) >= 2 else None

    assert wait_for("both reports on the list", listed) == {"gone@remote.test": "hard_bounce",
                                                            "angry@remote.test": "complaint"}
    soft = wait_for("the soft bounce recorded", lambda: next(
        (r for r in _mail(app, first)["recipients"] if r["address"] == "soft@remote.test"
         and r["delivery_state"] == "deferred"), None))
    assert soft["submission_state"] == "handed_over"
    rows = admin.call("GET", "/api/suppressions").json()["suppressions"]
    assert {r["address"] for r in rows} == {"gone@remote.test", "angry@remote.test"}  # still not the soft one
    assert all(r["send_id"] == first and r["event_id"] for r in rows)

    handler.received.clear()
    nxt = _post(app, served, "second", "Gone@remote.test", "angry@remote.test", "soft@remote.test", "new@remote.test")
    wait_for("the next mail handed over", lambda: _mail(app, nxt)["state"] == "handed_over")
    assert sorted(t.rcpt_tos[0] for t in handler.received) == ["new@remote.test", "soft@remote.test"]
    shown = {r["address"]: (r["submission_state"], r["suppression_reason"]) for r in _mail(app, nxt)["recipients"]}
    assert shown == {"Gone@remote.test": ("suppressed", "hard_bounce"),
                     "angry@remote.test": ("suppressed", "complaint"), "new@remote.test": ("handed_over", None),
                     "soft@remote.test": ("handed_over", None)}

    # Mail to listed addresses only is suppressed whole, and nothing reaches the smarthost.
    handler.received.clear()
    only = _post(app, served, "third", "gone@remote.test")
    assert _mail(app, only)["state"] == "suppressed"
    assert handler.received == []
