"""Fixtures for outbound input hardening (issue 9): the node of ``tests/outbound/attack`` (transport ``resend``
against the local Resend server, an initialised organisation with a hold window of 0, an application holding
``send.propose``), plus counters of everything a refused request could have written."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from mailnode.audit import audit_entries
from mailnode.schema.mail_messages import conversations, message_ids
from mailnode.schema.outbound import drafts, send_manifests, send_recipients
from tests.outbound.attack.conftest import Org, app_token, clock, emulator, mail_body, org, settings

__all__ = ["Org", "app_token", "clock", "emulator", "mail_body", "org", "settings", "written"]


def _evidence_files(org: Org) -> int:
    root = org.node.evidence.root
    return sum(1 for p in root.rglob("*") if p.is_file()) if root.exists() else 0


@pytest.fixture
def written(org: Org) -> Any:
    """A function answering what the node holds: rows of every table a send or draft writes, evidence blobs,
    and requests the provider has seen. Equal before and after a refusal means nothing was written."""

    def snapshot() -> dict[str, int]:
        with org.node.read() as conn:
            counts = {t.name: int(conn.execute(select(func.count()).select_from(t)).scalar_one())
                      for t in (send_manifests, send_recipients, drafts, conversations, message_ids, audit_entries)}
        counts["evidence"] = _evidence_files(org)
        counts["provider_requests"] = org.requests()
        return counts

    return snapshot
