"""``mailnode demo [--data-dir DIR] [--keep-running]``: run the demo and print its report.

Exit codes: 0 when every checked outcome held, 1 when one differed (``E_DEMO_STEP_FAILED``, printed in
the four-part form with the step's name) or a command it ran failed. The temporary data directory is
removed after a successful run and kept, with the node's log, after a failed one.
"""

from __future__ import annotations

import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from mailnode import budgets
from mailnode.errors import MailnodeError


def register(app: typer.Typer) -> None:
    """Add the ``demo`` command to ``app`` (the ``mailnode`` Typer application)."""

    @app.command("demo")
    def demo(
        data_dir: Annotated[Path | None, typer.Option(
            "--data-dir", help="Run the demo node in this directory (must not hold a node yet); default: a new "
                               "temporary directory, removed afterwards.")] = None,
        keep_running: Annotated[bool, typer.Option(
            "--keep-running", help="Leave the node and the smarthost up after the report, print how to reach "
                                   "them, and stop on Ctrl-C.")] = False,
    ) -> None:
        """Show the main job on real mail: Butlers, a release, the smarthost, breakers, doctor (checked)."""
        raise typer.Exit(run_demo(data_dir, keep_running, Console(width=max(Console().width,
                                                                            budgets.DEMO_REPORT_MIN_WIDTH))))


def run_demo(data_dir: Path | None, keep_running: bool, console: Console) -> int:
    """Run every step; returns the exit code (0 all outcomes held, 1 one differed or a step failed)."""
    from mailnode.demo import report, scenario
    from mailnode.demo.process import DemoNode, free_port
    from mailnode.demo.sink import Sink

    temporary = data_dir is None
    directory = Path(tempfile.mkdtemp(prefix="mailnode-demo-")) if data_dir is None else data_dir.resolve()
    sink_port = free_port()
    report.doing(console, f"mailnode demo: starting a smarthost (an aiosmtpd sink) on 127.0.0.1:{sink_port}; "
                          f"the node's data goes to {directory}")
    sink = Sink(sink_port).start()
    node = DemoNode(directory, sink.port)
    failed = True
    try:
        outcome = scenario.run(node, sink, console)
        console.print()
        console.print(f"[bold green]demo passed[/bold green]: {outcome.checks} outcomes checked, all as expected.")
        failed = False
        if keep_running:
            _keep_running(console, node, sink, outcome)
    except MailnodeError as exc:
        console.print()
        console.print("[bold red]demo FAILED[/bold red]", highlight=False)
        console.print(exc.render(), markup=False, highlight=False)
    finally:
        node.stop()
        sink.stop()
        if failed:
            console.print(f"The data directory and the node's log are kept in {directory} (serve.log).",
                          highlight=False)
        elif temporary:
            shutil.rmtree(directory)
    return 1 if failed else 0


def _keep_running(console: Console, node: Any, sink: Any, outcome: Any) -> None:
    """Print how to talk to the node, then wait for SIGINT or SIGTERM."""
    org = outcome.org
    base = node.base_url
    console.print()
    console.rule("[bold]The node keeps running[/bold]", align="left")
    lines = [
        f"API          {base}   (OpenAPI at {base}/docs)",
        f"SMTP         127.0.0.1:{node.smtp_port}   (send mail to alice@example.com or billing@example.com)",
        f"smarthost    127.0.0.1:{sink.port}   (the demo's sink; released mail goes there)",
        f"data dir     {node.data_dir}",
        f"admin token  {org.admin_token}",
        f"Dana's token {org.person_token}",
        "",
        "Try:",
        f"  curl -H 'Authorization: Bearer {org.admin_token}' {base}/api/sends?state=awaiting",
        f"  curl -H 'Authorization: Bearer {org.admin_token}' {base}/api/butler-runs",
        f"  mailnode doctor --data-dir {node.data_dir}",
        f"  mailnode butler list --url {base} --token {org.admin_token}",
        "",
        "Press Ctrl-C to stop the node and the smarthost.",
    ]
    for line in lines:
        console.print(line, highlight=False, markup=False)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.is_set() and node.proc is not None and node.proc.poll() is None:
            stop.wait(budgets.DEMO_POLL_INTERVAL_SECONDS)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    console.print("stopping the node and the smarthost", highlight=False)
