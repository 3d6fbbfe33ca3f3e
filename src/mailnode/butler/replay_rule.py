"""The re-run content rule: a send is materially new by its content, never by its identifier.

Seed 003 "Materially new is decided by content, never by identifier"; spec/butler.md §8.2. The content
identity of a send is the SHA-256 of the JSON array ``[mailbox id, to, cc, bcc, subject, the reply
parent or "", the SHA-256 of the normalised body]``, each address list lower-cased, de-duplicated and
sorted, so two near-identical compositions collapse (a refusal) rather than separate (a duplicate
delivery). It is derived from the manifest's own columns, never stored, so it applies to every send this
node ever sealed. ``stands`` is total over the send states: a cancelled or withheld incumbent does not
stand (the world decided against it), every other state does, and a state the node does not know
stands too (standing performs nothing, so it cannot invent a decision nobody made).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, select

from mailnode.schema.butler_runs import butler_run_effects
from mailnode.schema.outbound import send_manifests
from mailnode.vocabulary.send_states import SendState, parse_state

#: The effect reasons the rule writes.
IDENTICAL = "replay_identical_content"
DECIDED = "replay_send_decided"

#: Whether an incumbent in each state still stands. Total over ``SendState`` (a test checks it).
STANDS: dict[SendState, bool] = {
    SendState.HELD: True,
    SendState.AWAITING: True,
    SendState.CANCELLED: False,
    SendState.WITHHELD: False,
    SendState.THROTTLED: True,
    SendState.REFUSED: True,
    SendState.SUPPRESSED: True,
    SendState.HANDED_OVER: True,
    SendState.OUTCOME_UNKNOWN: True,
}


def stands(state: str | None) -> bool:
    """True unless the incumbent was cancelled or withheld; an unknown state stands."""
    s = parse_state(state)
    return True if s is None else STANDS[s]


def _addresses(values: Iterable[str]) -> list[str]:
    return sorted({v.strip().lower() for v in values if v and v.strip()})


def content_identity(mailbox_id: str, to: Iterable[str], cc: Iterable[str], bcc: Iterable[str], subject: str,
                     in_reply_to_message_id: str | None, body_normalised_sha256: str) -> str:
    """The content identity (hex SHA-256) of a composition; see the module docstring."""
    parts = [mailbox_id, _addresses(to), _addresses(cc), _addresses(bcc), subject, in_reply_to_message_id or "",
             body_normalised_sha256]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SourceSend:
    """A send the source run proposed: its id, its current state (None: the manifest is gone) and identity."""

    send_id: str
    state: str | None
    identity: str | None


def source_sends(conn: Connection, org_id: str, run_id: str) -> list[SourceSend]:
    """Every send run ``run_id`` proposed, with its manifest's state and content identity (one statement)."""
    e = butler_run_effects.c
    m = send_manifests.c
    rows = conn.execute(
        select(e.subject.label("effect_subject"), m.id, m.state, m.mailbox_id, m.to_addresses, m.cc_addresses,
               m.bcc_addresses, m.subject.label("send_subject"),
               m.in_reply_to_message_id, m.body_normalised_sha256)
        .select_from(butler_run_effects.outerjoin(send_manifests, (m.id == e.subject) & (m.org_id == e.org_id)))
        .where(e.org_id == org_id, e.run_id == run_id, e.node_type == "mail.send.propose",
               e.subject.like("snd\\_%", escape="\\"))
        .order_by(e.seq)).all()
    out = []
    for r in rows:
        if r.id is None:
            out.append(SourceSend(str(r.effect_subject), None, None))
            continue
        out.append(SourceSend(r.id, r.state, content_identity(
            r.mailbox_id, r.to_addresses, r.cc_addresses, r.bcc_addresses, r.send_subject, r.in_reply_to_message_id,
            r.body_normalised_sha256)))
    return out
