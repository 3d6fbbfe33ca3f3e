"""Benchmark: the server-side render time of every operator page (issue 21), median and p95, SQLite and PostgreSQL.

Builds a node by bulk inserts, because the normal paths (seal, dispatch, a Butler's DBOS workflow) would take
hours for this much history: ``bench/web_queue.build``'s 10,000 conversations and their sends, topped up to
10,000 handed-over sends, one recipient each (a hundred of them in the last hour, so the volume breaker reads a
count), a bounce event for one recipient in twenty in the last six hours (attributed, so the bounce rate is armed),
and 1,000 Butler runs of one published Butler (a bare version row: the pages read runs, not the document's walk).
The audit chain gets 10,000 entries through ``audit.append`` (the page must not walk them). Then renders each page
``--runs`` times through the ASGI app signed in with a web session, and prints p50 and p95 in milliseconds. A page
not built in this branch answers 404 and is printed "not built"; any other failure stops the bench.

    .venv/bin/python bench/web_pages.py [--runs 30] [--pg postgresql://...] [--no-pg]

Aim (issue 21): under 100 ms at the median for each page.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, func, insert, select, text

from mailnode import audit
from mailnode.clock import FrozenClock
from mailnode.config import Settings
from mailnode.ids import new_id
from mailnode.install import initialise
from mailnode.node import Node
from mailnode.schema.butler import butler_versions, butlers
from mailnode.schema.butler_runs import butler_runs
from mailnode.schema.outbound import send_manifests, send_recipient_events, send_recipients

sys.path.insert(0, str(Path(__file__).parent))
from web_queue import build, percentiles, report, web_session

SENDS = 10_000
RUNS = 1_000
AUDIT_ENTRIES = 10_000
CHUNK = 2_000

#: Every operator page, with ``{send}``, ``{butler}`` and ``{run}`` filled from the built node.
PAGES = ("/", "/waiting", "/sends", "/sends/{send}", "/limits", "/limits/pauses", "/limits/holds", "/limits/retention",
         "/limits/suppressions", "/butlers", "/butlers/{butler}", "/butlers/runs/{run}", "/people", "/people/access",
         "/people/applications", "/people/me")


def top_up(node: Node, inst: Any, rng: random.Random) -> dict[str, str]:
    """Sends to ``SENDS``, one recipient each, bounce events, a Butler with ``RUNS`` runs and the audit chain to
    ``AUDIT_ENTRIES``; the ids the pages' paths need."""
    now = node.clock.now()
    with node.read() as conn:
        have = conn.execute(select(func.count()).select_from(send_manifests)).scalar() or 0
        template = dict(conn.execute(select(send_manifests).limit(1)).first()._mapping)  # type: ignore[union-attr]
    for start in range(have, SENDS, CHUNK):
        rows = []
        for i in range(start, min(SENDS, start + CHUNK)):
            at = now - timedelta(minutes=(SENDS - i) * 3)
            rows.append({**template, "id": new_id("snd"), "rfc_message_id": f"<{uuid.uuid4().hex}@example.test>",
                         "sealed_at": at, "release_at": at, "state_at": at, "to_addresses": [f"r{i}@remote.test"]})
        with node.begin() as conn:
            conn.execute(insert(send_manifests), rows)
    with node.read() as conn:
        sends = conn.execute(select(send_manifests.c.id, send_manifests.c.state_at, send_manifests.c.to_addresses)
                             .order_by(send_manifests.c.state_at)).all()
    for start in range(0, len(sends), CHUNK):
        recipients, events = [], []
        for k, s in enumerate(sends[start:start + CHUNK], start):
            at = now - timedelta(seconds=30 * (len(sends) - k))  # the newest hundred fall in the last hour
            rid = new_id("srp")
            recipients.append({"id": rid, "org_id": inst.org_id, "manifest_id": s.id, "kind": "to",
                               "address": (s.to_addresses or ["x@remote.test"])[0], "submission_state": "handed_over",
                               "submission_state_at": at, "attempts": 1, "created_at": at})
            if rng.random() < 0.05:
                events.append({"id": new_id("sev"), "org_id": inst.org_id, "manifest_id": s.id, "recipient_id": rid,
                                "event_type": "bounced", "received_at": at, "source": "dsn",
                               "source_event_id": f"bench-{rid}"})
        with node.begin() as conn:
            conn.execute(insert(send_recipients), recipients)
            if events:
                conn.execute(insert(send_recipient_events), events)
    butler_id, version_id = new_id("btl"), new_id("btv")
    with node.begin() as conn:
        conn.execute(insert(butlers).values(id=butler_id, org_id=inst.org_id, name="bench", created_by=inst.user_id,
                                            created_at=now))
        conn.execute(insert(butler_versions).values(
            id=version_id, org_id=inst.org_id, butler_id=butler_id, state="published", version=1, source_text="{}",
            ast_json="{}", ast_sha256="0" * 64, source_sha256="0" * 64, price=0, created_by=inst.user_id,
            created_at=now, published_by=inst.user_id, published_at=now))
        run_rows = [{"id": f"{version_id}-{new_id('msg')}", "org_id": inst.org_id, "butler_id": butler_id,
                     "version_id": version_id, "trigger_event": "message.received", "trigger_key": new_id("msg"),
                     "trigger_facts": {}, "state": "succeeded", "state_at": now - timedelta(minutes=i),
                     "started_at": now - timedelta(minutes=i), "finished_at": now - timedelta(minutes=i)}
                    for i in range(RUNS)]
        conn.execute(insert(butler_runs), run_rows)
    with node.read() as conn:
        length = audit.chain_length(conn, inst.org_id)
    for start in range(length, AUDIT_ENTRIES, CHUNK):
        with node.begin() as conn:
            for i in range(start, min(AUDIT_ENTRIES, start + CHUNK)):
                audit.append(conn, org_id=inst.org_id, at=now, action="bench.entry", actor_id=inst.user_id,
                             detail={"i": i})
    with node.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
    return {"send": sends[len(sends) // 2].id, "butler": butler_id, "run": run_rows[0]["id"]}


def run(label: str, settings: Settings, runs: int) -> None:
    """Build the node and time every page."""
    from fastapi.testclient import TestClient

    from mailnode.app import create_app

    node = Node.open(settings, clock=FrozenClock())
    inst = initialise(node, org="Bench", domain="example.test", admin_email="a@example.test")
    rng = random.Random(21)
    build(node, inst, 10_000, rng)
    ids = top_up(node, inst, rng)
    with node.read() as conn:
        counts = {t.name: conn.execute(select(func.count()).select_from(t)).scalar()
                  for t in (send_manifests, send_recipients, send_recipient_events, butler_runs)}
    print(f"{label}: built {json.dumps(counts)}", flush=True)
    with TestClient(create_app(node)) as client:
        if not web_session(node, inst, client):
            raise SystemExit(f"{label}: could not sign in to the web pages")
        for path in PAGES:
            url = path.format(**ids)
            first = client.get(url, follow_redirects=False)
            if first.status_code == 404:
                print(f"{label:10s} {path:44s} not built", flush=True)
                continue
            if first.status_code != 200:
                raise SystemExit(f"{label}: GET {url} answered {first.status_code}: {first.text[:300]}")
            def render(u: str = url) -> Any:
                return client.get(u)

            report(label, path, percentiles(render, runs))
    node.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--no-pg", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run("sqlite", Settings(data_dir=Path(tmp) / "sqlite"), args.runs)
        if args.no_pg:
            return
        name = f"mailnode_bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(args.pg.replace("postgresql://", "postgresql+psycopg://", 1),
                              isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            url = f"{args.pg.rsplit('/', 1)[0]}/{name}"
            run("postgresql", Settings(data_dir=Path(tmp) / "pg", database_url=url), args.runs)
        finally:
            with admin.connect() as c:
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


if __name__ == "__main__":
    main()
