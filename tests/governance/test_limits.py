"""Breaker limits have a writer (spec/outbound.md A17; issue 17 item 4): administrators read and change them
through the API and the CLI, audited, each bounded and validated, with the defaults and their sources shown;
a change moves the breakers' reading at once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from mailnode import budgets
from mailnode.audit import audit_entries
from mailnode.cli import app as cli_app
from mailnode.config import Settings
from mailnode.errors import MailnodeError
from mailnode.governance import limits
from mailnode.governance.breakers import LIMIT_COLUMNS
from tests.governance.conftest import World

runner = CliRunner()


def test_every_limit_column_has_a_spec_with_its_default_and_bounds() -> None:
    assert tuple(limits.SPECS) == LIMIT_COLUMNS
    for spec in limits.SPECS.values():
        assert spec.minimum <= spec.default <= spec.maximum and spec.source.startswith("budgets.")


@pytest.mark.parametrize(("changes", "code"), [
    ({"volume_max_recipients": 800}, None),
    ({"volume_max_recipients": None}, None),  # back to the default
    ({"bounce_max_percent": 1, "complaint_max_percent": 99, "bounce_min_observations": 1}, None),
    ({"volume_window_seconds": 60}, "E_REQUEST_INVALID"),  # windows are node-wide
    ({"volume_max_recipients": True}, "E_BREAKER_LIMIT_NOT_INTEGER"),
    ({"volume_max_recipients": "800"}, "E_BREAKER_LIMIT_NOT_INTEGER"),
    ({"bounce_max_percent": 2.5}, "E_BREAKER_LIMIT_NOT_INTEGER"),
    ({"volume_max_recipients": 0}, "E_BREAKER_LIMIT_OUT_OF_RANGE"),  # that would stop all mail
    ({"volume_max_recipients": budgets.BREAKER_VOLUME_MAX_RECIPIENTS_MAX + 1}, "E_BREAKER_LIMIT_OUT_OF_RANGE"),
    ({"bounce_max_percent": 100}, "E_BREAKER_LIMIT_OUT_OF_RANGE"),  # could never trip
    ({"complaint_max_percent": 0}, "E_BREAKER_LIMIT_OUT_OF_RANGE"),
    ({"complaint_min_observations": 0}, "E_BREAKER_LIMIT_OUT_OF_RANGE"),
    ({"bounce_min_observations": -5}, "E_BREAKER_LIMIT_OUT_OF_RANGE"),
])
def test_check_changes(changes: dict[str, Any], code: str | None) -> None:
    if code is None:
        assert limits.check_changes(changes) == changes
        return
    with pytest.raises(MailnodeError) as raised:
        limits.check_changes(changes)
    assert raised.value.code == code and raised.value.status == 422 and raised.value.fix


def _shown(body: dict[str, Any]) -> dict[str, Any]:
    return {item["name"]: item for item in body["breaker_limits"]["limits"]}


def _changed(world: World) -> list[Any]:
    with world.node.read() as conn:
        return list(conn.execute(select(audit_entries).where(audit_entries.c.action == "breaker_limits.changed")
                                 .order_by(audit_entries.c.seq)).all())


def test_administrators_read_and_change_the_limits_and_the_breakers_follow(api: Any, world: World) -> None:
    got = api.get("/api/breaker-limits", headers=world.admin.headers)
    assert got.status_code == 200, got.text
    volume = _shown(got.json())["volume_max_recipients"]
    assert volume == {"name": "volume_max_recipients", "value": 500, "default": 500, "overridden": False,
                      "source": limits.SPECS["volume_max_recipients"].source, "unit": "recipients per hour",
                      "minimum": 1, "maximum": budgets.BREAKER_VOLUME_MAX_RECIPIENTS_MAX}

    set_ = api.patch("/api/breaker-limits", json={"volume_max_recipients": 1, "bounce_max_percent": 10},
                     headers=world.admin.headers)
    assert set_.status_code == 200, set_.text
    shown = _shown(set_.json())
    assert (shown["volume_max_recipients"]["value"], shown["volume_max_recipients"]["overridden"]) == (1, True)
    assert shown["bounce_max_percent"]["value"] == 10 and not shown["complaint_max_percent"]["overridden"]
    # The breakers read the new limit at once: two recipients handed over trip a limit of one.
    world.handed_over(2)
    readings = {r["breaker"]: r for r in api.get("/api/breakers", headers=world.admin.headers).json()["breakers"]}
    assert readings["volume"]["limit"] == 1 and readings["volume"]["tripped"] is True

    reset = api.patch("/api/breaker-limits", json={"volume_max_recipients": None}, headers=world.admin.headers)
    assert _shown(reset.json())["volume_max_recipients"]["value"] == 500
    assert _shown(reset.json())["bounce_max_percent"]["value"] == 10, "an absent limit is unchanged"
    [first, second] = _changed(world)
    detail = json.loads(first.detail) if isinstance(first.detail, str) else first.detail
    assert first.actor_id == world.admin.id and detail["before"]["volume_max_recipients"] is None
    assert detail["after"]["volume_max_recipients"] == 1
    detail = json.loads(second.detail) if isinstance(second.detail, str) else second.detail
    assert detail["after"]["volume_max_recipients"] is None


def test_refusals_write_nothing_and_say_why(api: Any, world: World) -> None:
    out = api.patch("/api/breaker-limits", json={"volume_max_recipients": 0}, headers=world.admin.headers)
    assert out.status_code == 422 and out.json()["error"] == "E_BREAKER_LIMIT_OUT_OF_RANGE"
    assert "domain pause" in out.json()["fix"]
    text = api.patch("/api/breaker-limits", json={"bounce_max_percent": "10"}, headers=world.admin.headers)
    assert text.status_code == 422
    unknown = api.patch("/api/breaker-limits", json={"volume_window_seconds": 60}, headers=world.admin.headers)
    assert unknown.status_code == 422
    bob = world.person("bob@example.test", ("send.propose", world.i.mailbox_id))
    assert api.get("/api/breaker-limits", headers=bob.headers).json()["error"] == "E_NOT_AN_ADMINISTRATOR"
    refused = api.patch("/api/breaker-limits", json={"volume_max_recipients": 9}, headers=bob.headers)
    assert refused.status_code == 403
    assert _changed(world) == []
    assert not any(i["overridden"] for i in api.get("/api/breaker-limits", headers=world.admin.headers)
                   .json()["breaker_limits"]["limits"])


def test_the_cli_shows_and_changes_the_limits_as_the_installer(settings: Settings, world: World) -> None:
    env = {"MAILNODE_DATABASE_URL": settings.database_url}
    dd = ["--data-dir", str(settings.data_dir)]
    shown = runner.invoke(cli_app, ["breakers", "limits", *dd], env=env)
    assert shown.exit_code == 0, shown.output
    assert "volume_max_recipients: 500 recipients per hour (default; default 500 from budgets." in shown.output
    changed = runner.invoke(cli_app, ["breakers", "set-limits", "--complaint-max-percent", "3", "--json", *dd],
                            env=env)
    assert changed.exit_code == 0, changed.output
    after = {i["name"]: i for i in json.loads(changed.output)["limits"]}
    assert after["complaint_max_percent"]["value"] == 3 and after["complaint_max_percent"]["overridden"]
    refused = runner.invoke(cli_app, ["breakers", "set-limits", "--bounce-max-percent", "100", *dd], env=env)
    assert refused.exit_code == 1 and "E_BREAKER_LIMIT_OUT_OF_RANGE" in refused.output
    reset = runner.invoke(cli_app, ["breakers", "set-limits", "--reset", "complaint_max_percent", "--json", *dd],
                          env=env)
    assert reset.exit_code == 0, reset.output
    assert not any(i["overridden"] for i in json.loads(reset.output)["limits"])
    [first, _] = _changed(world)
    assert first.actor_id is None and first.actor_kind == "installer"
