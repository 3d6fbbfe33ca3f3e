"""Several processes benchmark (issue 19): one ``mailnode serve`` against two on one PostgreSQL database.

Each configuration gets a fresh PostgreSQL database (on ``MAILNODE_BENCH_PG_URL``, default the local server's
``postgres`` database, trust auth) and a temporary data directory shared by its processes (the evidence store is
a directory), ``mailnode init`` and processes with derived executor ids; an aiosmtpd sink on loopback is the
smarthost (it answers at once and counts every hand-over by its VERP return path). Mailbox hold window 0 and
the volume breaker raised so the sends are not gated.

- ``ingest``: MESSAGES messages over SMTP, split round-robin over the processes' listeners by 4 clients (one
  connection each); the time from the first ``MAIL FROM`` until every receipt's workflow finished
  (materialised and its Butler trigger run): messages per second.
- ``dispatch``: SENDS ``POST /api/sends`` (one recipient each), split over the processes' APIs by 8 clients;
  the time from the first request until every send is ``handed_over``: sends per second (the seal included,
  as a user sees it).
- ``mixed`` (two processes): MIXED sends and MIXED deliveries at once, both processes; reports every non-2xx
  answer, 5xx counted apart, each ``E_AUDIT_APPEND_RACED`` in the processes' logs, and ``audit verify``.
- ``kill``: (two processes) KILL deliveries and KILL sends, ``kill -9`` of the second process once a third of
  the sends reached the sink; then waits until everything settled and reports what was lost (an accepted
  message not materialised, a send left held or claimed) and duplicated (a Message-ID materialised twice, a
  recipient row handed over twice), and how long the takeover took.

Prints the figures, the two/one ratios and the 1-minute load average before and after (the machine may be
shared).

    .venv/bin/python bench/multi_process.py [--messages 400] [--sends 400] [--mixed 1000] [--kill 200]
                                            [--skip-mixed] [--skip-kill]
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
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from aiosmtpd.controller import Controller
from sqlalchemy import create_engine, func, select, text, update

from mailnode.audit import audit_entries
from mailnode.config import Settings
from mailnode.node import Node
from mailnode.schema.ingress import ingress_receipts
from mailnode.schema.mail import mailboxes
from mailnode.schema.mail_messages import messages
from mailnode.schema.outbound import send_manifests, send_recipients

PG = os.environ.get("MAILNODE_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
MAILNODE = [sys.executable, "-m", "mailnode.cli"]
SETTLE_SECONDS = 600


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class CountingSink:
    """Answers 250 at once; counts hand-overs by VERP return path (``bounces+<recipient row>@``)."""

    def __init__(self) -> None:
        self.by_row: Counter[str] = Counter()

    async def handle_DATA(self, server: object, session: object, envelope: Any) -> str:
        local = str(envelope.mail_from).partition("@")[0].lower()
        self.by_row[local.removeprefix("bounces+")] += len(envelope.rcpt_tos)
        return "250 OK"


class Proc:
    """One ``mailnode serve`` process of the node."""

    def __init__(self, data_dir: Path, env: dict[str, str], name: str) -> None:
        self.http, self.smtp = free_port(), free_port()
        self.log = data_dir / f"{name}.log"
        self.proc = subprocess.Popen([*MAILNODE, "serve", "--data-dir", str(data_dir), "--http",
                                      f"127.0.0.1:{self.http}", "--smtp", f"127.0.0.1:{self.smtp}"],
                                     env=env, stdout=self.log.open("ab"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.http}/api/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                raise SystemExit(f"serve exited: {self.log.read_text()[-2000:]}")
            time.sleep(0.2)
        raise SystemExit("serve did not answer in 90 s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


class World:
    """A fresh node (database + data directory), its processes, a sink and the bench's own connection."""

    def __init__(self, tmp: Path, url: str, sink_port: int, count: int) -> None:
        self.data_dir = tmp / "node"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MAILNODE_")}
        self.env.update(MAILNODE_DATABASE_URL=url, MAILNODE_TRANSPORT="smtp", MAILNODE_SMTP_TLS="none",
                        MAILNODE_SMTP_RELAY=f"127.0.0.1:{sink_port}", MAILNODE_DISPATCH_INTERVAL_SECONDS="1",
                        MAILNODE_MATERIALISE_SCAN_INTERVAL_SECONDS="5")
        out = subprocess.run([*MAILNODE, "init", "--data-dir", str(self.data_dir), "--org", "Bench", "--domain",
                              "example.test", "--admin-email", "admin@example.test", "--json"],
                             env=self.env, check=True, capture_output=True, text=True)
        self.installed = json.loads(out.stdout)
        self.headers = {"Authorization": f"Bearer {self.installed['token']}"}
        self.node = Node.open(Settings(data_dir=self.data_dir, database_url=url), migrate_to_head=False)
        with self.node.begin() as conn:
            conn.execute(update(mailboxes).values(hold_window_seconds=0))
        self.procs = [Proc(self.data_dir, self.env, f"serve-{i}") for i in range(count)]
        r = httpx.patch(f"http://127.0.0.1:{self.procs[0].http}/api/breaker-limits", headers=self.headers,
                        json={"volume_max_recipients": 100_000}, timeout=30)
        assert r.status_code == 200, r.text

    def close(self) -> None:
        for p in self.procs:
            p.stop()
        self.node.close()

    def count(self, query: Any) -> int:
        with self.node.read() as conn:
            return int(conn.execute(query).scalar_one())

    def receipts_done(self) -> int:
        return self.count(select(func.count()).select_from(ingress_receipts)
                          .where(ingress_receipts.c.workflow_done_at.is_not(None)))

    def sends_in(self, *states: str) -> int:
        return self.count(select(func.count()).select_from(send_manifests)
                          .where(send_manifests.c.state.in_(states)))

    def unsettled_sends(self) -> int:
        return self.count(select(func.count()).select_from(send_manifests).where(
            send_manifests.c.state.in_(("held", "awaiting", "throttled")) | send_manifests.c.lease_until.is_not(None)))


