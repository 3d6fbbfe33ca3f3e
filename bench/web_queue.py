"""Benchmark: a mailbox's queue with 10,000 conversations in it, median and p95, on SQLite and PostgreSQL.

Builds one mailbox by bulk inserts (conversations, cases, receipts, messages, sends and the sends' search
documents; not by materialising each message): 10,000 conversations of one to five messages (three on
average) from 2,000 senders over the past year, a third of the cases closed, of the open ones half held (one
in ten of those by the person measured), one message in twenty with an attachment, one in fifteen automated,
and a reply sealed in one conversation in two. Then times, each ``--runs`` times:

- the service, ``mail.queue.read_queue`` in its own read transaction: every view's first page, and a page
  twenty pages deep (keyset cursor) of All open;
- the route ``GET /api/mailboxes/{id}/queue`` through the ASGI app (parsing, the service, JSON);
- the web queue page ``GET /mailboxes/{id}`` (HTML) and a conversation page ``GET /conversations/{id}``
  when those pages exist (``mailnode.web``), signed in with a web session.

Prints p50 and p95 in milliseconds. The aim (issue 16): under 100 ms at the median and 300 ms at p95.

    .venv/bin/python bench/web_queue.py [--conversations 10000] [--runs 30] [--pg postgresql://...] [--no-pg]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import re
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from sqlalchemy import create_engine, insert, text

from mailnode.authz import grant
from mailnode.clock import FrozenClock
from mailnode.config import Settings
from mailnode.directory.people import create_user
from mailnode.ids import new_id
from mailnode.install import initialise
from mailnode.mail import queue
from mailnode.mail.queue_rules import View
from mailnode.node import Node
from mailnode.schema.ingress import ingress_receipts
from mailnode.schema.mail_messages import cases, conversations, messages
from mailnode.schema.outbound import send_manifests
from mailnode.search import index as search_index
from mailnode.search.documents import message_document, send_document

CHUNK = 2_000


def build(node: Node, inst: Any, count: int, rng: random.Random) -> str:
    """Insert ``count`` conversations into the install's mailbox; returns the id of the conversation whose page
    is measured (the middle one, given five messages and a sealed reply)."""
    now = node.clock.now()
    with node.begin() as conn:
        other = create_user(conn, org_id=inst.org_id, actor_id=inst.user_id, at=now, email="olga@example.test",
                            name="Olga")["id"]
        grant(conn, org_id=inst.org_id, actor_id=inst.user_id, at=now, subject_id=inst.user_id,
              relation="mailbox.content.read", object_id=inst.mailbox_id)
    # Real evidence the conversation page reads: one raw message every built message points at, and one
    # sealed body every built send points at (the page reads a send's body from the evidence store).
    raw_sha = node.evidence.put(b"From: Person 0 <person0@remote0.test>\r\nTo: " + inst.mailbox_address.encode()
                                + b"\r\nSubject: w1 w2\r\nMessage-ID: <bench@remote.test>\r\n"
                                + b"Content-Type: text/plain; charset=utf-8\r\n\r\nHello.\r\n")
    body_sha = node.evidence.put(b"Thank you for writing; this is answered.\n")
    senders = [(f"Person {i}", f"person{i}@remote{i % 97}.test") for i in range(2_000)]
    words = [f"w{i}" for i in range(3_000)]
    some_conversation = ""
    for start in range(0, count, CHUNK):
        conv_rows, case_rows, receipt_rows, message_rows, send_rows = [], [], [], [], []
        for i in range(start, min(count, start + CHUNK)):
            opened = now - timedelta(seconds=(count - i) * (365 * 86400 / count))
            conv, case = new_id("cnv"), new_id("cas")
            measured = i == count // 2  # the conversation page measured: five messages and a sealed reply
            some_conversation = conv if measured else some_conversation
            name, sender = senders[int(rng.paretovariate(1.2)) % len(senders)]
            subject = " ".join(rng.choices(words, k=5))
            conv_rows.append({"id": conv, "org_id": inst.org_id, "subject": subject, "created_at": opened})
            closed = rng.random() < 1 / 3
            holder = None
            if not closed and rng.random() < 0.5:
                holder = inst.user_id if rng.random() < 0.1 else other
            case_rows.append({"id": case, "org_id": inst.org_id, "conversation_id": conv, "mailbox_id": inst.mailbox_id,
                              "state": "closed" if closed else "open", "assignee_id": holder,
                              "assigned_at": opened if holder else None, "opened_at": opened,
                              "closed_at": opened if closed else None, "closed_by": inst.user_id if closed else None})
            for k in range(5 if measured else rng.randint(1, 5)):
                at = opened + timedelta(minutes=10 * k)
                rid, mid = new_id("rcpt"), new_id("msg")
                receipt_rows.append({"id": rid, "org_id": inst.org_id, "mailbox_id": inst.mailbox_id,
                                     "envelope_from": sender, "envelope_to": inst.mailbox_address, "size_bytes": 2000,
                                     "sha256": raw_sha, "source": "bench", "received_at": at, "materialised_at": at,
                                     "message_id": mid})
                message_rows.append({
                    "id": mid, "org_id": inst.org_id, "mailbox_id": inst.mailbox_id, "receipt_id": rid,
                    "conversation_id": conv, "case_id": case, "envelope_from": sender,
                    "envelope_to": inst.mailbox_address, "rfc_message_id": f"<{mid}@remote.test>", "in_reply_to": None,
                    "references": [], "subject": ("Re: " if k else "") + subject, "from_name": name,
                    "from_address": sender, "date": at, "received_at": at,
                    "automated": "auto_submitted" if rng.random() < 1 / 15 else None, "reply_refusal": None,
                    "dmarc": None, "spf": None, "dkim": None, "attachments": 1 if rng.random() < 0.05 else 0,
                    "dangerous_attachments": 0, "report_kind": None, "parse_error": None, "defects": [],
                    "headers": [["To", inst.mailbox_address]],
                    "text_body": " ".join(rng.choices(words, k=120)) + "\n\nOn Monday you wrote:\n> earlier",
                    "text_body_type": "text/plain", "raw_sha256": raw_sha, "size_bytes": 2000})
            if rng.random() < 0.5 or measured:
                at = opened + timedelta(hours=1)
                send_rows.append({
                    "id": new_id("snd"), "org_id": inst.org_id, "mailbox_id": inst.mailbox_id,
                    "author_id": inst.user_id,
                    "conversation_id": conv, "envelope_from": inst.mailbox_address, "to_addresses": [sender],
                    "cc_addresses": [], "bcc_addresses": [], "display_names": {sender: name},
                    "subject": "Re: " + subject, "rfc_message_id": f"<{uuid.uuid4().hex}@example.test>",
                    "fidelity": "exact", "body_typed_sha256": body_sha, "body_normalised_sha256": body_sha,
                    "sealed_at": at, "release_at": at, "state": "handed_over", "state_at": at})
        with node.begin() as conn:
            conn.execute(insert(conversations), conv_rows)
            conn.execute(insert(cases), case_rows)
            conn.execute(insert(ingress_receipts), receipt_rows)
            conn.execute(insert(messages), message_rows)
            conn.execute(insert(send_manifests), send_rows)
            docs = [message_document(SimpleNamespace(**m)) for m in message_rows]
            docs += [send_document(SimpleNamespace(**{"attachments": None, "auto_submitted": None,
                                                      "mail_class": "correspondence", **s}),
                                   "thank you for writing " + " ".join(rng.choices(words, k=40)))
                     for s in send_rows]
            search_index.index_many(conn, docs)
    with node.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
    return some_conversation


def percentiles(fn: Callable[[], Any], runs: int) -> tuple[float, float]:
    """p50 and p95 seconds of ``fn``."""
    fn()  # warm caches once, as a served node is
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.95))]


def report(label: str, name: str, p: tuple[float, float], note: str = "") -> None:
    """One line of the result."""
    print(f"{label:10s} {name:44s} p50 {p[0] * 1000:8.2f} ms  p95 {p[1] * 1000:8.2f} ms  {note}", flush=True)


def web_session(node: Node, inst: Any, client: Any) -> bool:
    """Sign the client in through the web sign-in form with the installer's token; False when there are no pages."""
    if importlib.util.find_spec("mailnode.web") is None or importlib.util.find_spec("mailnode.web.queue") is None:
        return False
    form = client.get("/signin")
    csrf = re.search(r'<meta name="csrf-token" content="([^"]*)">', form.text)
    r = client.post("/signin/token",
                    data={"token": inst.token, "next": "/", "csrf_token": csrf.group(1) if csrf else ""},
                    follow_redirects=False)
    return r.status_code == 303


