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


def test_a_wrongly_shaped_environment_value_is_a_readable_error(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAILNODE_TRANSPORT", "pigeon")
    with pytest.raises(MailnodeError) as e:
        load_settings(tmp_path)
    assert e.value.code == "E_SETTING_MALFORMED" and "docs/configuration.md" in e.value.fix


def test_a_mistyped_environment_variable_stops_start_up_naming_the_closest_setting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAILNODE_SMTP_RELEY", "relay.example.net:587")
    with pytest.raises(MailnodeError) as e:
        load_settings(tmp_path)
    assert e.value.code == "E_SETTING_UNKNOWN"
    assert e.value.detail["unknown"] == ["MAILNODE_SMTP_RELEY"]
    assert e.value.detail["suggestions"]["MAILNODE_SMTP_RELEY"][0] == "MAILNODE_SMTP_RELAY"
    assert "MAILNODE_SMTP_RELAY" in e.value.what and "MAILNODE_SMTP_RELAY" in e.value.fix


def test_test_suite_and_client_variables_are_not_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MAILNODE_TEST_DB", "MAILNODE_TEST_PG_URL", "MAILNODE_TEST_REQUIRE_PG", "MAILNODE_TEST_ANYTHING",
                 "MAILNODE_TOKEN", "MAILNODE_URL"):
        monkeypatch.setenv(name, "x")
    monkeypatch.setenv("MAILNODE_CONFIG_FILE", str(tmp_path / "absent.toml"))
    assert load_settings(tmp_path).http == "127.0.0.1:8025"


def test_an_unknown_key_in_the_settings_file_stops_start_up(tmp_path: Path) -> None:
    (tmp_path / "mailnode.toml").write_text('transport = "smtp"\nsmtp_tsl = "required"\n')
    with pytest.raises(MailnodeError) as e:
        load_settings(tmp_path)
    assert e.value.code == "E_SETTING_UNKNOWN" and e.value.detail["unknown"] == ["smtp_tsl"]
    assert e.value.detail["suggestions"]["smtp_tsl"][0] == "smtp_tls"


def test_mailnode_serve_refuses_to_start_with_a_mistyped_variable(tmp_path: Path) -> None:
    import os
    import socket
    import subprocess
    import sys

    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    env = {**os.environ, "MAILNODE_HTPP": "127.0.0.1:9999"}
    # Own ports, so a regression (a node that starts) disturbs nobody before the timeout ends it.
    done = subprocess.run([sys.executable, "-m", "mailnode.cli", "serve", "--data-dir", str(tmp_path),
                           "--http", f"127.0.0.1:{ports[0]}", "--smtp", f"127.0.0.1:{ports[1]}"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "E_SETTING_UNKNOWN" in done.stderr and "MAILNODE_HTTP" in done.stderr
