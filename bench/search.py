"""Benchmark: ``GET /api/search``'s statements over 100,000 messages, p50 and p95, on SQLite and PostgreSQL.

Builds the corpus by bulk inserts (receipts, conversations, cases, messages, then their search documents
through ``search.index.index_many``, the upsert materialisation uses), not by materialising each message:
bodies of about 80 words drawn from a 5,000-word vocabulary with a Zipf-like spread, 2,000 senders, one
conversation and case per ten messages (a third closed), one message in twenty with an attachment, one in
a hundred in a second mailbox (``Small``),
received over the past year. Then times ``search.run.search`` (the readable mailboxes, the page, the
sends' states: everything the route does but parse the query and render JSON) for representative
queries, each ``--runs`` times in its own read transaction, and prints p50 and p95 in milliseconds. The
aim (issue 15): p50 under 200 ms for each query on both databases.

    .venv/bin/python bench/search.py [--messages 100000] [--runs 30] [--pg postgresql://...] [--no-pg]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from sqlalchemy import create_engine, insert, text

from mailnode.authz import grant
from mailnode.clock import FrozenClock
from mailnode.config import Settings
from mailnode.ids import new_id
from mailnode.install import initialise
from mailnode.mail.mailboxes import create_mailbox
from mailnode.node import Node
from mailnode.schema.ingress import ingress_receipts
from mailnode.schema.mail_messages import cases, conversations, messages
from mailnode.search import index as search_index
from mailnode.search import run as search_run
from mailnode.search.documents import message_document
from mailnode.search.query import parse_query

CHUNK = 5_000
#: (label, query) timed; ``{sender}`` is a sender with about 50 messages, ``{day}`` a date 30 days ago.
QUERIES = (
    ("rare word (10 hits)", "zqxrare"),
    ("common word (in ~99% of messages)", "w1"),
    ("two words", "w3 w40"),
    ("quoted phrase", '"w1 w2"'),
    ("from: one sender", "from:{sender}"),
    ("subject: word", "subject:w7"),
    ("filters only: is:open has:attachment", "is:open has:attachment"),
    ("common word + after: + mailbox:", "w1 after:{day} mailbox:Support"),
    ("word in ~3% of messages", "w300"),
    ("word in ~0.3% of messages", "w3000"),
    ("common word in a 1% mailbox", "w1 mailbox:Small"),
    ("word absent from every message", "zqxnothing"),
    ("filter matching nothing: is:automated", "is:automated"),
)


def vocabulary(n: int) -> list[str]:
    return [f"w{i}" for i in range(n)]


def build(node: Node, inst: Any, count: int, rng: random.Random) -> str:
    """Insert ``count`` messages and their documents; returns a sender with many messages."""
    words = vocabulary(5_000)
    weights = [1.0 / (i + 1) for i in range(len(words))]
    senders = [f"person{i}@remote{i % 97}.test" for i in range(2_000)]
    now = node.clock.now()
    rare = set(rng.sample(range(count), 10))
    with node.begin() as conn:
        small = create_mailbox(conn, org_id=inst.org_id, actor_id=inst.user_id, at=now, name="Small",
                               addresses=["small@example.test"])["id"]
        grant(conn, org_id=inst.org_id, actor_id=inst.user_id, at=now, subject_id=inst.user_id,
              relation="mailbox.content.read", object_id=small)
    for start in range(0, count, CHUNK):
        size = min(CHUNK, count - start)
        conv_rows, case_rows, receipt_rows, message_rows = [], [], [], []
        conv = case = ""
        for i in range(start, start + size):
            at = now - timedelta(seconds=(count - i) * (365 * 86400 / count))
            if i % 10 == 0:
                conv, case = new_id("cnv"), new_id("cas")
                conv_rows.append({"id": conv, "org_id": inst.org_id, "subject": "s", "created_at": at})
                closed = rng.random() < 1 / 3
                case_rows.append({"id": case, "org_id": inst.org_id, "conversation_id": conv,
                                  "mailbox_id": inst.mailbox_id, "state": "closed" if closed else "open",
                                  "opened_at": at, "closed_at": at if closed else None})
            body = " ".join(rng.choices(words, weights, k=80)) + (" zqxrare" if i in rare else "")
            sender = senders[int(rng.paretovariate(1.2)) % len(senders)]
            rid, mid = new_id("rcpt"), new_id("msg")
            box = small if i % 100 == 0 else inst.mailbox_id
            receipt_rows.append({"id": rid, "org_id": inst.org_id, "mailbox_id": box,
                                 "envelope_from": sender, "envelope_to": inst.mailbox_address, "size_bytes": 1000,
                                 "sha256": "0" * 64, "source": "bench", "received_at": at, "materialised_at": at,
                                 "message_id": mid})
            message_rows.append({
                "id": mid, "org_id": inst.org_id, "mailbox_id": box, "receipt_id": rid,
                "conversation_id": conv, "case_id": case, "envelope_from": sender,
                "envelope_to": inst.mailbox_address, "rfc_message_id": f"<{mid}@remote.test>", "in_reply_to": None,
                "references": [], "subject": " ".join(rng.choices(words, weights, k=5)), "from_name": None,
                "from_address": sender, "date": at, "received_at": at, "automated": None, "reply_refusal": None,
                "dmarc": None, "spf": None, "dkim": None, "attachments": 1 if i % 20 == 0 else 0,
                "dangerous_attachments": 0, "report_kind": None, "parse_error": None, "defects": [],
                "headers": [["To", inst.mailbox_address]], "text_body": body, "raw_sha256": "0" * 64,
                "size_bytes": 1000})
        with node.begin() as conn:
            conn.execute(insert(conversations), conv_rows)
            conn.execute(insert(cases), case_rows)
            conn.execute(insert(ingress_receipts), receipt_rows)
            conn.execute(insert(messages), message_rows)
            search_index.index_many(conn, [message_document(SimpleNamespace(**m)) for m in message_rows])
    with node.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("INSERT INTO search_fts(search_fts) VALUES ('optimize')")
    return senders[1]


def timed(node: Node, inst: Any, q: str, runs: int) -> tuple[float, float, int]:
    """p50 and p95 seconds of one search (a read transaction each), and the results on the page."""
    query = parse_query(q)
    samples = []
    found = 0
    for _ in range(runs):
        with node.read() as conn:
            t0 = time.perf_counter()
            results, _ = search_run.search(conn, org_id=inst.org_id, principal_id=inst.user_id, query=query,
                                           limit=50)
            samples.append(time.perf_counter() - t0)
            found = len(results)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.95))], found


def run(label: str, settings: Settings, count: int, runs: int) -> None:
    """Build the corpus and time every query."""
    node = Node.open(settings, clock=FrozenClock())
    inst = initialise(node, org="Bench", domain="example.test", admin_email="a@example.test")
    t0 = time.perf_counter()
    sender = build(node, inst, count, random.Random(15))
    print(f"{label}: built {count:,} messages and their index in {time.perf_counter() - t0:.1f} s", flush=True)
    day = (node.clock.now() - timedelta(days=30)).date().isoformat()
    for name, q in QUERIES:
        p50, p95, found = timed(node, inst, q.format(sender=sender, day=day), runs)
        print(f"{label:10s} {name:42s} p50 {p50 * 1000:8.2f} ms  p95 {p95 * 1000:8.2f} ms  ({found} on the page)",
              flush=True)
    node.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--no-pg", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run("sqlite", Settings(data_dir=Path(tmp) / "sqlite"), args.messages, args.runs)
        if args.no_pg:
            return
        name = f"mailnode_bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(args.pg.replace("postgresql://", "postgresql+psycopg://", 1),
                              isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            url = f"{args.pg.rsplit('/', 1)[0]}/{name}"
            run("postgresql", Settings(data_dir=Path(tmp) / "pg", database_url=url), args.messages, args.runs)
        finally:
            with admin.connect() as c:
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


if __name__ == "__main__":
    main()
