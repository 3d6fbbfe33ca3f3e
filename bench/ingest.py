"""Ingest benchmark: corpus messages over SMTP to a running node and to a bare aiosmtpd file sink.

Starts ``mailnode serve`` (SQLite unless MAILNODE_DATABASE_URL is set) in a temporary data directory on
free loopback ports, and a bare aiosmtpd server whose handler only appends the bytes to a file; sends the
same messages (every corpus .eml/.txt with CRLF line endings, repeated ROUNDS times) to each over one
connection per round and client, and prints messages per second for both and their ratio. A node's rate counts
the time to its ``250``, which comes only after the evidence write and the receipt commit; ``materialised``
counts the time until no receipt is left unmaterialised (nor quarantined), read from the node's database
after the last ``250``. ``--clients N`` splits the messages over N concurrent SMTP clients (issue 19 measures
with 4). The load average (1 minute) is printed with the figures: the machine may be shared.

    .venv/bin/python bench/ingest.py [ROUNDS] [--clients N]
"""

from __future__ import annotations

import argparse
import json
import os
import smtplib
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP
from sqlalchemy import create_engine, func, select

from mailnode import budgets
from mailnode.config import load_settings
from mailnode.schema.ingress import ingress_receipts

#: The repository's copy of the corpus (a clone has no ../shared).
CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "corpus"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FileSink:
    """A bare handler: append the bytes to one file, answer 250."""

    def __init__(self, path: Path) -> None:
        self.fh = open(path, "ab")  # noqa: SIM115 - held open for the sink's lifetime, like demo/process.py's log

    async def handle_DATA(self, server: object, session: object, envelope: object) -> str:
        self.fh.write(envelope.original_content)  # type: ignore[attr-defined]
        self.fh.flush()
        return "250 OK"


class LongLineSMTP(SMTP):
    """The same line-length allowance the node's listener has, so both accept every corpus message."""

    line_length_limit = budgets.SMTP_LINE_MAX_BYTES


class SinkController(Controller):
    """A bare aiosmtpd controller with the node's line-length allowance."""

    def factory(self) -> SMTP:
        return LongLineSMTP(self.handler, **self.SMTP_kwargs)


def messages() -> list[bytes]:
    files = sorted(p for p in CORPUS.rglob("*")
                   if p.is_file() and p.suffix in (".eml", ".txt") and "LICENSES" not in p.parts)
    return [p.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") for p in files]


def send_one_client(port: int, msgs: list[bytes], rounds: int) -> None:
    for _ in range(rounds):
        with smtplib.SMTP("127.0.0.1", port) as c:
            for raw in msgs:
                c.sendmail("sender@remote.test", ["support@example.test"], raw)


def send_all(port: int, msgs: list[bytes], rounds: int, clients: int = 1) -> float:
    """Seconds until every message got its ``250``, the messages dealt round-robin over ``clients``."""
    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for done in [pool.submit(send_one_client, port, msgs[i::clients], rounds) for i in range(clients)]:
            done.result()
    return time.perf_counter() - start


def wait_materialised(data: Path, timeout: float = 1800.0) -> None:
    """Return once no receipt of the node in ``data`` waits to be materialised (quarantined ones are done)."""
    engine = create_engine(load_settings(data).resolved_database_url)
    t = ingress_receipts.c
    waiting = select(func.count()).select_from(ingress_receipts).where(t.materialised_at.is_(None),
                                                                        t.quarantined_at.is_(None))
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            with engine.connect() as conn:
                if conn.execute(waiting).scalar_one() == 0:
                    return
            time.sleep(0.05)
        raise SystemExit(f"receipts still unmaterialised after {timeout:.0f} s")
    finally:
        engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rounds", nargs="?", type=int, default=3)
    parser.add_argument("--clients", type=int, default=1, help="concurrent SMTP clients (issue 19: 4)")
    args = parser.parse_args()
    rounds, clients = args.rounds, args.clients
    msgs = messages()
    n = len(msgs) * rounds
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "node"
        env = {**os.environ}
        subprocess.run([sys.executable, "-m", "mailnode.cli", "init", "--data-dir", str(data), "--org", "Bench",
                        "--domain", "example.test", "--admin-email", "b@example.test", "--json"], check=True,
                       env=env, capture_output=True)
        http, smtp = free_port(), free_port()
        proc = subprocess.Popen([sys.executable, "-m", "mailnode.cli", "serve", "--data-dir", str(data), "--http",
                                 f"127.0.0.1:{http}", "--smtp", f"127.0.0.1:{smtp}"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                try:
                    if httpx.get(f"http://127.0.0.1:{http}/api/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)
            start = time.perf_counter()
            node_seconds = send_all(smtp, msgs, rounds, clients)
            wait_materialised(data)
            materialised_seconds = time.perf_counter() - start
        finally:
            proc.terminate()
            proc.wait(60)
        sink_port = free_port()
        sink = SinkController(FileSink(Path(tmp) / "sink.mbox"), hostname="127.0.0.1", port=sink_port)
        sink.start()
        try:
            bare_seconds = send_all(sink_port, msgs, rounds, clients)
        finally:
            sink.stop()
    node_rate, bare_rate = n / node_seconds, n / bare_seconds
    materialised_rate = n / materialised_seconds
    print(json.dumps({"messages": n, "clients": clients, "node_per_second": round(node_rate, 1),
                      "materialised_per_second": round(materialised_rate, 1),
                      "bare_per_second": round(bare_rate, 1), "ratio": round(node_rate / bare_rate, 3),
                      "materialised_ratio": round(materialised_rate / bare_rate, 4),
                      "load_average_1m": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
