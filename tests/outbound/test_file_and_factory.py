"""The file transport's atomic write and failure, and choosing a transport from settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from mailnode.config import Settings
from mailnode.errors import MailnodeError
from mailnode.transports import TRANSPORTS, make_transport
from mailnode.transports.base import SubmitState
from mailnode.transports.file import FileTransport
from mailnode.transports.resend import ResendTransport
from mailnode.transports.smtp import SmtpTransport

from .conftest import make_message, make_submission

RID = "srp_01JDKZ8Q4M6V8R2T0W3X5Y7Z9B"


async def test_file_copy_is_complete_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    sub = make_submission(make_message(), "ann@example.test", RID)
    outcome = await FileTransport(tmp_path / "outbox").submit(sub)
    assert (outcome.state, outcome.transport_message_id) == (SubmitState.HANDED_OVER, f"{RID}.eml")
    assert sorted(p.name for p in (tmp_path / "outbox").iterdir()) == [f"{RID}.eml"]
    data = (tmp_path / "outbox" / f"{RID}.eml").read_bytes()
    assert data.endswith(sub.rendered)
    assert data.startswith(f"X-Envelope-From: <bounces+{RID}@bounces.acme.test>\r\n".encode())


async def test_resubmitting_replaces_the_same_file(tmp_path: Path) -> None:
    transport = FileTransport(tmp_path)
    sub = make_submission(make_message(), "ann@example.test", RID)
    await transport.submit(sub)
    await transport.submit(sub)
    assert [p.name for p in tmp_path.iterdir()] == [f"{RID}.eml"]


async def test_unwritable_outbox_is_throttled_not_raised(tmp_path: Path) -> None:
    blocker = tmp_path / "outbox"
    blocker.write_text("a file where the directory should be")
    outcome = await FileTransport(blocker).submit(make_submission(make_message(), "ann@example.test", RID))
    assert (outcome.state, outcome.error_name) == (SubmitState.THROTTLED, "write_failed")
    assert str(blocker) in outcome.detail


@pytest.mark.parametrize(
    ("overrides", "cls"),
    [
        ({"transport": "file"}, FileTransport),
        ({"transport": "smtp", "smtp_relay": "127.0.0.1:2526"}, SmtpTransport),
        ({"transport": "resend", "resend_api_key": "re_x", "resend_base_url": "http://127.0.0.1:9"}, ResendTransport),
    ],
)
async def test_make_transport_chooses_by_name(tmp_path: Path, overrides: dict, cls: type) -> None:
    transport = make_transport(Settings(data_dir=tmp_path, **overrides))
    assert isinstance(transport, cls)
    assert transport.capabilities.name == overrides["transport"]
    await transport.aclose()


def test_file_transport_writes_into_the_data_directory_outbox(tmp_path: Path) -> None:
    transport = make_transport(Settings(data_dir=tmp_path))
    assert isinstance(transport, FileTransport)
    assert transport._outbox == tmp_path / "outbox"


def test_unknown_transport_name_fails_at_start_up(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path).model_copy(update={"transport": "pigeon"})
    with pytest.raises(MailnodeError) as caught:
        make_transport(settings)
    assert (caught.value.code, caught.value.detail["value"]) == ("E_SETTING_MALFORMED", "pigeon")
    assert set(TRANSPORTS) == {"file", "smtp", "resend"}


def test_resend_without_a_key_fails_at_start_up(tmp_path: Path) -> None:
    with pytest.raises(MailnodeError) as caught:
        make_transport(Settings(data_dir=tmp_path, transport="resend", resend_api_key=""))
    assert caught.value.code == "E_SETTING_MISSING"


def test_malformed_relay_fails_at_start_up(tmp_path: Path) -> None:
    with pytest.raises(MailnodeError) as caught:
        make_transport(Settings(data_dir=tmp_path, transport="smtp", smtp_relay="nowhere"))
    assert caught.value.code == "E_SETTING_MALFORMED"
