"""The ``resend`` transport: one ``POST /emails`` per recipient against Resend's HTTP API (httpx).

Resend builds the MIME itself from JSON fields (``fidelity: reconstructed``), so this transport sends the
structured fields, never the rendered bytes. Each request carries ``Idempotency-Key:
<manifest_id>/<recipient_id>`` and a byte-identical body on every attempt, so a retry inside Resend's 24 h
window (spec/resend.md §4) returns the first email id instead of sending twice. Replies are classified on
the pair (HTTP status, error ``name``), never on one of them alone, because one name arrives with several
statuses (spec/resend.md §5.1); see ``classify_resend``. Resend may replace our Message-ID (§10), so after
acceptance the transport reads the one Resend reports with ``GET /emails/{id}``.

The API key goes only into the ``Authorization`` header; no outcome, log line or repr contains it.
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass
from typing import Any

import httpx

import mailnode
from mailnode import budgets
from mailnode.transports.base import (
    PauseKind,
    Submission,
    SubmitOutcome,
    SubmitState,
    TransportCapabilities,
)

CAPABILITIES = TransportCapabilities(
    name="resend",
    max_recipients_per_submission=budgets.TRANSPORT_RECIPIENTS_PER_SUBMISSION,
    idempotency_window_seconds=budgets.RESEND_IDEMPOTENCY_WINDOW_SECONDS,
    delivery_signals="webhook",
    fidelity="reconstructed",
)

#: Response headers kept on every outcome: the quota readings (spec/resend.md §7) and the rate-limit
#: set (§6). Values are kept raw; their meaning is undocumented and the provider breaker validates them.
CAPTURED_HEADERS: tuple[str, ...] = (
    "x-resend-daily-quota",
    "x-resend-monthly-quota",
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "retry-after",
)

#: (status, name) pairs that mean the account or key cannot send at all (spec/resend.md §3; pause kind
#: ``systemic`` in spec/transactional.md §2). 401 ``validation_error`` is "API key is invalid".
_SYSTEMIC: frozenset[tuple[int, str | None]] = frozenset(
    {
        (401, "missing_api_key"),
        (401, "restricted_api_key"),
        (401, "validation_error"),
        (401, None),
        (403, "invalid_api_key"),
        (403, "restricted_api_key"),
        (403, "suspended_api_key"),
        (403, "invalid_permission"),
        # A 403 without Resend's JSON is the edge refusing the client (Cloudflare 1010, §3).
        (403, None),
    }
)

_QUOTA: dict[str, PauseKind] = {
    "daily_quota_exceeded": "daily_quota",
    "monthly_quota_exceeded": "monthly_quota",
}


@dataclass(frozen=True)
class ResendVerdict:
    """The classification of one response: the state, and the provider pause kind it implies."""

    state: SubmitState
    pause_kind: PauseKind | None = None


def classify_resend(status: int | None, name: str | None, *, request_sent: bool = True) -> ResendVerdict:
    """Classify a ``POST /emails`` response by (HTTP status, error name).

    Args:
        status: the HTTP status, or None when no response arrived.
        name: the ``name`` of Resend's JSON error body, or None when the body was not that JSON.
        request_sent: for ``status`` None, whether the request may have reached the server (False only
            when the connection was never established).

    Returns ``ResendVerdict``:
        - 2xx → ``handed_over``.
        - 429 ``daily_quota_exceeded`` / ``monthly_quota_exceeded`` → ``throttled`` with that pause kind;
          any other 429 (``rate_limit_exceeded``) → ``throttled``.
        - a key or account refusal (401 any, 403 ``invalid_api_key``/``restricted_api_key``/
          ``suspended_api_key``/``invalid_permission``, a non-JSON 403), or 404/405 (the base URL is wrong)
          → ``throttled`` with pause kind ``systemic``: nothing was sent and nothing will be until someone
          fixes the configuration; one 15-minute pause, not a refusal of every send.
        - 403 ``validation_error`` (unverified sending domain, testing sender) and every other 400/422/451
          → ``refused``: deliberately not systemic (spec/transactional.md §2).
        - 409 ``concurrent_idempotent_requests`` / ``invalid_idempotent_request`` → ``outcome_unknown``:
          an earlier request under this key exists and may have been accepted.
        - 5xx → ``outcome_unknown`` (the email may have been stored before the error).
        - no response: ``throttled`` when the request never left, else ``outcome_unknown``.
        - any other status → ``refused`` for other 4xx, ``outcome_unknown`` otherwise (fails closed).
    """
    if status is None:
        return ResendVerdict(SubmitState.OUTCOME_UNKNOWN if request_sent else SubmitState.THROTTLED)
    if 200 <= status <= 299:
        return ResendVerdict(SubmitState.HANDED_OVER)
    if status == 429:
        return ResendVerdict(SubmitState.THROTTLED, _QUOTA.get(name or ""))
    if (status, name) in _SYSTEMIC or status == 401 or status in (404, 405):
        return ResendVerdict(SubmitState.THROTTLED, "systemic")
    if status == 409:
        return ResendVerdict(SubmitState.OUTCOME_UNKNOWN)
    if 400 <= status <= 499:
        return ResendVerdict(SubmitState.REFUSED)
    return ResendVerdict(SubmitState.OUTCOME_UNKNOWN)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``retry-after`` header given as delta-seconds (RFC 9110 §10.2.3), else None."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    if math.isnan(seconds) or math.isinf(seconds) or seconds < 0:
        return None
    return seconds


def request_body(request: Submission) -> bytes:
    """The JSON body for ``POST /emails``, identical bytes for identical submissions.

    ``to`` is the one recipient of this submission (whatever list it came from), so each recipient gets
    its own email id and no copy names a Bcc recipient. Threading and ``Auto-Submitted`` travel in
    ``headers``, with an application's custom headers; structural headers never do (spec/resend.md §1.4).
    An HTML part is ``html`` (HTML-only mail sends no ``text``), Reply-To ``reply_to``, attachments are
    ``attachments`` (base64 ``content``, ``filename``, ``content_type``; §1.3).
    """
    payload: dict[str, Any] = {
        "from": request.from_header,
        "to": [request.recipient],
        "subject": request.subject,
    }
    # HTML-only mail has no text part: the provider gets html alone, as the rendered bytes carry it.
    if request.text or request.html is None:
        payload["text"] = request.text
    if request.reply_to:
        payload["reply_to"] = list(request.reply_to)
    if request.headers:
        payload["headers"] = {name: value for name, value in request.headers}
    # A send's HTML part and attachments travel as Resend's own fields (spec/resend.md §1.2, §1.3).
    if request.html is not None:
        payload["html"] = request.html
    if request.attachments:
        payload["attachments"] = [{"filename": name, "content_type": ctype,
                                   "content": base64.b64encode(data).decode("ascii")}
                                  for name, ctype, data in request.attachments]
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode("utf-8")


class ResendTransport:
    """Submits to ``base_url`` (``https://api.resend.com`` or the local emulator) with ``api_key``."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = budgets.RESEND_HTTP_TIMEOUT_SECONDS,
        fetch_message_id: bool = True,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._client = client or httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            timeout=timeout,
            headers={
                "Authorization": f"Bearer {api_key}",
                "User-Agent": f"mailnode/{getattr(mailnode, '__version__', '0')}",
            },
        )
        self._base_url = base_url
        self._fetch_message_id = fetch_message_id

    def __repr__(self) -> str:
        return f"ResendTransport({self._base_url})"

    @property
    def capabilities(self) -> TransportCapabilities:
        """``resend``: reconstructed, one recipient per request, 24 h dedup, ``delivery_signals: webhook``."""
        return CAPABILITIES

    async def submit(self, request: Submission) -> SubmitOutcome:
        """``POST /emails`` once for ``request.recipient`` and classify the answer with ``classify_resend``.

        On acceptance: ``transport_message_id`` = Resend's email id, ``provider_message_id`` = the
        Message-ID ``GET /emails/{id}`` reports (None when that read fails; the ``email.sent`` webhook
        carries it too). Every outcome carries the captured quota and rate-limit headers.
        """
        key = request.idempotency_key
        if not 1 <= len(key) <= budgets.RESEND_IDEMPOTENCY_KEY_MAX_CHARS:
            raise ValueError(f"idempotency key of {len(key)} characters is outside 1..256")
        try:
            response = await self._client.post(
                "/emails",
                content=request_body(request),
                headers={"Content-Type": "application/json", "Idempotency-Key": key},
            )
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            return SubmitOutcome(
                state=classify_resend(None, None, request_sent=False).state,
                error_name="connect_failed",
                detail=f"POST /emails did not connect: {type(exc).__name__}: {exc}",
            )
        except httpx.HTTPError as exc:
            kind = "timeout" if isinstance(exc, httpx.TimeoutException) else "disconnected"
            return SubmitOutcome(
                state=classify_resend(None, None, request_sent=True).state,
                error_name=kind,
                detail=f"POST /emails sent, no answer: {type(exc).__name__}: {exc}",
            )
        captured = tuple((h, response.headers[h]) for h in CAPTURED_HEADERS if h in response.headers)
        body = _json_object(response)
        name = body.get("name") if isinstance(body.get("name"), str) else None
        verdict = classify_resend(response.status_code, name)
        if verdict.state is SubmitState.HANDED_OVER:
            email_id = body.get("id")
            if not isinstance(email_id, str) or not email_id:
                return SubmitOutcome(
                    state=SubmitState.OUTCOME_UNKNOWN,
                    error_code=response.status_code,
                    error_name="missing_id",
                    detail=f"{response.status_code} without an email id: {response.text[:200]}",
                    quota_headers=captured,
                )
            message_id, note = await self._message_id(email_id)
            return SubmitOutcome(
                state=SubmitState.HANDED_OVER,
                transport_message_id=email_id,
                provider_message_id=message_id,
                detail=f"accepted as {email_id}{note}",
                quota_headers=captured,
            )
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        if response.status_code == 429 and retry_after is None:
            retry_after = float(budgets.RESEND_RETRY_AFTER_DEFAULT_SECONDS)
        message = body.get("message") if isinstance(body.get("message"), str) else response.text[:200]
        return SubmitOutcome(
            state=verdict.state,
            error_code=response.status_code,
            error_name=name,
            detail=f"{response.status_code} {name or '(no name)'}: {message}",
            retry_after_seconds=retry_after,
            pause_kind=verdict.pause_kind,
            quota_headers=captured,
        )

    async def _message_id(self, email_id: str) -> tuple[str | None, str]:
        """The Message-ID Resend reports for ``email_id``, and a note for ``detail`` when it could not."""
        if not self._fetch_message_id:
            return None, ""
        try:
            response = await self._client.get(f"/emails/{email_id}")
        except httpx.HTTPError as exc:
            return None, f"; Message-ID not read: {type(exc).__name__}"
        body = _json_object(response)
        value = body.get("message_id")
        if response.status_code != 200 or not isinstance(value, str) or not value:
            return None, f"; Message-ID not read: {response.status_code} {body.get('name', '')}".rstrip()
        return value, ""

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.aclose()


def _json_object(response: httpx.Response) -> dict[str, Any]:
    try:
        value = response.json()
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
