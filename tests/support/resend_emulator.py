"""A local HTTP server that behaves like Resend's sending API, for tests (spec/resend.md §13).

There is no internet here, so the ``resend`` transport is tested against this server, not a patched
client. It runs a FastAPI app under uvicorn on a free loopback port in a background thread
(``ResendEmulator.start()`` / ``stop()``, or the ``resend_server`` fixture in ``tests/outbound``).

Implemented from the checklist: routing with 404 ``not_found`` / 405 ``method_not_allowed`` (1); the error
shape (2); rate-limit headers on every response and ``retry-after`` on 429 (3); key authentication with
``full_access`` / ``sending_access`` permissions and the legacy 403 switch (4); optional User-Agent check
(5); ``POST /emails`` success (6); validation in the documented order (7, minus attachments' size);
verified sender domains (8); custom headers and the Message-ID replace/keep switch (9); batch (10, strict
and permissive); ``Idempotency-Key`` (11) with replay, 409s, the 24 h window and the store-errors switch;
a fixed one-second rate limiter (12); daily/monthly quotas with a UTC clock (13); quota headers with
forced values (14); fault injection (15): scripted statuses, empty/HTML bodies, a delay after the email
was stored, a connection dropped after it was stored, and a request held in flight; ``GET /emails/{id}``,
``GET /emails``, ``PATCH`` and cancel (16); signed webhook payloads for stored emails (17-18,
``webhook()``), built for the test to post; a request log (21). Delivering webhooks, retry schedules and
scripted event sequences by test address (19-20) are not implemented.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import Response

Permission = Literal["full_access", "sending_access"]

_ADDRESS = re.compile(r"^[^@\s<>,]+@[^@\s<>,]+\.[^@\s<>,]+$")
_NAMED = re.compile(r"^[^<>]*<([^<>]+)>$")
_TAG = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


@dataclass
class Fault:
    """A scripted misbehaviour for one matching ``POST /emails`` (or batch) request.

    Attributes:
        recipient: match requests whose first ``to`` is this address; None matches any request.
        status: answer with this status instead of processing (e.g. 500, 503); None processes normally.
        name: the error name for ``status`` (``application_error``); None with ``body`` set sends ``body``.
        body: a raw body to send with ``status`` (``b""`` for an empty 5xx, HTML for an edge error).
        content_type: the content type of ``body``.
        delay_after_accept: seconds to wait after the email was stored and its idempotent response
            recorded, before answering (the "accepted, but the client timed out" case).
        hold_before_accept: seconds the request stays in flight (its idempotency key registered, nothing
            stored yet) before it is processed; a second request with the key meanwhile gets 409
            ``concurrent_idempotent_requests``.
        drop_after_accept: store the email and record its idempotent response, then send the response
            headers and close the connection without the body (the client sees a dropped connection).
        times: how many requests this fault applies to.
    """

    recipient: str | None = None
    status: int | None = None
    name: str | None = None
    body: bytes | None = None
    content_type: str = "text/html"
    delay_after_accept: float = 0.0
    hold_before_accept: float = 0.0
    drop_after_accept: bool = False
    times: int = 1


class _DropAfterHeaders(Response):
    """Sends the status line and headers of ``inner``, then aborts the connection before the body."""

    def __init__(self, inner: Response) -> None:
        super().__init__(inner.body, inner.status_code, media_type="application/json; charset=utf-8")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        # An exception after the response started makes uvicorn close the connection mid-response.
        raise ConnectionAbortedError("fault: dropped after accepting")


@dataclass
class _Hold:
    """A request parked in flight; ``resume`` processes it after ``seconds``."""

    seconds: float
    resume: Callable[[], tuple[Response, float]]


@dataclass
class LoggedRequest:
    """One request as the emulator saw it, and what it answered."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    status: int = 0
    response_body: bytes = b""
    #: True while a ``hold_before_accept`` fault keeps the request in flight (its idempotency key is already
    #: registered, so a second request with that key now meets it), False before and after.
    held: bool = False


