"""``mailnode ingest``: every corpus file, as it is, through the receipt path; raw bytes kept exactly."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from typer.testing import CliRunner

from mailnode.cli import app
from mailnode.ingress import ingest_report
from tests.corpus import CORPUS


def test_every_corpus_file_ingests_as_it_is(api: Any, node: Any, installed: Any) -> None:
    files = sorted(str(p) for p in CORPUS.rglob("*") if p.is_file() and p.suffix in (".eml", ".txt")
                   and "LICENSES" not in p.parts)
    result = CliRunner().invoke(app, ["ingest", "--data-dir", str(node.settings.data_dir), "--mail-from",
                                      "sender@remote.test", "--rcpt-to", "support@example.test", "--json", *files],
                                env={"MAILNODE_DATABASE_URL": node.settings.database_url})
    assert result.exit_code == 0, result.output[-2000:]
    ingested = json.loads(result.output)["ingested"]
    assert [r["file"] for r in ingested] == files
    assert all(r["message_id"].startswith("msg_") for r in ingested)
    headers = {"Authorization": f"Bearer {installed.token}"}
    for r in ingested[::10]:
        raw = api.get(f"/api/messages/{r['message_id']}/raw", headers=headers).content
        with open(r["file"], "rb") as fh:
            assert raw == fh.read(), r["file"]
    # Each hand-made crash shape is recorded on the message (a parse error or a defect naming its header).
    cases = [json.loads(line) for line in (CORPUS / "malformed" / "handmade" / "cases.jsonl").read_text().splitlines()]
    by_name = {r["file"].rsplit("/", 1)[1]: r for r in ingested}
    for case in cases:
        got = api.get(f"/api/messages/{by_name[case['file']]['message_id']}", headers=headers).json()["message"]
        recorded = (got["parse_error"] or "") + " ".join(got["defects"])
        assert case["header"].lower() in recorded.lower(), (case["file"], recorded)


def test_ingest_refuses_an_address_of_no_mailbox(node: Any, installed: Any, tmp_path: Any) -> None:
    f = tmp_path / "m.eml"
    f.write_bytes(b"Subject: x\n\nhi\n")
    result = CliRunner().invoke(app, ["ingest", "--data-dir", str(node.settings.data_dir), "--mail-from", "a@b.test",
                                      "--rcpt-to", "nobody@example.test", str(f)],
                                env={"MAILNODE_DATABASE_URL": node.settings.database_url})
    assert result.exit_code == 1 and "E_NO_SUCH_RECIPIENT" in result.output


def test_ingest_shows_progress_and_what_each_file_became(node: Any, installed: Any, tmp_path: Any) -> None:
    files = [*sorted(str(p) for p in (CORPUS / "bounces").glob("is-not-bounce-0*.eml")),
             str(CORPUS / "bounces" / "lhost-postfix-13.eml")]
    result = CliRunner().invoke(app, ["ingest", "--data-dir", str(node.settings.data_dir), "--mail-from",
                                      "sender@remote.test", "--rcpt-to", "support@example.test", *files],
                                env={"MAILNODE_DATABASE_URL": node.settings.database_url, "COLUMNS": "200"})
    assert result.exit_code == 0, result.output[-2000:]
    n = len(files)
    assert re.search(rf"ingesting .* {n}/{n} [0-9.]+ files/s", result.stderr), result.stderr
    assert f"{n} ingested: 1 message, 1 delivery report, 1 unreadable" in result.stdout, result.stdout


@pytest.mark.parametrize(("row", "outcome"), [
    ({"error": "E_MESSAGE_TOO_BIG"}, "refused"),
    ({"report_kind": "delivery_status", "automated": "null_sender"}, "delivery report"),
    ({"report_kind": None, "parse_error": "bad header", "automated": "list_header"}, "unreadable"),
    ({"report_kind": None, "parse_error": None, "automated": "auto_submitted"}, "automated"),
    ({"report_kind": None, "parse_error": None, "automated": None}, "message"),
])
def test_what_a_file_became(row: dict[str, Any], outcome: str) -> None:
    assert ingest_report.became(row) == outcome


def test_the_tally_names_outcomes_in_order_and_leaves_out_empty_ones() -> None:
    rows = [{"error": "E_X"}, {"automated": "list_header"}, {}, {}]
    assert ingest_report.tally_line(rows) == "4 ingested: 2 message, 1 automated, 1 refused"
    assert ingest_report.tally_line([]) == "0 ingested: nothing"