@contextmanager
def fresh_database() -> Iterator[str]:
    name = f"mailnode_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield f"{PG.rsplit('/', 1)[0]}/{name}"
    finally:
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def world(count: int) -> Iterator[tuple[World, CountingSink]]:
    sink = CountingSink()
    port = free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        with fresh_database() as url, tempfile.TemporaryDirectory() as tmp:
            w = World(Path(tmp), url, port, count)
            try:
                yield w, sink
            finally:
                w.close()
    finally:
        controller.stop()


def deliver(w: World, n: int, tag: str, clients: int = 4) -> Callable[[], list[str]]:
    """Start delivering ``n`` messages round-robin over the listeners with ``clients`` connections; a function
    that waits for the deliveries and returns the Message-IDs accepted (answered 250)."""
    def one_client(k: int) -> list[str]:
        accepted: list[str] = []
        target = k
        c: smtplib.SMTP | None = None
        for i in range(k, n, clients):
            mid = f"<{tag}-{i}@remote.test>"
            raw = (f"From: person@remote.test\r\nTo: support@example.test\r\nSubject: {mid}\r\n"
                   f"Message-ID: {mid}\r\n\r\nhello\r\n").encode()
            for _ in range(len(w.procs)):  # a listener that died: the next one, as a sender tries the next MX
                try:
                    if c is None:
                        c = smtplib.SMTP("127.0.0.1", w.procs[target % len(w.procs)].smtp, timeout=120)
                    c.sendmail("person@remote.test", ["support@example.test"], raw)
                    accepted.append(mid)
                    break
                except (OSError, smtplib.SMTPException):
                    c, target = None, target + 1
        if c is not None:
            c.quit()
        return accepted
    pool = ThreadPoolExecutor(clients)
    futures = [pool.submit(one_client, k) for k in range(clients)]

    def wait() -> list[str]:
        out = [mid for f in futures for mid in f.result()]
        pool.shutdown()
        return out
    return wait


def post_sends(w: World, n: int, clients: int = 8, on_each: Callable[[int], None] | None = None) -> Counter[int]:
    """``n`` ``POST /api/sends`` split over the processes' APIs by ``clients`` threads; the statuses."""
    def one(i: int) -> int:
        proc = w.procs[i % len(w.procs)]
        try:
            r = httpx.post(f"http://127.0.0.1:{proc.http}/api/sends", headers=w.headers, timeout=120,
                           json={"mailbox_id": w.installed["mailbox_id"], "to": [f"to{i}@remote.test"],
                                 "subject": f"Send {i}", "body": "Hello\n" * 20})
            status = r.status_code
        except httpx.HTTPError:
            status = 0  # the process is gone (the kill variant)
        if on_each:
            on_each(i)
        return status
    with ThreadPoolExecutor(clients) as pool:
        return Counter(pool.map(one, range(n)))


def until(what: str, holds: Callable[[], bool], seconds: float = SETTLE_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not holds():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what}: not within {seconds} s")
        time.sleep(0.1)


