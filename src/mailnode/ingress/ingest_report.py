"""What ``mailnode ingest`` shows while it works and at the end: a progress bar and what each file became.

``became`` and ``tally_line`` are pure (a result row in, words out); ``progress`` draws rich's bar (files done
of all, files a second, time elapsed) on a console, standard error by default, so the table on standard
output stays what a script reads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, Task, TextColumn, TimeElapsedColumn
from rich.text import Text

#: The outcomes ``became`` names, in the order ``tally_line`` lists them.
OUTCOMES = ("message", "delivery report", "automated", "unreadable", "refused")


def became(result: dict[str, Any]) -> str:
    """What one ingested receipt became, one of ``OUTCOMES`` (pure).

    ``result`` is a row of ``mailnode ingest --json``'s ``ingested``: ``refused`` when it holds ``error``
    (an ``E_`` code), else ``delivery report`` when a report kind was read, ``unreadable`` when a parse
    error is recorded, ``automated`` when the message was classed automated, else ``message``."""
    if "error" in result:
        return "refused"
    if result.get("report_kind"):
        return "delivery report"
    if result.get("parse_error"):
        return "unreadable"
    if result.get("automated"):
        return "automated"
    return "message"


def tally_line(results: Iterable[dict[str, Any]]) -> str:
    """``"7 ingested: 4 message, 2 automated, 1 refused"`` for the ingest ``results`` (pure); outcomes
    with no file are left out, in ``OUTCOMES`` order."""
    counts = Counter(became(r) for r in results)
    parts = [f"{counts[o]} {o}" for o in OUTCOMES if counts[o]]
    return f"{sum(counts.values())} ingested: {', '.join(parts) if parts else 'nothing'}"


class _Rate(TextColumn):
    """Files a second so far (rich's own speed column shows bytes)."""

    def __init__(self) -> None:
        super().__init__("")

    def render(self, task: Task) -> Text:
        """``12.3 files/s``, or ``- files/s`` before the first file is done."""
        speed = task.finished_speed or task.speed
        return Text("- files/s" if speed is None else f"{speed:.1f} files/s", style="progress.data.speed")


class Advance(Protocol):
    """Called once a file is done, with its name."""

    def __call__(self, name: str) -> None:
        """Advance the bar by one file and show ``name`` as the last one done."""


@contextmanager
def progress(total: int, console: Console | None = None) -> Iterator[Advance]:
    """A progress bar over ``total`` files on ``console`` (default: standard error) while the block runs;
    yields the function to call after each file. The bar stays on screen at its final state."""
    bar = Progress(TextColumn("ingesting"), BarColumn(), MofNCompleteColumn(), _Rate(), TimeElapsedColumn(),
                   TextColumn("{task.fields[last]}", style="dim"),
                   console=console if console is not None else Console(stderr=True))
    task = bar.add_task("ingest", total=total, last="")

    def advance(name: str) -> None:
        bar.update(task, advance=1, last=name)

    with bar:
        yield advance
