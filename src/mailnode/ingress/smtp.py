"""The SMTP listener (aiosmtpd): takes mail for this node's mailboxes and VERP bounce addresses.

Behaviour (RFC 5321):
- ``RCPT TO`` is accepted only for a route (``ingress.routing.resolve``); anything else, the null
  address included, gets ``550 5.1.1``.
- A message over ``budgets.MESSAGE_MAX_BYTES`` gets ``552`` (aiosmtpd's size limit, advertised in EHLO)
  and nothing is stored.
- Lines longer than 1,000 octets are accepted up to the size limit (real bounces carry them); a message
  with a bare LF line ending is refused ``550 5.5.2`` (RFC 5321 §2.3.8; SMTP smuggling), on top of
  aiosmtpd ending DATA only at CRLF.CRLF.
- ``MAIL FROM:<>`` (the null reverse path of bounces) is accepted.
- A recipient repeated in one transaction (compared by ``receipts.recipient_key``: local part as written,
  domain case-insensitively, RFC 5321 §2.4) is answered ``250`` again but delivered once.
- The reply to ``DATA`` is ``250`` only after the bytes are stored and one receipt per delivered-to address
  is committed; any failure there answers ``451`` so the client retries. Concurrent deliveries are committed
  together by the listener's writer thread (``ingress.committer``, group commit), which is the ``DATA``
  handler's one thread hop; a failed group answers ``451`` to each of its deliveries and to no other.
- ``RCPT TO`` is answered from the route cache (``ingress.route_cache``) when the address was routed before and
  nothing route-related changed since; otherwise it is looked up on a worker thread.
Materialisation is not on the ``250`` path: the writer hands each committed group's receipt ids to
``on_accepted`` on its own thread (``ingress.workflows.start`` enqueues their DBOS workflows).
Per-transaction state (the routes of the current envelope) is kept apart from the connection.
Credentials are never logged (the listener offers no AUTH).
"""

from __future__ import annotations

import asyncio
import logging
import re
import weakref
from collections.abc import Callable

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from mailnode import budgets
from mailnode.errors import MailnodeError
from mailnode.ingress import receipts, route_cache, routing
from mailnode.ingress.committer import GroupCommitter
from mailnode.node import Node

log = logging.getLogger("mailnode.smtp")

_BARE_LF = re.compile(rb"(?<!\r)\n")

REPLY_OK = "250 OK"
REPLY_ACCEPTED = "250 2.0.0 Message accepted for delivery"
REPLY_UNKNOWN_RECIPIENT = "550 5.1.1 <{address}>: Recipient address rejected: no such mailbox on this node"
REPLY_NULL_RECIPIENT = "550 5.1.3 The null address cannot receive mail"
REPLY_TOO_LARGE = "552 5.3.4 Message exceeds the fixed maximum message size"
REPLY_BARE_LF = "550 5.5.2 Bare LF in message data: lines must end with CRLF (RFC 5321 §2.3.8)"
REPLY_TRY_AGAIN = "451 4.3.0 Temporary local problem: the message was not stored, try again"
REPLY_LOOKUP_FAILED = "451 4.3.0 Temporary local problem looking up the recipient, try again"