def ingest(count: int, n: int) -> tuple[float, list[int]]:
    """Messages per second, and how many materialisations each process ran (by executor id)."""
    with world(count) as (w, _):
        start = time.monotonic()
        deliver(w, n, "in")()
        until("materialised", lambda: w.receipts_done() == n)
        rate = n / (time.monotonic() - start)
        with w.node.read() as conn:
            ran = conn.execute(text("SELECT count(*) FROM dbos.workflow_status WHERE name LIKE "
                                    "'%materialise_workflow%' GROUP BY executor_id ORDER BY 1 DESC")).scalars().all()
        return rate, [int(c) for c in ran]


def dispatch(count: int, n: int) -> float:
    with world(count) as (w, sink):
        start = time.monotonic()
        statuses = post_sends(w, n)
        assert statuses == Counter({201: n}), statuses
        until("handed over", lambda: w.sends_in("handed_over") == n)
        rate = n / (time.monotonic() - start)
        assert max(sink.by_row.values()) == 1
        return rate


def mixed(n: int) -> dict[str, Any]:
    with world(2) as (w, sink):
        start = time.monotonic()
        wait = deliver(w, n, "mix")
        statuses = post_sends(w, n)
        accepted = wait()
        until("settled", lambda: w.receipts_done() == len(accepted) and w.unsettled_sends() == 0)
        seconds = time.monotonic() - start
        raced = sum(p.log.read_text(errors="replace").count("E_AUDIT_APPEND_RACED") for p in w.procs)
        r = httpx.post(f"http://127.0.0.1:{w.procs[0].http}/api/audit/verify", headers=w.headers, timeout=300)
        return {"sends": n, "deliveries": len(accepted), "seconds": round(seconds, 1),
                "statuses": dict(statuses), "5xx": sum(c for s, c in statuses.items() if s >= 500),
                "audit_append_raced": raced, "verify": r.json().get("verification"),
                "duplicates": sum(1 for c in sink.by_row.values() if c > 1)}


def kill(n: int) -> dict[str, Any]:
    with world(2) as (w, sink):
        victim = w.procs[1]
        killed: list[float] = []

        def maybe_kill(_: int) -> None:
            if not killed and sum(sink.by_row.values()) >= n // 3:
                killed.append(time.monotonic())
                victim.kill9()
        wait = deliver(w, n, "kill", clients=2)
        statuses = post_sends(w, n, on_each=maybe_kill)
        accepted = wait()
        if not killed:
            killed.append(time.monotonic())
            victim.kill9()
        until("settled", lambda: w.receipts_done() == w.count(select(func.count()).select_from(ingress_receipts))
              and w.unsettled_sends() == 0)
        settled = time.monotonic() - killed[0]
        with w.node.read() as conn:
            subjects = Counter(conn.execute(select(messages.c.subject)).scalars().all())
            states = Counter(conn.execute(select(send_recipients.c.submission_state)).scalars().all())
            taken = conn.execute(select(func.count()).select_from(audit_entries)
                                 .where(audit_entries.c.action == "executor.taken_over")).scalar_one()
        return {"deliveries_accepted": len(accepted), "lost_messages": sum(1 for m in accepted if not subjects[m]),
                "duplicated_messages": sum(1 for c in subjects.values() if c > 1),
                "sends_accepted": statuses.get(201, 0), "refused_at_kill": n - statuses.get(201, 0),
                "recipient_states": dict(states),
                "duplicated_hand_overs": sum(1 for c in sink.by_row.values() if c > 1),
                "takeovers": taken, "settled_after_kill_s": round(settled, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=400)
    ap.add_argument("--sends", type=int, default=400)
    ap.add_argument("--mixed", type=int, default=1000)
    ap.add_argument("--kill", type=int, default=200)
    ap.add_argument("--skip-mixed", action="store_true")
    ap.add_argument("--skip-kill", action="store_true")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    (one_in, _), (two_in, shares) = ingest(1, args.messages), ingest(2, args.messages)
    print(f"ingest-to-materialised ({args.messages} messages): one {one_in:.1f}/s  two {two_in:.1f}/s  "
          f"ratio {two_in / one_in:.2f}  (materialisations per process with two: {shares})", flush=True)
    one_out, two_out = dispatch(1, args.sends), dispatch(2, args.sends)
    print(f"POST /api/sends to handed_over ({args.sends} sends): one {one_out:.1f}/s  two {two_out:.1f}/s  "
          f"ratio {two_out / one_out:.2f}", flush=True)
    if not args.skip_mixed:
        print(f"mixed, two processes: {json.dumps(mixed(args.mixed))}", flush=True)
    if not args.skip_kill:
        print(f"kill -9 of one of two: {json.dumps(kill(args.kill))}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
