"""The audit chain: written with each act, verified, and a tampered row named by its sequence."""

from __future__ import annotations

from datetime import UTC
from typing import Any

from sqlalchemy import update
from typer.testing import CliRunner

from mailnode import audit
from mailnode.cli import app


def _env(node: Any) -> dict[str, str]:
    return {"MAILNODE_DATABASE_URL": node.settings.database_url}


def test_tampering_one_row_is_named_by_audit_verify(node: Any, installed: Any) -> None:
    runner = CliRunner()
    data_dir = str(node.settings.data_dir)
    ok = runner.invoke(app, ["audit", "verify", "--data-dir", data_dir, "--json"], env=_env(node))
    assert ok.exit_code == 0, ok.output
    with node.begin() as conn:
        conn.execute(update(audit.audit_entries).where(audit.audit_entries.c.seq == 3)
                     .values(detail='{"email":"mallory@example.test"}'))
    bad = runner.invoke(app, ["audit", "verify", "--data-dir", data_dir], env=_env(node))
    assert bad.exit_code == 1
    assert "BROKEN at seq 3" in bad.output


def test_entries_carry_actor_kind_and_chain(node: Any, installed: Any, api: Any) -> None:
    api.post("/api/teams", json={"name": "ops"}, headers={"Authorization": f"Bearer {installed.token}"})
    entries = api.get("/api/audit", headers={"Authorization": f"Bearer {installed.token}"}).json()["entries"]
    assert entries[0]["action"] == "team.created" and entries[0]["actor_kind"] == "user"
    assert {e["actor_kind"] for e in entries[1:]} == {"installer"}
    verified = api.post("/api/audit/verify", headers={"Authorization": f"Bearer {installed.token}"}).json()
    assert verified["verification"] == {"checked": len(entries), "intact": True, "broken_at": None}


def test_a_deleted_row_is_reported_as_a_gap(node: Any, installed: Any) -> None:
    from sqlalchemy import delete

    with node.begin() as conn:
        conn.execute(delete(audit.audit_entries).where(audit.audit_entries.c.seq == 2))
    with node.read() as conn:
        result = audit.verify(conn, installed.org_id)
    assert (result.intact, result.broken_seq, result.checked) == (False, 3, 1)
    assert "gap" in (result.reason or "")


def test_any_field_change_changes_the_hash() -> None:
    from datetime import datetime

    at = datetime(2026, 1, 1, tzinfo=UTC)
    base = audit.entry_hash(audit.GENESIS, 1, at, "usr_x", "user", "a", "s", "ok", None)
    assert base != audit.entry_hash(audit.GENESIS, 1, at, "usr_x", "user", "a", "s", "refused", None)
    assert base != audit.entry_hash(audit.GENESIS, 2, at, "usr_x", "user", "a", "s", "ok", None)


def test_actor_kind_follows_the_id() -> None:
    assert audit.actor_kind_of(None) == "node"
    assert audit.actor_kind_of("usr_01HZZZZZZZZZZZZZZZZZZZZZZZ") == "user"
    assert audit.actor_kind_of("btl_01HZZZZZZZZZZZZZZZZZZZZZZZ") == "butler"
    assert audit.actor_kind_of("app_01HZZZZZZZZZZZZZZZZZZZZZZZ") == "application"
    import pytest

    from mailnode.errors import MailnodeError

    with pytest.raises(MailnodeError) as e:
        audit.actor_kind_of("tm_01HZZZZZZZZZZZZZZZZZZZZZZZ")
    assert e.value.code == "E_ACTOR_UNKNOWN"


def test_the_chain_lock_key_is_a_stable_signed_64_bit_number_per_organisation() -> None:
    from mailnode.audit import chain_lock_key

    keys = {chain_lock_key(f"org_{n}") for n in range(1000)}
    assert len(keys) == 1000
    assert all(-(2 ** 63) <= k < 2 ** 63 for k in keys)
    assert chain_lock_key("org_1") == chain_lock_key("org_1")
