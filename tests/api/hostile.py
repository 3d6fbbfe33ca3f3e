"""Send hostile requests to a real node's API in a child process bounded by ``resource.setrlimit``, so a
regression fails the test instead of exhausting the machine.

``send_hostile(settings, requests)`` starts ``python -m tests.api.hostile`` with ``RLIMIT_AS`` and
``RLIMIT_CPU`` set; the child opens a node over the same settings (a fresh data directory and database),
initialises it, sends each request through the ASGI test client and prints one JSON answer per line.
A request's ``"auth": true`` adds the administrator's token; ``"body_repeat"`` builds large bodies in the
child (``[prefix * n, suffix * n]``, then ``"tail_repeat": [tail, times]`` appended) so the test process never
holds them.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

#: Address space and CPU the child may use: generous for a node answering a request, far below what a
#: quadratic or recursive regression would take.
CHILD_AS_BYTES = 2 * 1024 * 1024 * 1024
CHILD_CPU_SECONDS = 60
ROOT = Path(__file__).resolve().parents[2]


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_AS_BYTES, CHILD_AS_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_SECONDS, CHILD_CPU_SECONDS))


def send_hostile(data_dir: Path, database_url: str, webhook_secret: str,
                 requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each request's ``{"status", "body"}`` as the child saw it; fails when the child dies."""
    spec = json.dumps({"data_dir": str(data_dir), "database_url": database_url, "secret": webhook_secret,
                       "requests": requests})
    done = subprocess.run([sys.executable, "-m", "tests.api.hostile"], input=spec, capture_output=True, check=False,
                          text=True, cwd=ROOT, env=os.environ.copy(), preexec_fn=_limit, timeout=300)
    assert done.returncode == 0, f"the child died ({done.returncode}): {done.stderr[-3000:]}"
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _child() -> None:
    from fastapi.testclient import TestClient

    from mailnode.app import create_app
    from mailnode.config import Settings
    from mailnode.install import initialise
    from mailnode.node import Node

    spec = json.loads(sys.stdin.read())
    node = Node.open(Settings(data_dir=Path(spec["data_dir"]), database_url=spec["database_url"],
                              resend_webhook_secret=spec["secret"]))
    installed = initialise(node, org="Example", domain="example.test", admin_email="alex@example.test")
    with TestClient(create_app(node), raise_server_exceptions=False) as client:
        for req in spec["requests"]:
            body = req.get("body", "")
            if "body_repeat" in req:
                (prefix, suffix), n = req["body_repeat"], req["n"]
                body = prefix * n + suffix * n
            if "tail_repeat" in req:
                tail, times = req["tail_repeat"]
                body += tail * times
            raw = body.encode("utf-8")
            headers = dict(req.get("headers", {}))
            if req.get("auth"):
                headers["Authorization"] = f"Bearer {installed.token}"
            if req.get("sign"):
                from datetime import UTC, datetime

                from svix.webhooks import Webhook

                when = datetime.now(UTC)
                headers.update({"svix-id": "msg_hostile", "svix-timestamp": str(int(when.timestamp())),
                                "svix-signature": Webhook(spec["secret"]).sign("msg_hostile", when, body)})
            r = client.request(req["method"], req["path"], content=raw,
                               headers={"content-type": "application/json", **headers})
            try:
                answer: Any = r.json()
            except ValueError:
                answer = r.text[:500]
            print(json.dumps({"status": r.status_code, "body": answer}), flush=True)
    node.close()


if __name__ == "__main__":
    _child()
