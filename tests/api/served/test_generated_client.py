"""The OpenAPI document generates a working client: ``openapi-python-client`` builds a package from the
document a served node publishes (with no warning), and that package, imported, sends a realtime mail
through ``POST /api/mail`` to a real aiosmtpd smarthost and reads it back with ``GET /api/mail/{id}``,
through the generated models only."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiosmtpd.controller import Controller

from tests.support.served import Served, free_port, served_env

pytestmark = pytest.mark.slow

#: The generated package's name (the output directory with ``--meta none``).
PACKAGE = "mailnode_generated_client"


@dataclass
class Smarthost:
    """An aiosmtpd handler keeping every message it accepts, with its envelope recipients."""

    port: int = 0
    received: list[tuple[list[str], Message]] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        """Keep the message and accept it."""
        self.received.append((list(envelope.rcpt_tos), message_from_bytes(envelope.original_content
                                                                          or envelope.content)))
        return "250 2.0.0 Ok: queued"


@pytest.fixture
def smarthost() -> Iterator[Smarthost]:
    """A real SMTP smarthost on loopback."""
    handler = Smarthost(port=free_port())
    controller = Controller(handler, hostname="127.0.0.1", port=handler.port)
    controller.start()
    yield handler
    controller.stop()


@pytest.fixture
def served(tmp_path: Path, database_url: str, smarthost: Smarthost) -> Iterator[Served]:
    """A started node whose transport is the smarthost."""
    env = served_env(database_url, MAILNODE_TRANSPORT="smtp", MAILNODE_SMTP_RELAY=f"127.0.0.1:{smarthost.port}",
                     MAILNODE_SMTP_TLS="none")
    node = Served(tmp_path / "node", env)
    node.start()
    yield node
    node.stop()


def generate(document: bytes, where: Path) -> Any:
    """Run the generator on ``document`` into ``where``/``PACKAGE``; fail on any warning; import it."""
    path = where / "openapi.json"
    path.write_bytes(document)
    # The generator reads only JSON, text and binary bodies: the raw message's message/rfc822 (RFC 5322 bytes)
    # and the suppression list's text/csv are read as binary, as its documented option says; the document
    # keeps the true types.
    config = where / "generator.yaml"
    config.write_text("content_type_overrides:\n  message/rfc822: application/octet-stream\n"
                      "  text/csv: application/octet-stream\n")
    out = subprocess.run([sys.executable, "-m", "openapi_python_client", "generate", "--path", str(path),
                          "--output-path", str(where / PACKAGE), "--meta", "none", "--config", str(config)],
                         capture_output=True, text=True, timeout=300, check=False,
                         # The generator formats its output with ruff, installed beside this interpreter.
                         env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"})
    said = out.stdout + out.stderr
    assert out.returncode == 0, said
    assert "warning" not in said.lower() and "unable to" not in said.lower(), said
    sys.path.insert(0, str(where))
    try:
        return importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(where))


def test_a_generated_client_sends_realtime_mail_and_reads_its_status(
        served: Served, smarthost: Smarthost, tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{served.http}"
    sdk = generate(httpx.get(f"{base}/openapi.json", timeout=30).content, tmp_path)
    made = served.call("POST", "/api/apps", json={"name": "billing"})
    served.call("POST", "/api/access", json={"subject_id": made["application"]["id"], "relation": "send.propose",
                                             "object_id": served.installed["mailbox_id"]})
    post_mail = importlib.import_module(f"{PACKAGE}.api.mail.post_mail_api_mail_post")
    get_mail = importlib.import_module(f"{PACKAGE}.api.mail.get_mail_api_mail_send_id_get")
    models = importlib.import_module(f"{PACKAGE}.models")
    client = sdk.AuthenticatedClient(base_url=base, token=made["token"])

    body = models.MailIn.from_dict({"mailbox_id": served.installed["mailbox_id"], "class": "realtime",
                                    "to": ["reader@remote.test"], "subject": "Your code",
                                    "text": "Your code is 481 516."})
    sent = post_mail.sync_detailed(client=client, body=body, idempotency_key="code-481516")
    assert sent.status_code == 200, sent.content
    answer = sent.parsed
    assert isinstance(answer, models.MailAnswer)
    assert answer.mail.state == models.SendState.HANDED_OVER
    assert answer.mail.mail_class == models.MailClass.REALTIME
    [(rcpts, message)] = smarthost.received
    assert rcpts == ["reader@remote.test"] and message["Subject"] == "Your code"

    read = get_mail.sync(answer.mail.id, client=client)
    assert isinstance(read, models.MailAnswer)
    assert read.mail.id == answer.mail.id and read.mail.idempotency_key == "code-481516"
    [recipient] = read.mail.recipients
    assert (recipient.address, recipient.kind.value, recipient.submission_state) == (
        "reader@remote.test", "to", "handed_over")

    # An error is the node's body, typed too: a mail that is not the caller's.
    missing = get_mail.sync_detailed("snd_" + "0" * 26, client=client)
    assert missing.status_code == 404
    assert isinstance(missing.parsed, models.ErrorBody) and missing.parsed.error == "E_NO_SUCH_MAIL"