@dataclass
class _IdemEntry:
    first_at: datetime
    fingerprint: str
    done: bool = False
    status: int = 0
    body: bytes = b""


@dataclass
class EmulatorConfig:
    """Switches for the emulator; the defaults follow spec/resend.md §13."""

    api_keys: dict[str, Permission] = field(default_factory=lambda: {"re_test_full": "full_access"})
    legacy_invalid_key: bool = False
    require_user_agent: bool = False
    rate_limit_per_second: int = 10
    plan: Literal["free", "paid"] = "free"
    daily_limit: int = 100
    monthly_limit: int = 3000
    #: None: every sender domain counts as verified.
    verified_domains: set[str] | None = None
    keep_custom_message_id: bool = False
    idempotency_window: timedelta = timedelta(hours=24)
    idempotency_compare_bytes: bool = False
    idempotency_store_errors: bool = False
    quota_headers_on_errors: bool = True
    quota_count_includes_current: bool = True
    #: Force the values of the quota headers: a string, or None to omit the header.
    forced_daily_quota: str | None | Literal["auto"] = "auto"
    forced_monthly_quota: str | None | Literal["auto"] = "auto"
    unparsable_json_status: int = 422


class ResendEmulator:
    """The emulator's state and its ASGI app; ``start()`` serves it on ``base_url``."""

    def __init__(self, config: EmulatorConfig | None = None, clock: Callable[[], datetime] | None = None) -> None:
        self.config = config or EmulatorConfig()
        self.clock: Callable[[], datetime] = clock or (lambda: datetime.now(UTC))
        self.emails: dict[str, dict[str, Any]] = {}
        self.requests: list[LoggedRequest] = []
        self.faults: list[Fault] = []
        self._idem: dict[tuple[str, str, str], _IdemEntry] = {}
        self._window_start: int = -1
        self._window_count = 0
        self._daily: dict[str, int] = {}
        self._monthly: dict[str, int] = {}
        self._lock = threading.Lock()
        self.app = self._build_app()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle ---------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` once started."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Serve on a free loopback port in a background thread; returns once it accepts connections."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit TCP_NODELAY on Linux; without it a kept-alive connection waits
        # ~40 ms per response (Nagle against the client's delayed ACK).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the Resend emulator did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        """Stop serving and join the thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    # -- test hooks --------------------------------------------------------------------------------

    def add_fault(self, fault: Fault) -> None:
        """Script a misbehaviour for the next matching send request(s)."""
        with self._lock:
            self.faults.append(fault)

    def sends(self) -> list[LoggedRequest]:
        """The logged ``POST /emails`` requests, in arrival order."""
        return [r for r in self.requests if r.method == "POST" and r.path == "/emails"]

    def webhook(self, email_id: str, event_type: str, secret: str, *, svix_id: str | None = None,
                extra: dict[str, Any] | None = None, legacy: bool = False,
                at: datetime | None = None) -> tuple[bytes, dict[str, str]]:
        """A signed webhook delivery for a stored email (checklist 17-18), built but not sent.

        Returns ``(body, headers)`` ready to POST to mailnode's webhook route. ``extra`` is merged into
        ``data`` (e.g. ``{"bounce": {...}}``); ``legacy`` omits ``message_id`` as 2023 payloads did. The
        last event of the stored email follows ``event_type``.
        """
        from svix.webhooks import Webhook

        email = self.emails[email_id]
        when = at or self.clock()
        data: dict[str, Any] = {
            "email_id": email_id,
            "created_at": _iso_z(datetime.strptime(email["created_at"], "%Y-%m-%d %H:%M:%S.%f+00").replace(tzinfo=UTC)),
            "from": email["from"],
            "to": email["to"],
            "subject": email["subject"],
        }
        if not legacy:
            data["message_id"] = email["message_id"]
        if email.get("headers"):
            data["headers"] = [{"name": k, "value": v} for k, v in email["headers"].items()]
        data.update(extra or {})
        body = json.dumps({"type": event_type, "created_at": _iso_z(when), "data": data}).encode()
        msg_id = svix_id or f"msg_{uuid.uuid4().hex[:24]}"
        signature = Webhook(secret).sign(msg_id, when, body.decode())
        email["last_event"] = event_type.removeprefix("email.")
        return body, {"svix-id": msg_id, "svix-timestamp": str(int(when.timestamp())), "svix-signature": signature,
                      "content-type": "application/json"}

    # -- the app -----------------------------------------------------------------------------------

    def _build_app(self) -> FastAPI:
        app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
        routes: dict[str, set[str]] = {
            r"^/emails$": {"POST", "GET"},
            r"^/emails/batch$": {"POST"},
            r"^/emails/[^/]+$": {"GET", "PATCH"},
            r"^/emails/[^/]+/cancel$": {"POST"},
        }

        @app.api_route("/{path:path}", methods=["GET", "POST", "PATCH", "PUT", "DELETE"])
        async def handle(request: Request, path: str) -> Response:
            raw = await request.body()
            entry = LoggedRequest(request.method, "/" + path, {k.lower(): v for k, v in request.headers.items()}, raw)
            with self._lock:
                self.requests.append(entry)
            result, delay = self._dispatch(entry, routes)
            if isinstance(result, _Hold):
                entry.held = True
                await asyncio.sleep(result.seconds)
                with self._lock:
                    result, delay = result.resume()
                entry.held = False
            response = result
            entry.status = response.status_code
            entry.response_body = bytes(response.body)
            if delay:
                await asyncio.sleep(delay)
            return response

        return app

    def _dispatch(self, req: LoggedRequest, routes: dict[str, set[str]]) -> tuple[Response | _Hold, float]:
        with self._lock:
            rate = self._rate_headers_and_count()
            allowed = next((methods for pattern, methods in routes.items() if re.match(pattern, req.path)), None)
            if allowed is None:
                return self._error(404, "not_found", "The requested endpoint does not exist.", rate), 0
            if req.method not in allowed:
                return self._error(405, "method_not_allowed", "Method is not allowed for the requested path.",
                                   rate), 0
            if self.config.require_user_agent and not req.headers.get("user-agent"):
                return Response(b"error code: 1010", 403, headers=rate, media_type="text/plain"), 0
            sending = req.method == "POST" and req.path in ("/emails", "/emails/batch")
            refusal = self._authenticate(req, sending, rate)
            if refusal is not None:
                return refusal, 0
            if rate.get("ratelimit-remaining") == "-1":
                rate["ratelimit-remaining"] = "0"
                rate["retry-after"] = "1"
                limit = self.config.rate_limit_per_second
                return self._error(429, "rate_limit_exceeded",
                                   f"Too many requests. You can only make {limit} requests per second.", rate), 0
            if sending:
                return self._send(req, rate)
            if req.method == "GET" and req.path == "/emails":
                data = sorted(self.emails.values(), key=lambda e: e["created_at"], reverse=True)
                return self._json(200, {"object": "list", "has_more": False, "data": data}, rate), 0
            email_id = req.path.split("/")[2]
            email = self.emails.get(email_id)
            if email is None:
                return self._error(404, "not_found", "Email not found", rate), 0
            if req.path.endswith("/cancel"):
                email["last_event"] = "canceled"
                return self._json(200, {"object": "email", "id": email_id}, rate), 0
            if req.method == "PATCH":
                try:
                    update = json.loads(req.body)
                except ValueError:
                    update = None
                if not isinstance(update, dict) or not isinstance(update.get("scheduled_at"), str):
                    return self._error(422, "validation_error", "Invalid `scheduled_at` field.", rate), 0
                email["scheduled_at"], email["last_event"] = update["scheduled_at"], "scheduled"
                return self._json(200, {"object": "email", "id": email_id}, rate), 0
            return self._json(200, email, rate), 0

    # -- pieces ------------------------------------------------------------------------------------

    def _rate_headers_and_count(self) -> dict[str, str]:
        second = int(self.clock().timestamp())
        if second != self._window_start:
            self._window_start, self._window_count = second, 0
        self._window_count += 1
        limit = self.config.rate_limit_per_second
        remaining = limit - self._window_count
        return {
            "ratelimit-limit": str(limit),
            "ratelimit-remaining": str(max(remaining, -1)),
            "ratelimit-reset": "1",
            "ratelimit-policy": f"{limit};w=1",
        }

    def _authenticate(self, req: LoggedRequest, sending: bool, rate: dict[str, str]) -> Response | None:
        auth = req.headers.get("authorization")
        if auth is None:
            return self._error(401, "missing_api_key", "Missing API key in the authorization header.", rate)
        match = re.match(r"^Bearer (re_\S+)$", auth)
        if self.config.legacy_invalid_key and (match is None or match.group(1) not in self.config.api_keys):
            return self._error(403, "invalid_api_key", "API key is invalid.", rate)
        if match is None:
            return self._error(400, "validation_error", "API key is invalid", rate)
        permission = self.config.api_keys.get(match.group(1))
        if permission is None:
            return self._error(401 if sending else 400, "validation_error", "API key is invalid", rate)
        if not sending and permission == "sending_access":
            return self._error(401, "restricted_api_key", "This API key is restricted to only send emails.", rate)
        return None

    def _send(self, req: LoggedRequest, rate: dict[str, str]) -> tuple[Response | _Hold, float]:
        now = self.clock()
        key = req.headers.get("idempotency-key")
        if key is not None and not 1 <= len(key) <= 256:
            return self._error(400, "invalid_idempotency_key",
                               "Idempotency keys, if present, must have between 1 and 256 characters.", rate), 0
        try:
            parsed = json.loads(req.body)
        except ValueError:
            status = self.config.unparsable_json_status
            return self._error(status, "validation_error", "Invalid JSON body.", rate), 0
        fingerprint = (req.body.decode("utf-8", "replace") if self.config.idempotency_compare_bytes
                       else json.dumps(parsed, sort_keys=True, separators=(",", ":")))
        idem_key = ("team", req.path, key) if key is not None else None
        if idem_key is not None:
            entry = self._idem.get(idem_key)
            if entry is not None and now - entry.first_at >= self.config.idempotency_window:
                entry = None
            if entry is not None:
                if entry.fingerprint != fingerprint:
                    return self._error(409, "invalid_idempotent_request",
                                       "This idempotency key has been used with this HTTP method and endpoint "
                                       "within the last 24 hours, but the request body was modified and doesn't "
                                       "match the original request.", rate), 0
                if not entry.done:
                    return self._error(409, "concurrent_idempotent_requests",
                                       "There is another request in progress with the same idempotency key.",
                                       rate), 0
                return Response(entry.body, entry.status, headers=rate,
                                media_type="application/json; charset=utf-8"), 0
            self._idem[idem_key] = _IdemEntry(first_at=now, fingerprint=fingerprint)

        def process() -> tuple[Response, float]:
            response, delay = self._send_fresh(req.path, parsed, req.headers, rate, now)
            if idem_key is not None:
                entry = self._idem[idem_key]
                if 200 <= response.status_code < 300 or self.config.idempotency_store_errors:
                    entry.done, entry.status, entry.body = True, response.status_code, bytes(response.body)
                else:
                    del self._idem[idem_key]
            return response, delay

        hold = self._take_fault(_first_to(req.path, parsed), hold=True)
        if hold is not None:
            return _Hold(hold.hold_before_accept, process), 0
        return process()

    def _take_fault(self, first_to: str | None, hold: bool = False) -> Fault | None:
        for fault in self.faults:
            if (fault.hold_before_accept > 0) != hold:
                continue
            if fault.times > 0 and (fault.recipient is None or fault.recipient == first_to):
                fault.times -= 1
                if fault.times == 0:
                    self.faults.remove(fault)
                return fault
        return None

    def _send_fresh(self, path: str, parsed: Any, headers: dict[str, str], rate: dict[str, str],
                    now: datetime) -> tuple[Response, float]:
        items = parsed if path == "/emails/batch" else [parsed]
        fault = self._take_fault(_first_to(path, parsed))
        if fault is not None and fault.status is not None:
            if fault.body is not None:
                return Response(fault.body, fault.status, headers=rate, media_type=fault.content_type), 0
            return self._error(fault.status, fault.name or "application_error", "Internal server error.", rate), 0
        quota = self._quota_headers(0) if self.config.quota_headers_on_errors else {}
        if path == "/emails/batch" and (not isinstance(parsed, list) or not 1 <= len(parsed) <= 100):
            return self._error(422, "validation_error", "A batch holds 1 to 100 emails.", rate | quota), 0
        errors: list[dict[str, Any]] = []
        valid: list[tuple[int, dict[str, Any]]] = []
        for index, item in enumerate(items):
            problem = self._validate(item, batch=path == "/emails/batch")
            if problem is not None:
                if path == "/emails" or headers.get("x-batch-validation", "strict") != "permissive":
                    status, name, message = problem
                    return self._error(status, name, message, rate | quota), 0
                errors.append({"index": index, "message": problem[2]})
            else:
                valid.append((index, item))
        count = sum(self._recipient_count(item) for _, item in valid)
        day, month = now.strftime("%Y-%m-%d"), now.strftime("%Y-%m")
        if self.config.plan == "free" and self._daily.get(day, 0) + count > self.config.daily_limit:
            return self._error(429, "daily_quota_exceeded", "You have reached your daily email sending quota.",
                               rate | quota), 0
        if self._monthly.get(month, 0) + count > self.config.monthly_limit:
            return self._error(429, "monthly_quota_exceeded",
                               "You have reached your monthly email sending quota.", rate | quota), 0
        self._daily[day] = self._daily.get(day, 0) + count
        self._monthly[month] = self._monthly.get(month, 0) + count
        ids = [self._store(item, now, batch=path == "/emails/batch") for _, item in valid]
        quota = self._quota_headers(0 if self.config.quota_count_includes_current else count)
        delay = fault.delay_after_accept if fault is not None else 0.0
        if path == "/emails":
            accepted = self._json(200, {"id": ids[0]}, rate | quota)
            if fault is not None and fault.drop_after_accept:
                return _DropAfterHeaders(accepted), delay
            return accepted, delay
        body: dict[str, Any] = {"data": [{"id": i} for i in ids]}
        if errors:
            body["errors"] = errors
        return self._json(200, body, rate | quota), delay

    @staticmethod
    def _recipient_count(item: dict[str, Any]) -> int:
        return sum(len(_as_list(item.get(k))) for k in ("to", "cc", "bcc"))

    def _validate(self, item: Any, batch: bool) -> tuple[int, str, str] | None:
        if not isinstance(item, dict):
            return 422, "validation_error", "The email must be an object."
        for required in ("from", "to", "subject"):
            if item.get(required) in (None, "", []):
                return 422, "missing_required_field", f"Missing `{required}` field."
        has_body = any(k in item for k in ("html", "text"))
        if not has_body and "template" not in item:
            return 422, "missing_required_field", "Missing `html` or `text` field."
        if "template" in item and has_body:
            return 422, "validation_error", "`template` cannot be combined with `html` or `text`."
        sender = _bare(item["from"]) if isinstance(item["from"], str) else None
        if sender is None:
            return 422, "validation_error", ("Invalid `from` field. The email address needs to follow the "
                                             "`email@example.com` or `Name <email@example.com>` format.")
        for name in ("to", "cc", "bcc", "reply_to"):
            value = item.get(name)
            if value is None:
                continue
            if isinstance(value, str) and "," in value:
                return 422, "validation_error", f"Invalid `{name}` field. Send several addresses as an array."
            entries = _as_list(value)
            if name == "to" and len(entries) > 50:
                return 422, "validation_error", "Invalid `to` field. At most 50 addresses."
            if any(not isinstance(e, str) or _bare(e) is None for e in entries):
                return 422, "validation_error", f"Invalid `{name}` field. The email address is malformed."
        headers = item.get("headers")
        if headers is not None and (not isinstance(headers, dict)
                                    or any(not isinstance(v, str) for v in headers.values())):
            return 422, "validation_error", "Invalid `headers` field. Header values must be strings."
        if batch and "attachments" in item:
            return 422, "validation_error", "Attachments are not supported in batch sends."
        for attachment in item.get("attachments") or []:
            if not isinstance(attachment, dict) or not (attachment.get("content") or attachment.get("path")):
                return 422, "invalid_attachment", "Attachment must have either a `content` or `path`."
        tags = item.get("tags") or []
        if len(tags) > 75 or any(not isinstance(t, dict) or not _TAG.match(str(t.get("name", "")))
                                 or not _TAG.match(str(t.get("value", ""))) for t in tags):
            return 422, "validation_error", "Invalid `tags` field."
        domain = sender.rpartition("@")[2].lower()
        if self.config.verified_domains is not None and domain not in self.config.verified_domains:
            return (403, "validation_error",
                    f"The `{domain}` domain is not verified. Please, add and verify your domain.")
        return None

    def _store(self, item: dict[str, Any], now: datetime, batch: bool) -> str:
        email_id = str(uuid.uuid4())
        headers = item.get("headers") or {}
        custom = next((v for k, v in headers.items() if k.lower() == "message-id"), None)
        message_id = custom if custom and self.config.keep_custom_message_id else f"<{email_id}@emulator.resend.test>"
        self.emails[email_id] = {
            "object": "email",
            "id": email_id,
            "message_id": message_id,
            "to": _as_list(item.get("to")),
            "from": item.get("from"),
            "created_at": now.strftime("%Y-%m-%d %H:%M:%S.%f") + "+00",
            "subject": item.get("subject"),
            "html": item.get("html"),
            "text": item.get("text"),
            "bcc": _as_list(item.get("bcc")),
            "cc": _as_list(item.get("cc")),
            "reply_to": _as_list(item.get("reply_to")),
            "last_event": "scheduled" if item.get("scheduled_at") else ("queued" if batch else "sent"),
            "scheduled_at": item.get("scheduled_at"),
            "tags": item.get("tags") or [],
            "headers": headers,
        }
        return email_id

    def _quota_headers(self, minus: int) -> dict[str, str]:
        now = self.clock()
        out: dict[str, str] = {}
        daily = str(max(self._daily.get(now.strftime("%Y-%m-%d"), 0) - minus, 0))
        monthly = str(max(self._monthly.get(now.strftime("%Y-%m"), 0) - minus, 0))
        forced_daily, forced_monthly = self.config.forced_daily_quota, self.config.forced_monthly_quota
        if forced_daily == "auto":
            if self.config.plan == "free":
                out["x-resend-daily-quota"] = daily
        elif forced_daily is not None:
            out["x-resend-daily-quota"] = forced_daily
        if forced_monthly == "auto":
            out["x-resend-monthly-quota"] = monthly
        elif forced_monthly is not None:
            out["x-resend-monthly-quota"] = forced_monthly
        return out

    @staticmethod
    def _json(status: int, body: Any, headers: dict[str, str]) -> Response:
        return Response(json.dumps(body).encode(), status, headers=headers,
                        media_type="application/json; charset=utf-8")

    def _error(self, status: int, name: str, message: str, headers: dict[str, str]) -> Response:
        return self._json(status, {"statusCode": status, "message": message, "name": name}, headers)


def _iso_z(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def _first_to(path: str, parsed: Any) -> str | None:
    first = parsed[0] if path == "/emails/batch" and isinstance(parsed, list) and parsed else parsed
    to = first.get("to") if isinstance(first, dict) else None
    if isinstance(to, list) and to and isinstance(to[0], str):
        return to[0]
    return to if isinstance(to, str) else None


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _bare(value: str) -> str | None:
    text = value.strip()
    named = _NAMED.match(text)
    if named:
        text = named.group(1).strip()
    return text if _ADDRESS.match(text) else None


__all__ = ["EmulatorConfig", "Fault", "LoggedRequest", "ResendEmulator"]
