"""Sign-in rate limits of the web inbox: attempts per client and per address in a window.

An attempt is a sign-in that opened no session (a wrong, revoked or application token; a wrong, expired or
spent code; a refusal) or a code asked for; each is one ``signin_attempts`` row. Before any sign-in work,
``check`` counts the rows of the client and of the address in the last ``budgets.WEB_SIGNIN_WINDOW_SECONDS``
(one statement) and ``decide`` (pure) refuses at ``budgets.WEB_SIGNIN_ATTEMPTS_PER_CLIENT`` or
``budgets.WEB_SIGNIN_ATTEMPTS_PER_ADDRESS`` with 429 ``E_SIGNIN_RATE_LIMITED`` naming the limit. The limit is
a windowed count over append-only rows, like the send breakers: no counter cell, nothing to reset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, case, delete, false, func, or_, select

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.ids import new_id
from mailnode.schema.directory import signin_attempts


@dataclass(frozen=True)
class AttemptCount:
    """Attempts counted for one key in the window, and the oldest of them (None when there are none)."""

    count: int
    oldest: datetime | None


def decide(client: AttemptCount, address: AttemptCount | None, now: datetime) -> MailnodeError | None:
    """The refusal when the client's or the address's attempts reached their limit, else None (pure).

    The client is checked first; ``address`` is None for a token. ``detail.retry_after_seconds`` is when the
    oldest counted attempt leaves the window (at least 1)."""
    window = timedelta(seconds=budgets.WEB_SIGNIN_WINDOW_SECONDS)
    checks = [("WEB_SIGNIN_ATTEMPTS_PER_CLIENT", budgets.WEB_SIGNIN_ATTEMPTS_PER_CLIENT, client, "this client")]
    if address is not None:
        checks.append(("WEB_SIGNIN_ATTEMPTS_PER_ADDRESS", budgets.WEB_SIGNIN_ATTEMPTS_PER_ADDRESS, address,
                       "this address"))
    for name, limit, seen, whose in checks:
        if seen.count >= limit:
            frees = (seen.oldest + window) if seen.oldest is not None else now + window
            wait = max(1, math.ceil((frees - now).total_seconds()))
            minutes = budgets.WEB_SIGNIN_WINDOW_SECONDS // 60
            return MailnodeError(
                code="E_SIGNIN_RATE_LIMITED",
                what=f"Too many sign-in attempts from {whose}: {name} is {limit} per {minutes} minutes, "
                     f"and {seen.count} were made.",
                why="Sign-in attempts that open no session, and codes asked for, are limited per client and "
                    "per address so that nobody can guess codes or make the node send mail without end.",
                fix=f"Wait {wait} seconds and try again, checking the token or code you type; an "
                    "administrator can mint you a new token with mailnode token create.",
                status=429,
                detail={"limit_name": name, "limit": limit, "observed": seen.count,
                        "window_seconds": budgets.WEB_SIGNIN_WINDOW_SECONDS, "retry_after_seconds": wait},
            )
    return None


def count(conn: Connection, *, client: str, address: str | None, now: datetime) -> tuple[AttemptCount,
                                                                                           AttemptCount | None]:
    """The client's and (when given) the address's attempts in the window ending at ``now`` (one
    statement)."""
    since = now - timedelta(seconds=budgets.WEB_SIGNIN_WINDOW_SECONDS)
    a = signin_attempts.c
    mine = a.client == client
    named = a.address == address if address is not None else false()
    row = conn.execute(select(
        func.count(case((mine, 1))).label("client_n"), func.min(case((mine, a.at))).label("client_oldest"),
        func.count(case((named, 1))).label("address_n"), func.min(case((named, a.at))).label("address_oldest"),
    ).where(a.at > since, or_(mine, named))).one()
    by_client = AttemptCount(int(row.client_n), row.client_oldest)
    return by_client, (AttemptCount(int(row.address_n), row.address_oldest) if address is not None else None)


def check(conn: Connection, *, client: str, address: str | None, now: datetime) -> None:
    """Refuse when the limits are reached: 429 ``E_SIGNIN_RATE_LIMITED`` naming the limit."""
    by_client, by_address = count(conn, client=client, address=address, now=now)
    refusal = decide(by_client, by_address, now)
    if refusal is not None:
        raise refusal


def record(conn: Connection, *, client: str, address: str | None, method: str, outcome: str, at: datetime) -> None:
    """Append one attempt (``method`` ``token``, ``code_request`` or ``code``; ``outcome`` the refusal's
    code or ``code_requested``), and delete the attempts that have left the window (nothing counts them any
    more), so the table holds one window's attempts at most."""
    since = at - timedelta(seconds=budgets.WEB_SIGNIN_WINDOW_SECONDS)
    conn.execute(delete(signin_attempts).where(signin_attempts.c.at <= since))
    conn.execute(signin_attempts.insert().values(id=new_id("wsa"), at=at, client=client[:200], address=address,
                                                 method=method, outcome=outcome[:60]))