class IngressHandler:
    """aiosmtpd handler: routes recipients (through the route cache), hands each delivery to the group
    committer and answers once its receipts are committed."""

    def __init__(self, node: Node, committer: GroupCommitter) -> None:
        self.node = node
        self.committer = committer
        self.routes = route_cache.RouteCache(receipts.recipient_key)
        route_cache.watch(node.engine)
        # Per transaction: aiosmtpd makes a new Envelope for each MAIL FROM, so keying on it keeps
        # one transaction's routes from leaking into the next on the same connection.
        self._routes: weakref.WeakKeyDictionary[Envelope, list[routing.Route]] = weakref.WeakKeyDictionary()
        #: The recipient keys (``receipts.recipient_key``) already accepted in each transaction.
        self._seen: weakref.WeakKeyDictionary[Envelope, set[str]] = weakref.WeakKeyDictionary()

    def _resolve(self, address: str) -> routing.Route | None:
        gen, at = route_cache.generation(), self.routes.now()
        with self.node.read() as conn:
            route = routing.resolve(conn, address, self.node.settings.bounce_domain)
        if route is not None:
            self.routes.put(address, route, gen, at)
        return route

    async def handle_RCPT(self, server: SMTP, session: Session, envelope: Envelope, address: str,
                          rcpt_options: list[str]) -> str:
        """Accept a recipient of this node, refuse anything else with 550 5.1.1."""
        if not address or address.strip() in ("<>", ""):
            return REPLY_NULL_RECIPIENT
        key = receipts.recipient_key(address)
        seen = self._seen.setdefault(envelope, set())
        if key in seen:
            return REPLY_OK  # already a recipient of this transaction: one delivery per address
        route = self.routes.get(address)
        if route is None:
            try:
                route = await asyncio.to_thread(self._resolve, address)
            except Exception:  # a database fault is a temporary refusal, logged with its traceback
                log.exception("smtp.rcpt_lookup_failed")
                return REPLY_LOOKUP_FAILED
        if route is None:
            return REPLY_UNKNOWN_RECIPIENT.format(address=address)
        envelope.rcpt_tos.append(address)
        seen.add(key)
        self._routes.setdefault(envelope, []).append(route)
        return REPLY_OK

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """Store the bytes and the receipts, then answer 250; 552 over the size limit; 451 on failure."""
        raw = envelope.original_content or b""
        routes = tuple(self._routes.pop(envelope, []))
        self._seen.pop(envelope, None)
        if _BARE_LF.search(raw):
            # aiosmtpd (since 1.4.5) no longer ends DATA at a bare-LF dot, but a message carrying bare LFs
            # is the raw material of SMTP smuggling through other hops; refuse it as Postfix does.
            return REPLY_BARE_LF
        peer = session.peer[0] if isinstance(session.peer, tuple) else str(session.peer)
        env = receipts.Envelope(mail_from=str(envelope.mail_from or ""), routes=routes, remote_addr=peer,
                                helo=session.host_name, source="smtp")
        try:
            await asyncio.wrap_future(self.committer.submit(raw, env))
        except MailnodeError as exc:
            if exc.code == "E_MESSAGE_TOO_LARGE":
                return REPLY_TOO_LARGE
            log.exception("smtp.accept_failed code=%s", exc.code)
            return REPLY_TRY_AGAIN
        except Exception:  # the client retries; the traceback is logged
            log.exception("smtp.accept_failed")
            return REPLY_TRY_AGAIN
        return REPLY_ACCEPTED


class _LiberalSMTP(SMTP):
    """aiosmtpd's SMTP with the line length limit raised to the message size (RFC 5321 §4.5.3.1.6 is
    1,000 octets, but real bounces carry longer lines)."""

    line_length_limit = budgets.SMTP_LINE_MAX_BYTES


class IngressController(Controller):
    """A threaded aiosmtpd controller serving ``IngressHandler`` with mailnode's limits; stopping it stops
    the handler's group committer after the server (what was already handed over is committed)."""

    handler: IngressHandler

    def factory(self) -> SMTP:
        """The SMTP protocol instance for one connection."""
        return _LiberalSMTP(self.handler, **self.SMTP_kwargs)

    def stop(self, no_assert: bool = False) -> None:
        """Stop serving, then commit what is waiting and stop the writer thread."""
        try:
            super().stop(no_assert)
        finally:
            self.handler.committer.stop()


def start_listener(node: Node, on_accepted: Callable[[list[str]], None] | None = None,
                   host: str | None = None, port: int | None = None) -> IngressController:
    """Start listening (default: the ``smtp`` setting); returns the controller (``.stop()`` to stop).
    ``on_accepted`` gets the receipt ids of each committed group, on the committer's enqueuing thread."""
    h, p = node.settings.smtp_hostport
    committer = GroupCommitter(node, on_accepted)
    committer.start()
    controller = IngressController(IngressHandler(node, committer), hostname=host or h,
                                   port=port if port is not None else p,
                                   data_size_limit=budgets.MESSAGE_MAX_BYTES, ident="mailnode")
    try:
        controller.start()
    except BaseException:
        committer.stop()
        raise
    return controller
