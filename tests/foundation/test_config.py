"""Settings: defaults, the TOML file, environment variables and flags, in that order of precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from mailnode.config import load_settings
from mailnode.errors import MailnodeError


def test_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for k in ("MAILNODE_DATABASE_URL", "MAILNODE_HTTP", "MAILNODE_TRANSPORT"):
        monkeypatch.delenv(k, raising=False)
    s = load_settings(tmp_path)
    assert (s.http, s.smtp, s.transport) == ("127.0.0.1:8025", "127.0.0.1:2525", "file")
    assert s.resolved_database_url == f"sqlite:///{(tmp_path / 'mailnode.db').resolve()}"
    assert s.evidence_dir == tmp_path / "evidence"


def test_file_then_environment_then_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mailnode.toml").write_text('http = "127.0.0.1:9000"\nsmtp = "127.0.0.1:9025"\ntransport = "smtp"\n')
    monkeypatch.setenv("MAILNODE_SMTP", "127.0.0.1:9026")
    monkeypatch.setenv("MAILNODE_TRUSTED_AUTHSERV_IDS", "MX.Example.org, mx2.example.org")
    s = load_settings(tmp_path, http="127.0.0.1:9001")
    assert (s.http, s.smtp, s.transport) == ("127.0.0.1:9001", "127.0.0.1:9026", "smtp")
    assert s.trusted_authserv_ids == ["mx.example.org", "mx2.example.org"]


def test_a_broken_file_and_a_bad_address_are_readable_errors(tmp_path: Path) -> None:
    (tmp_path / "mailnode.toml").write_text("http = \n")
    with pytest.raises(MailnodeError) as e:
        load_settings(tmp_path)
    assert e.value.code == "E_SETTING_MALFORMED" and "mailnode.toml" in e.value.fix
    (tmp_path / "mailnode.toml").unlink()
    with pytest.raises(MailnodeError) as e:
        _ = load_settings(tmp_path, http="localhost").http_hostport
    assert e.value.code == "E_SETTING_MALFORMED"


def test_a_wrongly_shaped_environment_value_is_a_readable_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAILNODE_TRANSPORT", "pigeon")
    with pytest.raises(MailnodeError) as e:
        load_settings(tmp_path)
    assert e.value.code == "E_SETTING_MALFORMED" and "docs/configuration.md" in e.value.fix
