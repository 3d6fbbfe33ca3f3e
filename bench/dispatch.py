"""Dispatch benchmark: seal and dispatch N sends to a local aiosmtpd sink, against bare aiosmtplib.

In one process and one run: a node on SQLite (or MAILNODE_DATABASE_URL) in a temporary data directory,
initialised, with a hold window of 0; a bare aiosmtpd sink on loopback that only counts. First the node
seals N sends (one recipient each) through ``outbound.seal`` and dispatches them through
``outbound.dispatch.sweep`` with the ``smtp`` transport (one session per recipient, as in production);
then bare aiosmtplib sends the same N rendered messages to the same sink, one session each, with the
same concurrency (``budgets.DISPATCH_CONCURRENCY``). Prints
sends per second for the node (seal + dispatch, and dispatch alone), for bare aiosmtplib, the ratios, the
statements dispatch executed per send (``db.meter``) and the 1-minute load average at the start.

    .venv/bin/python bench/dispatch.py [N]
    .venv/bin/python bench/dispatch.py [N] --database-url postgresql://postgres@127.0.0.1:5432/postgres

``--database-url`` names a PostgreSQL server: the run creates a database of its own on it and drops it after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiosmtplib
from aiosmtpd.controller import Controller
from sqlalchemy import create_engine, select, text, update

from mailnode import budgets
from mailnode.config import Settings
from mailnode.install import initialise
from mailnode.node import Node
from mailnode.outbound import dispatch
from mailnode.outbound.seal import SealRequest, seal
from mailnode.schema.mail import mailboxes
from mailnode.schema.outbound import send_manifests
from mailnode.transports.smtp import SmtpTransport


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class CountingSink:
    """Answers 250 to every message and counts them."""

    def __init__(self) -> None:
        self.count = 0

    async def handle_DATA(self, server: object, session: object, envelope: object) -> str:
        self.count += 1
        return "250 OK"


async def bare(port: int, messages: list[tuple[str, str, bytes]]) -> None:
    """One aiosmtplib session per message, like the node's transport, with the node's concurrency."""
    gate = asyncio.Semaphore(budgets.DISPATCH_CONCURRENCY)

    async def one(mail_from: str, rcpt: str, raw: bytes) -> None:
        async with gate:
            await aiosmtplib.send(raw, sender=mail_from, recipients=[rcpt], hostname="127.0.0.1", port=port,
                                  start_tls=False, use_tls=False)

    await asyncio.gather(*(one(*m) for m in messages))


@contextmanager
def database(server_url: str) -> Iterator[str]:
    """A fresh PostgreSQL database on ``server_url`` for one run (dropped after), or "" for SQLite."""
    if not server_url:
        yield ""
        return
    name = f"mailnode_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(server_url.replace("postgresql://", "postgresql+psycopg://", 1), isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield f"{server_url.rsplit('/', 1)[0]}/{name}"
    finally:
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def main(n: int, database_url: str) -> None:
    load = os.getloadavg()[0]
    sink = CountingSink()
    port = free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    with tempfile.TemporaryDirectory() as tmp:
        node = Node.open(Settings(data_dir=Path(tmp) / "node", database_url=database_url))
        done = initialise(node, org="Bench", domain="example.test", admin_email="admin@example.test")
        with node.begin() as conn:
            conn.execute(update(mailboxes).values(hold_window_seconds=0))
        transport = SmtpTransport("127.0.0.1", port, tls="none")

        start = time.perf_counter()
        for i in range(n):
            seal(node, org_id=done.org_id, author_id=done.user_id, request=SealRequest(
                mailbox_id=done.mailbox_id, to=[f"r{i}@remote.test"], subject=f"Bench {i}", body="Hello\n" * 20))
        sealed_at = time.perf_counter()
        with node.meter.measure() as dispatching:
            while dispatch.sweep(node, transport=transport).results:
                pass
        node_seconds = time.perf_counter() - start
        dispatch_seconds = time.perf_counter() - sealed_at
        assert sink.count == n, f"the sink took {sink.count} of {n}"

        with node.read() as conn:
            rows = conn.execute(select(send_manifests.c.rendered_sha256, send_manifests.c.to_addresses)).all()
        messages = [("bounces@example.test", r.to_addresses[0], node.evidence.get(r.rendered_sha256)) for r in rows]
        start = time.perf_counter()
        asyncio.run(bare(port, messages))
        bare_seconds = time.perf_counter() - start
        assert sink.count == 2 * n
        node.close()
    controller.stop()
    node_rate, dispatch_rate, bare_rate = n / node_seconds, n / dispatch_seconds, n / bare_seconds
    backend = "postgresql" if database_url else "sqlite"
    print(f"sends: {n}  backend: {backend}  load average (1 min) at start: {load:.2f}")
    print(f"dispatch statements per send : {dispatching.count / n:.2f}")
    print(f"mailnode seal+dispatch : {node_rate:8.1f} sends/s")
    print(f"mailnode dispatch only : {dispatch_rate:8.1f} sends/s")
    print(f"bare aiosmtplib        : {bare_rate:8.1f} sends/s")
    print(f"ratio (seal+dispatch / bare): {node_rate / bare_rate:.2f}")
    print(f"ratio (dispatch / bare)     : {dispatch_rate / bare_rate:.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=200)
    ap.add_argument("--database-url", default=os.environ.get("MAILNODE_DATABASE_URL", ""),
                    help="a PostgreSQL server URL (a database is created on it for the run); SQLite without")
    args = ap.parse_args()
    with database(args.database_url) as url:
        main(args.n, url)
