"""A message delivered with ``mailnode ingest`` (materialised without the durable executor) still gets its
Butler runs: ``serve``'s scan runs the receipt's workflow, whose trigger was owed."""

from __future__ import annotations

import json
import time
from pathlib import Path

from typer.testing import CliRunner

from mailnode.cli import app
from mailnode.ingress import workflows
from tests.butler.runs.conftest import MAILBOX, World, message, program


def test_an_ingested_message_is_triggered_by_the_scan_once(world: World, tmp_path: Path) -> None:
    _bid, vid = world.publish(program([{"id": "done", "type": "stop", "reason": "seen"}], "done"))
    eml = tmp_path / "m.eml"
    eml.write_bytes(message(subject="Imported"))
    result = CliRunner().invoke(app, ["ingest", "--data-dir", str(world.node.settings.data_dir), "--mail-from",
                                      "customer@remote.test", "--rcpt-to", MAILBOX, "--json", str(eml)],
                                env={"MAILNODE_DATABASE_URL": world.node.settings.database_url})
    assert result.exit_code == 0, result.output
    mid = json.loads(result.output)["ingested"][0]["message_id"]
    assert world.runs(mid) == []  # ingest materialised it; the trigger is owed
    assert workflows.scan_unmaterialised() == 1
    run = world.wait_run(mid)
    assert run.id == f"{vid}-{mid}" and (run.state, run.outcome_reason) == ("stopped", "seen")
    # Once its workflow finished, the receipt leaves the scan.
    deadline = time.monotonic() + 10
    while workflows.scan_unmaterialised() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert workflows.scan_unmaterialised() == 0
    assert len(world.runs(mid)) == 1
