"""``mailnode.logs``: events split into fields, one line per record, handled conditions without tracebacks."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from mailnode import logs
from mailnode.config import Settings
from mailnode.db.migrate import head_revisions
from mailnode.node import Node


@pytest.mark.parametrize(("message", "expected"), [
    ("send.claim_lost manifest=snd_1 token=7", {"event": "send.claim_lost", "manifest": "snd_1", "token": "7"}),
    ("butler.release_not_told run=run_1: no durable executor in this process",
     {"event": "butler.release_not_told", "run": "run_1", "detail": "no durable executor in this process"}),
    ("parse.failed: the message structure could not be read",
     {"event": "parse.failed", "detail": "the message structure could not be read"}),
    ("butler.run_refused run=r1 reason=pot found x", {"event": "butler.run_refused", "run": "r1", "reason": "pot",
                                                      "detail": "found x"}),
    ("E_INTERNAL err_1 on GET /api/x", {"event": "E_INTERNAL", "detail": "err_1 on GET /api/x"}),
    ("materialise.scan found=0 level=3", {"event": "materialise.scan", "found": "0", "level_": "3"}),
    ("Started server process [1]", {"detail": "Started server process [1]"}),
])
def test_an_event_splits_into_its_fields(message: str, expected: dict[str, str]) -> None:
    assert logs.parse_event(message) == expected


@pytest.mark.parametrize(("libraries", "level"), [("debug", logging.DEBUG), ("info", logging.INFO),
                                                  ("warning", logging.WARNING), ("error", logging.ERROR)])
def test_library_levels(libraries: str, level: int) -> None:
    assert logs.library_level(libraries) == level


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """The stream given to ``setup``; the root logger's handlers and levels put back after."""
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level,
             {n: logging.getLogger(n).level for n in (*logs.LIBRARY_LOGGERS, *logs.ALWAYS_WARNING_LOGGERS)})
    yield stream
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    for name, level in saved[2].items():
        logging.getLogger(name).setLevel(level)


def _raise() -> None:
    raise IndexError("list index out of range")


def test_text_lines_name_libraries_and_keep_tracebacks_for_errors_only(captured: io.StringIO) -> None:
    logs.setup("text", "warning", captured)
    logging.getLogger("mailnode.test").info("thing.done id=%s", "x1")
    logging.getLogger("dbos").info("To view and manage workflows, connect to DBOS Conductor")
    logging.getLogger("mail.log").info("Connection lost during _handle_client()")
    logging.getLogger("uvicorn.error").warning("uvicorn says")
    try:
        _raise()
    except IndexError:
        logging.getLogger("mailnode.test").warning("thing.unreadable id=%s", "x2", exc_info=True)
        logging.getLogger("flufl.bounce").exception("Exception in detector: <class 'Yale'>")
        logging.getLogger("mailnode.test").exception("thing.fault id=%s", "x3")
    lines = captured.getvalue().splitlines()
    assert lines[0].endswith("INFO    thing.done id=x1")
    assert lines[1].endswith("WARNING [uvicorn] uvicorn says")
    assert lines[2].endswith("WARNING thing.unreadable id=x2 (IndexError: list index out of range)")
    assert lines[3].endswith("ERROR   thing.fault id=x3") and lines[4] == "Traceback (most recent call last):"
    assert captured.getvalue().count("Traceback") == 1 and "Conductor" not in captured.getvalue()


def test_libraries_at_debug_show_a_handled_library_exception_in_one_line(captured: io.StringIO) -> None:
    logs.setup("text", "debug", captured)
    try:
        _raise()
    except IndexError:
        logging.getLogger("flufl.bounce").exception("Exception in detector: <class 'Yale'>")
    [line] = captured.getvalue().splitlines()
    assert "DEBUG   [flufl] Exception in detector: <class 'Yale'>: IndexError: list index out of range" in line


def test_json_is_one_object_per_line_with_the_event_fields(captured: io.StringIO) -> None:
    logs.setup("json", "warning", captured)
    logs.setup("json", "warning", captured)  # a second setup replaces the handler: still one line per record
    logging.getLogger("mailnode.test").info("thing.done id=%s: all of it", "x1")
    try:
        _raise()
    except IndexError:
        logging.getLogger("mailnode.test").exception("thing.fault")
    first, second = (json.loads(line) for line in captured.getvalue().splitlines())
    assert {k: first[k] for k in ("level", "logger", "event", "id", "detail")} == {
        "level": "info", "logger": "mailnode.test", "event": "thing.done", "id": "x1", "detail": "all of it"}
    assert second["event"] == "thing.fault" and "IndexError" in second["exception"]


def test_migrations_on_start_say_which_revision_they_apply(tmp_path: Path, blank_database_url: str,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="mailnode.migrate"):
        Node.open(Settings(data_dir=tmp_path / "node", database_url=blank_database_url)).close()
    said = [r.getMessage() for r in caplog.records if r.name == "mailnode.migrate"]
    heads = ",".join(head_revisions())
    assert said[0] == f"migrate.upgrading from=nothing to={heads}"
    assert said[1] == "migrate.applied revision=0001_foundation up"
    assert said[-1] == f"migrate.applied revision={heads} up"
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="mailnode.migrate"):
        Node.open(Settings(data_dir=tmp_path / "node", database_url=blank_database_url)).close()
    assert [r for r in caplog.records if r.name == "mailnode.migrate"] == []  # at head: nothing to say
