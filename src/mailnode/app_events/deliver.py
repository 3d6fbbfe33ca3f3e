"""Webhook delivery: one signed POST per attempt, guarded against server-side request forgery, and the
pass that attempts every delivery that is due and records what happened.

An attempt resolves the endpoint's host once, asks ``rules.ssrf_verdict`` whether it may call it, and
connects to the very address it checked (the URL is rewritten to the IP literal, the ``Host`` header and,
for https, the TLS server name keep the host's name), so a second lookup cannot answer differently. It
follows no redirect (a 3xx is a failed attempt), stops after ``WEBHOOK_TIMEOUT_SECONDS`` and reads at most
``WEBHOOK_RESPONSE_MAX_BYTES`` of the answer. The body is signed per Standard Webhooks with the
``standardwebhooks`` library (headers ``webhook-id``, ``webhook-timestamp``, ``webhook-signature``).

The ``webhook_deliveries`` table is the durable queue: a delivery is claimed by moving its
``next_attempt_at`` past ``WEBHOOK_CLAIM_LEASE_SECONDS`` (a worker that dies leaves it due again), attempted
outside any transaction, and its outcome written with the attempt row. After the last delay of the retry
schedule the delivery fails, its endpoint is disabled and the organisation's administrators get a
``webhook_disabled`` notice.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from sqlalchemy import select, update
from standardwebhooks.webhooks import Webhook

from mailnode import __version__, budgets
from mailnode.app_events import endpoints as endpoints_io
from mailnode.app_events import rules
from mailnode.ids import new_id
from mailnode.node import Node
from mailnode.notices import io as notices_io
from mailnode.notices import rules as notice_rules
from mailnode.schema.app_events import webhook_attempts, webhook_deliveries, webhook_endpoints

log = logging.getLogger("mailnode.app_events")

#: Milliseconds in a second (an attempt's duration is kept in milliseconds).
MS_PER_SECOND = 1000

#: ``host, port -> addresses``: the resolver (``socket.getaddrinfo`` by default).
Resolver = Callable[[str, int], list[str]]


def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to for a TCP connection on ``port``, in the resolver's order, once each.
    An IP literal resolves to itself. Raises ``OSError`` when the name does not resolve."""
    found: list[str] = []
    for info in socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM):
        address = str(info[4][0])
        if address not in found:
            found.append(address)
    return found


@dataclass(frozen=True)
class AttemptResult:
    """What one attempt saw: the address connected to (None when refused before connecting), the status
    code (None without an answer), the error, the start of the answer, the bytes of it read, and how long."""

    address: str | None
    status_code: int | None
    error: str | None
    excerpt: str | None
    response_bytes: int | None
    duration_ms: int


def signed_headers(secret: str, event_id: str, at: datetime, body: str) -> dict[str, str]:
    """The Standard Webhooks headers of ``body`` sent at ``at`` as message ``event_id``."""
    return {"webhook-id": event_id, "webhook-timestamp": str(int(at.timestamp())),
            "webhook-signature": Webhook(secret).sign(event_id, at, body),
            "content-type": "application/json", "user-agent": f"mailnode/{__version__}"}


def attempt(url: str, body: str, headers: dict[str, str], allow_hosts: Sequence[str],
            resolver: Resolver = resolve) -> AttemptResult:
    """POST ``body`` to ``url`` once, as the module docstring says; never raises for the receiver's sake
    (every network failure is the attempt's ``error``)."""
    started = time.monotonic()

    def done(address: str | None, status: int | None, error: str | None, excerpt: str | None = None,
             size: int | None = None) -> AttemptResult:
        elapsed_ms = round((time.monotonic() - started) * MS_PER_SECOND)
        return AttemptResult(address, status, error, excerpt, size, elapsed_ms)

    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or rules.DEFAULT_PORTS[parts.scheme]
    try:
        addresses = resolver(host, port)
    except OSError as exc:
        return done(None, None, f"{host} did not resolve: {exc}")
    verdict = rules.ssrf_verdict(host, addresses, allow_hosts)
    if verdict.address is None:
        return done(None, None, f"refused: {verdict.refusal}")
    literal = f"[{verdict.address}]" if ":" in verdict.address else verdict.address
    target = urlunsplit((parts.scheme, f"{literal}:{port}", parts.path or "/", parts.query, ""))
    extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
    try:
        with httpx.Client(follow_redirects=False, trust_env=False,
                          timeout=budgets.WEBHOOK_TIMEOUT_SECONDS) as client, \
                client.stream("POST", target, content=body.encode("utf-8"),
                               headers={**headers, "host": parts.netloc.rpartition("@")[2]},
                               extensions=extensions) as response:
            read = bytearray()
            for chunk in response.iter_raw():
                read.extend(chunk[:budgets.WEBHOOK_RESPONSE_MAX_BYTES - len(read)])
                if len(read) >= budgets.WEBHOOK_RESPONSE_MAX_BYTES:
                    break
            excerpt = bytes(read[:budgets.WEBHOOK_RESPONSE_KEPT_CHARS]).decode("utf-8", errors="replace")
            status = response.status_code
            error = None
            if not rules.answered_ok(status):
                error = (f"answered {status}; redirects are not followed" if status in rules.REDIRECT_CLASS
                         else f"answered {status}")
            return done(verdict.address, status, error, excerpt, len(read))
    except httpx.HTTPError as exc:
        return done(verdict.address, None, f"{type(exc).__name__}: {exc or 'no answer'}")


