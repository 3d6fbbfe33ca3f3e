"""``mailnode suppressions list|add|remove|import|export``: the list from the shell, audited as the installer; a
removal needs a reason, an import with a bad line writes nothing, and the export imports back unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from mailnode.cli import app

runner = CliRunner()


def _run(args: list[str], settings: Any) -> Any:
    return runner.invoke(app, [*args, "--data-dir", str(settings.data_dir)],
                         env={"MAILNODE_DATABASE_URL": settings.database_url})


def test_the_suppressions_commands(settings: Any, tmp_path: Path) -> None:
    init = _run(["init", "--org", "Acme", "--domain", "acme.test", "--admin-email", "ann@acme.test", "--json"],
                settings)
    assert init.exit_code == 0, init.output
    added = _run(["suppressions", "add", "Gone@Remote.TEST", "--note", "asked to stop", "--json"], settings)
    assert added.exit_code == 0, added.output
    row = json.loads(added.output)["suppression"]
    assert (row["address"], row["reason"], row["added_by"]) == ("gone@remote.test", "manual", None)

    bad = tmp_path / "bad.csv"
    bad.write_text("address,reason\nok@remote.test,complaint\nnot an address,manual\n")
    refused = _run(["suppressions", "import", str(bad)], settings)
    assert refused.exit_code == 1 and "E_SUPPRESSION_IMPORT_BAD_LINE" in refused.output
    assert "Line 3" in refused.output
    good = tmp_path / "good.csv"
    good.write_text("address,reason\nok@remote.test,complaint\ngone@remote.test,hard_bounce\n")
    imported = _run(["suppressions", "import", str(good), "--json"], settings)
    assert imported.exit_code == 0 and json.loads(imported.output) == {"added": 1, "already": 1}

    listed = json.loads(_run(["suppressions", "list", "--json"], settings).output)["suppressions"]
    assert sorted((s["address"], s["reason"]) for s in listed) == [("gone@remote.test", "manual"),
                                                                  ("ok@remote.test", "complaint")]
    found = json.loads(_run(["suppressions", "list", "--search", "ok", "--json"], settings).output)
    assert [s["address"] for s in found["suppressions"]] == ["ok@remote.test"]
    by_reason = json.loads(_run(["suppressions", "list", "--reason", "manual", "--json"], settings).output)
    assert [s["address"] for s in by_reason["suppressions"]] == ["gone@remote.test"]
    assert _run(["suppressions", "list", "--reason", "nope"], settings).exit_code == 1

    exported = _run(["suppressions", "export"], settings)
    assert exported.exit_code == 0
    assert exported.output.splitlines()[0].startswith("address,reason,created_at")
    assert sum(1 for line in exported.output.splitlines()[1:] if line) == 2

    no_reason = _run(["suppressions", "remove", "gone@remote.test"], settings)
    assert no_reason.exit_code == 1 and "E_SUPPRESSION_REMOVAL_REASON_MISSING" in no_reason.output
    removed = _run(["suppressions", "remove", "gone@remote.test", "--reason", "fixed"], settings)
    assert removed.exit_code == 0 and "removed gone@remote.test" in removed.output
    missing = _run(["suppressions", "remove", "gone@remote.test", "--reason", "fixed"], settings)
    assert missing.exit_code == 1 and "E_NO_SUCH_SUPPRESSION" in missing.output
    unreadable = _run(["suppressions", "import", str(tmp_path / "absent.csv")], settings)
    assert unreadable.exit_code == 1 and "E_SUPPRESSION_IMPORT_UNREADABLE" in unreadable.output

    from sqlalchemy import select

    from mailnode.audit import audit_entries
    from mailnode.node import Node

    node = Node.open(settings)
    try:
        with node.read() as conn:
            entries = conn.execute(select(audit_entries.c.action, audit_entries.c.actor_kind)
                                   .where(audit_entries.c.action.like("suppression.%"))
                                   .order_by(audit_entries.c.seq)).all()
    finally:
        node.close()
    assert [tuple(e) for e in entries] == [("suppression.added", "installer"), ("suppression.imported", "installer"),
                                           ("suppression.removed", "installer")]
