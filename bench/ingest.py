"""Ingest benchmark: corpus messages over SMTP to a running node and to a bare aiosmtpd file sink.

Starts ``mailnode serve`` (SQLite unless MAILNODE_DATABASE_URL is set) in a temporary data directory on
free loopback ports, and a bare aiosmtpd server whose handler only appends the bytes to a file; sends the
same messages (every corpus .eml/.txt with CRLF line endings, ROUNDS times, each copy given its own
``Message-ID`` so none is a duplicate of another) to each over one connection per round and client, and prints
messages per second for both and their ratios. A node's rate counts the time to its last ``250``, which comes
only after the evidence write and the receipt commit; ``materialised`` counts the time until no receipt is left
unmaterialised (nor quarantined), read from the node's database after the last ``250``. ``--clients N`` deals
the messages over N concurrent SMTP clients. The defaults are issue 19's: 2 rounds (466 messages), 4 clients.
The load average (1 minute) is printed with the figures: the machine may be shared.

``--py-spy PATH`` records the ``serve`` process with py-spy (every thread, idle ones excluded) while the
messages are sent, into PATH (speedscope JSON); ``--py-spy-bin`` names the executable. The CPU the ``serve``
process used until the last ``250`` is printed per message: on a shared machine it varies less than the
rates do.

    .venv/bin/python bench/ingest.py [ROUNDS] [--clients N] [--py-spy PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
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
    """Every corpus message with CRLF line endings."""
    files = sorted(p for p in CORPUS.rglob("*")
                   if p.is_file() and p.suffix in (".eml", ".txt") and "LICENSES" not in p.parts)
    return [p.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") for p in files]


def with_message_id(raw: bytes, message_id: str) -> bytes:
    """``raw`` with its ``Message-ID`` header(s) (continuation lines included) replaced by ``message_id``,
    written first; the body is untouched."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    kept: list[bytes] = []
    dropping = False
    for line in head.split(b"\r\n"):
        if line[:1] in (b" ", b"\t") and dropping:
            continue
        dropping = line.lower().startswith(b"message-id:")
        if not dropping:
            kept.append(line)
    return f"Message-ID: <{message_id}>\r\n".encode() + b"\r\n".join(kept) + sep + body


def rounds_of(msgs: list[bytes], rounds: int) -> list[list[bytes]]:
    """The messages of each round, every copy with a Message-ID of its own."""
    return [[with_message_id(raw, f"bench-{r}-{i}@bench.test") for i, raw in enumerate(msgs)] for r in range(rounds)]


def send_one_client(port: int, rounds: list[list[bytes]]) -> None:
    for msgs in rounds:
        with smtplib.SMTP("127.0.0.1", port) as c:
            for raw in msgs:
                c.sendmail("sender@remote.test", ["support@example.test"], raw)


def send_all(port: int, rounds: list[list[bytes]], clients: int = 1) -> float:
    """Seconds until every message got its ``250``, each round's messages dealt round-robin over ``clients``."""
    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for done in [pool.submit(send_one_client, port, [msgs[i::clients] for msgs in rounds])
                     for i in range(clients)]:
            done.result()
    return time.perf_counter() - start


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds the process ``pid`` has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    parser.add_argument("rounds", nargs="?", type=int, default=2, help="times the corpus is sent (issue 19: 2)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent SMTP clients (issue 19: 4)")
    parser.add_argument("--py-spy", dest="py_spy", type=Path, help="record serve with py-spy into this file")
    parser.add_argument("--py-spy-bin", default="py-spy", help="the py-spy executable")
    args = parser.parse_args()
    clients = args.clients
    batches = rounds_of(messages(), args.rounds)
    n = sum(len(b) for b in batches)
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
            spy = None
            if args.py_spy is not None:
                spy = subprocess.Popen([args.py_spy_bin, "record", "--pid", str(proc.pid), "--format", "speedscope",
                                        "--output", str(args.py_spy), "--threads", "--rate", "200"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1.0)  # let py-spy attach before the first message
            start, cpu_before = time.perf_counter(), cpu_seconds(proc.pid)
            node_seconds = send_all(smtp, batches, clients)
            node_cpu = cpu_seconds(proc.pid) - cpu_before
            if spy is not None:
                spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
                spy.wait(60)
            wait_materialised(data)
            materialised_seconds = time.perf_counter() - start
        finally:
            proc.terminate()
            proc.wait(60)
        sink_port = free_port()
        sink = SinkController(FileSink(Path(tmp) / "sink.mbox"), hostname="127.0.0.1", port=sink_port)
        sink.start()
        try:
            bare_seconds = send_all(sink_port, batches, clients)
        finally:
            sink.stop()
    node_rate, bare_rate = n / node_seconds, n / bare_seconds
    materialised_rate = n / materialised_seconds
    print(json.dumps({"messages": n, "clients": clients, "node_seconds": round(node_seconds, 2),
                      "node_cpu_ms_per_message_to_last_250": round(1000 * node_cpu / n, 2),
                      "materialised_seconds": round(materialised_seconds, 2), "bare_seconds": round(bare_seconds, 2),
                      "node_per_second": round(node_rate, 1), "materialised_per_second": round(materialised_rate, 1),
                      "bare_per_second": round(bare_rate, 1), "ratio": round(node_rate / bare_rate, 3),
                      "materialised_ratio": round(materialised_rate / bare_rate, 4),
                      "load_average_1m": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
