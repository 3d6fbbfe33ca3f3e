"""Benchmark: ``POST /api/mail/batch`` with ``MAIL_BATCH_MAX`` (100) deferrable messages on SQLite.

Issue 20's target: a batch of 100 deferrable messages is accepted in under one second on this machine. Each
run posts a fresh batch (new idempotency keys, one recipient each, a tag and a metadata entry) to the
in-process app over a node in a temporary data directory, and times the request end to end (JSON in, 100
seals, 100 reads, JSON out). Prints each run, the median of ``--runs`` and the load average.

    .venv/bin/python bench/mail_batch.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from mailnode import budgets
from mailnode.app import create_app
from mailnode.config import Settings
from mailnode.install import initialise
from mailnode.node import Node

TARGET_SECONDS = 1.0


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        node = Node.open(Settings(data_dir=Path(tmp) / "node", database_url=""))
        try:
            installed = initialise(node, org="Bench", domain="example.test", admin_email="alex@example.test")
            admin = {"Authorization": f"Bearer {installed.token}"}
            with TestClient(create_app(node)) as api:
                made = api.post("/api/apps", json={"name": "bench"}, headers=admin).json()
                api.post("/api/access", json={"subject_id": made["application"]["id"], "relation": "send.propose",
                                              "object_id": installed.mailbox_id}, headers=admin)
                app = {"Authorization": f"Bearer {made['token']}"}
                samples = []
                for run in range(args.runs):
                    items = [{"from": "Support <support@example.test>", "class": "deferrable",
                              "to": [f"n{i}@remote.test"], "subject": "Receipt", "text": "Thank you.",
                              "html": "<p>Thank you.</p>", "tags": ["receipt"], "metadata": {"order_id": str(i)},
                              "idempotency_key": f"bench-{run}-{i}"} for i in range(budgets.MAIL_BATCH_MAX)]
                    t0 = time.perf_counter()
                    r = api.post("/api/mail/batch", json=items, headers=app)
                    elapsed = time.perf_counter() - t0
                    statuses = {x["status"] for x in r.json()["results"]}
                    if r.status_code != 200 or statuses != {202}:
                        raise SystemExit(f"run {run}: {r.status_code} {statuses} {r.text[:300]}")
                    samples.append(elapsed)
                    print(f"run {run}: {elapsed:.3f} s for {len(items)} deferrable messages")
        finally:
            node.close()
    median = statistics.median(samples)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    verdict = "under" if median < TARGET_SECONDS else "OVER"
    print(f"median of {len(samples)}: {median:.3f} s ({verdict} the {TARGET_SECONDS:.0f} s target); "
          f"load average {load}")


if __name__ == "__main__":
    main()