def run(label: str, settings: Settings, count: int, runs: int) -> None:
    """Build the mailbox and time the queue."""
    from fastapi.testclient import TestClient

    from mailnode.app import create_app

    node = Node.open(settings, clock=FrozenClock())
    inst = initialise(node, org="Bench", domain="example.test", admin_email="a@example.test")
    t0 = time.perf_counter()
    conversation = build(node, inst, count, random.Random(16))
    print(f"{label}: built {count:,} conversations in {time.perf_counter() - t0:.1f} s", flush=True)

    def service(view: View, cursor: str | None = None) -> Any:
        with node.read() as conn:
            return queue.read_queue(conn, org_id=inst.org_id, principal_id=inst.user_id, mailbox_id=inst.mailbox_id,
                                    view=view, now=node.clock.now(), cursor=cursor)

    counts = service(View.OPEN).counts
    note = ", ".join(f"{v.value} {n:,}" for v, n in counts.items())
    print(f"{label}: counts {note}", flush=True)
    for view in View:
        report(label, f"service, {view.value}, first page", percentiles(lambda v=view: service(v), runs),
               f"({len(service(view).rows)} rows)")
    cursor = None
    for _ in range(20):
        cursor = service(View.OPEN, cursor).next_cursor
    report(label, "service, open, page 21", percentiles(lambda: service(View.OPEN, cursor), runs))
    headers = {"Authorization": f"Bearer {inst.token}"}
    with TestClient(create_app(node)) as client:
        url = f"/api/mailboxes/{inst.mailbox_id}/queue"
        for view in (View.UNASSIGNED, View.OPEN, View.SENT):
            report(label, f"GET /api/…/queue?view={view.value}",
                   percentiles(lambda v=view: client.get(url, params={"view": v.value}, headers=headers), runs))
        if web_session(node, inst, client):
            page_url = f"/mailboxes/{inst.mailbox_id}"
            for view in (View.UNASSIGNED, View.MINE, View.OPEN, View.SENT):
                report(label, f"GET /mailboxes/{{id}}?view={view.value} (web page)",
                       percentiles(lambda v=view: client.get(page_url, params={"view": v.value}), runs))
            report(label, "GET /mailboxes/{id}?q=from:… (web search)",
                   percentiles(lambda: client.get(page_url, params={"q": "from:person1 w1"}), runs))
            report(label, "GET /mailboxes/{id}/poll (new mail)",
                   percentiles(lambda: client.get(f"{page_url}/poll"), runs))
            shown = client.get(f"/conversations/{conversation}")
            if shown.status_code == 200:
                report(label, "GET /conversations/{id} (web page)",
                       percentiles(lambda: client.get(f"/conversations/{conversation}"), runs))
            elif shown.status_code == 404 and importlib.util.find_spec("mailnode.web.conversation") is None:
                print(f"{label}: no conversation page in this build: not measured", flush=True)
            else:  # a page that exists but fails is a bench (or page) bug, not a figure to leave out silently
                raise SystemExit(f"{label}: GET /conversations/{conversation} answered {shown.status_code}: "
                                 f"{shown.text[:300]}")
        else:
            print(f"{label}: no web pages in this build (mailnode.web.queue absent): pages not measured", flush=True)
    node.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--no-pg", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run("sqlite", Settings(data_dir=Path(tmp) / "sqlite"), args.conversations, args.runs)
        if args.no_pg:
            return
        name = f"mailnode_bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(args.pg.replace("postgresql://", "postgresql+psycopg://", 1),
                              isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            url = f"{args.pg.rsplit('/', 1)[0]}/{name}"
            run("postgresql", Settings(data_dir=Path(tmp) / "pg", database_url=url), args.conversations, args.runs)
        finally:
            with admin.connect() as c:
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


if __name__ == "__main__":
    main()
