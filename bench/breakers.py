"""Benchmark: the breaker statement's time as the tables grow with rows outside every window.

Keeps the rows inside each window fixed (``--in-window`` recipients handed over and events in the last
minute) and grows ``send_recipients`` and ``send_recipient_events`` with older rows (3 days old: outside
the 1 h, 6 h and 24 h windows) from 10^4 to 10^6 each, timing ``governance.breakers.evaluate`` (the
median of ``--runs``) at each size on SQLite and, when reachable, PostgreSQL. Rows outside the windows
must cost nothing: the ratio between the largest and the smallest size should stay under 2 (index seeks,
not scans). Prints the query plan at the largest size, then the time per in-window row (the same
statement with ten times the in-window rows).

    .venv/bin/python bench/breakers.py [--sizes 10000,100000,1000000] [--pg postgresql://...] [--no-pg]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, insert, text

from mailnode.clock import FrozenClock
from mailnode.config import Settings
from mailnode.governance import breakers
from mailnode.ids import new_id
from mailnode.install import initialise
from mailnode.node import Node
from mailnode.schema.outbound import send_manifests, send_recipient_events, send_recipients

KINDS = ("delivered", "bounced", "complained", "deferred", "delivery_report")
CHUNK = 20_000


def add_rows(node: Node, org_id: str, manifest_id: str, n: int, age_seconds: float, tag: str) -> None:
    """``n`` handed-over recipient rows and ``n`` events, all ``age_seconds`` old (one in seven unattributed)."""
    at = node.clock.now() - timedelta(seconds=age_seconds)
    for start in range(0, n, CHUNK):
        size = min(CHUNK, n - start)
        with node.begin() as conn:
            conn.execute(insert(send_recipients), [
                {"id": new_id("srp"), "org_id": org_id, "manifest_id": manifest_id, "kind": "to",
                 "address": f"{tag}-{start + i}@x.test", "submission_state": "handed_over", "submission_state_at": at,
                 "created_at": at} for i in range(size)])
            conn.execute(insert(send_recipient_events), [
                {"id": new_id("sev"), "org_id": org_id, "event_type": KINDS[(start + i) % len(KINDS)],
                 "recipient": "r@x.test", "manifest_id": manifest_id if (start + i) % 7 else None,
                 "source": "bench", "source_event_id": f"{tag}-{start + i}", "received_at": at} for i in range(size)])


def timed(node: Node, org_id: str, runs: int) -> float:
    """Median seconds of one evaluation (a read transaction each)."""
    samples = []
    for _ in range(runs):
        with node.read() as conn:
            t0 = time.perf_counter()
            breakers.evaluate(conn, org_id=org_id, now=node.clock.now(), delivery_signals="dsn",
                              sending_domain="example.test", recipient_domains=["example.test", "x.test"])
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def analyse(node: Node) -> None:
    with node.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("ANALYZE send_recipients")
            conn.exec_driver_sql("ANALYZE send_recipient_events")
        else:
            conn.exec_driver_sql("ANALYZE")


def run(label: str, settings: Settings, sizes: list[int], in_window: int, runs: int) -> dict[str, Any]:
    """Grow the tables through ``sizes`` and time the statement at each."""
    node = Node.open(settings, clock=FrozenClock())
    inst = initialise(node, org="Bench", domain="example.test", admin_email="a@example.test")
    mid = new_id("snd")
    now = node.clock.now()
    with node.begin() as conn:
        conn.execute(send_manifests.insert().values(
            id=mid, org_id=inst.org_id, mailbox_id=inst.mailbox_id, author_id=inst.user_id,
            envelope_from=inst.mailbox_address, to_addresses=[], cc_addresses=[], bcc_addresses=[], subject="b",
            rfc_message_id=f"{mid}@example.test", fidelity="authored", body_typed_sha256="0" * 64,
            body_normalised_sha256="0" * 64, sealed_at=now, release_at=now, state="handed_over", state_at=now))
    add_rows(node, inst.org_id, mid, in_window, 60, "w")
    have = 0
    results: list[tuple[int, float]] = []
    for size in sizes:
        add_rows(node, inst.org_id, mid, size - have, 3 * 86400, f"o{size}_")
        have = size
        analyse(node)
        results.append((size, timed(node, inst.org_id, runs)))
        print(f"{label:10s} older rows {size:>9,d} per table, {in_window} in window: "
              f"{results[-1][1] * 1000:8.3f} ms", flush=True)
    with node.read() as conn:
        plan = breakers.query_plan(conn, breakers.statement(org_id=inst.org_id, now=node.clock.now(),
                                                            sending_domain="example.test"))
    print(f"{label} plan at {sizes[-1]:,} older rows:")
    for line in plan:
        print("   ", line)
    base = results[0][1]
    ratio = max(t for _, t in results) / min(t for _, t in results)
    print(f"{label}: largest/smallest = {ratio:.2f} (aim < 2)")
    add_rows(node, inst.org_id, mid, 9 * in_window, 60, "w2")
    analyse(node)
    more = timed(node, inst.org_id, runs)
    per_row = (more - base) / (9 * in_window * 2)
    print(f"{label}: {10 * in_window} in-window rows per table: {more * 1000:.3f} ms; "
          f"{per_row * 1e6:.3f} µs per in-window row", flush=True)
    node.close()
    return {"label": label, "results": results, "ratio": ratio, "per_row_us": per_row * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--in-window", type=int, default=200)
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--no-pg", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        run("sqlite", Settings(data_dir=Path(tmp) / "sqlite"), sizes, args.in_window, args.runs)
        if args.no_pg:
            return
        name = f"mailnode_bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(args.pg.replace("postgresql://", "postgresql+psycopg://", 1),
                              isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            url = f"{args.pg.rsplit('/', 1)[0]}/{name}"
            run("postgresql", Settings(data_dir=Path(tmp) / "pg", database_url=url), sizes, args.in_window, args.runs)
        finally:
            with admin.connect() as c:
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


if __name__ == "__main__":
    main()