@dataclass(frozen=True)
class Claimed:
    """A delivery claimed for one attempt, with what its endpoint needs."""

    id: str
    org_id: str
    endpoint_id: str
    event_id: str
    payload: Any
    attempts: int
    url: str
    secret: str


def claim_due(node: Node, now: datetime) -> list[Claimed]:
    """Claim up to ``WEBHOOK_ATTEMPTS_PER_PASS_MAX`` pending deliveries due at ``now`` of enabled endpoints
    (each claim a conditional update, so two workers never attempt one delivery at once)."""
    d, e = webhook_deliveries.c, webhook_endpoints.c
    lease = now + timedelta(seconds=budgets.WEBHOOK_CLAIM_LEASE_SECONDS)
    claimed: list[Claimed] = []
    with node.begin() as conn:
        rows = conn.execute(
            select(d.id, d.org_id, d.endpoint_id, d.event_id, d.payload, d.attempts, d.next_attempt_at, e.url,
                   e.secret)
            .join(webhook_endpoints, e.id == d.endpoint_id)
            .where(d.state == rules.DeliveryState.PENDING.value, d.next_attempt_at <= now, e.disabled_at.is_(None))
            .order_by(d.next_attempt_at).limit(budgets.WEBHOOK_ATTEMPTS_PER_PASS_MAX)).all()
        for r in rows:
            taken = conn.execute(update(webhook_deliveries)
                                 .where(d.id == r.id, d.state == rules.DeliveryState.PENDING.value,
                                        d.next_attempt_at == r.next_attempt_at)
                                 .values(next_attempt_at=lease)).rowcount
            if taken == 1:
                claimed.append(Claimed(r.id, r.org_id, r.endpoint_id, r.event_id, r.payload, r.attempts, r.url,
                                       r.secret))
    return claimed


def record(node: Node, c: Claimed, result: AttemptResult, at: datetime) -> str:
    """Write the attempt and the delivery's next state (delivered, pending at the next delay, or failed with
    its endpoint disabled and the administrators told); returns the delivery's new state."""
    attempts = c.attempts + 1
    values: dict[str, Any] = {"attempts": attempts, "last_status_code": result.status_code,
                              "last_error": result.error}
    disable = False
    if rules.answered_ok(result.status_code):
        values.update(state=rules.DeliveryState.DELIVERED.value, delivered_at=at, next_attempt_at=None)
    else:
        delay = rules.retry_delay(attempts, node.settings.webhook_retry_schedule_seconds)
        if delay is None:
            values.update(state=rules.DeliveryState.FAILED.value, next_attempt_at=None)
            disable = True
        else:
            values.update(next_attempt_at=at + timedelta(seconds=delay))
    with node.begin() as conn:
        conn.execute(webhook_attempts.insert().values(
            id=new_id("wha"), delivery_id=c.id, attempted_at=at, address=result.address,
            status_code=result.status_code, error=result.error, response_excerpt=result.excerpt,
            response_bytes=result.response_bytes, duration_ms=result.duration_ms))
        conn.execute(update(webhook_deliveries).where(webhook_deliveries.c.id == c.id).values(**values))
        if disable:
            reason = (f"delivery {c.id} failed {attempts} attempts over the retry schedule; last: "
                      f"{result.error or result.status_code}")
            done = conn.execute(update(webhook_endpoints)
                                .where(webhook_endpoints.c.id == c.endpoint_id,
                                       webhook_endpoints.c.disabled_at.is_(None))
                                .values(disabled_at=at, disabled_reason=reason)).rowcount
            if done == 1:
                endpoints_io.disable_pending(conn, c.endpoint_id)
                tell_administrators(conn, c.org_id, c.endpoint_id, c.url, reason, at)
    log.info("webhook.attempt delivery=%s status=%s error=%s state=%s", c.id, result.status_code, result.error,
             values.get("state", "pending"))
    return str(values.get("state", rules.DeliveryState.PENDING.value))


def tell_administrators(conn: Any, org_id: str, endpoint_id: str, url: str, reason: str, at: datetime) -> list[str]:
    """Write a ``webhook_disabled`` notice to each administrator (sealed by the notice sweep); the ids."""
    body = (f"The webhook endpoint {endpoint_id} ({url}) was disabled: {reason}.\n\nNo further events go to it. "
            f"When the receiver answers again, enable it with PATCH /api/webhooks/endpoints/{endpoint_id} "
            '{"enabled": true} and send the failed deliveries again with POST '
            "/api/webhooks/deliveries/{id}/resend.\n")
    pending = notices_io.Pending(notice_rules.NoticeKind.WEBHOOK_DISABLED, f"{endpoint_id}@{at.isoformat()}",
                                 notices_io.administrators(conn, org_id), (), body)
    return notices_io.write(conn, org_id, pending, at)


def deliver_due(node: Node, resolver: Resolver = resolve) -> dict[str, int]:
    """Attempt every claimed due delivery once; ``{new state: count}``."""
    counts: dict[str, int] = {}
    for c in claim_due(node, node.clock.now()):
        body = json.dumps({**c.payload, "id": c.event_id}, separators=(",", ":"), sort_keys=True)
        sent_at = node.clock.now()
        result = attempt(c.url, body, signed_headers(c.secret, c.event_id, sent_at, body),
                         node.settings.webhook_allow_hosts, resolver)
        state = record(node, c, result, node.clock.now())
        counts[state] = counts.get(state, 0) + 1
    return counts
