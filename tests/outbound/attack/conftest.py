"""Fixtures for the outsider's attacks on the application mail API and contact-address verification: the
node of ``tests/outbound/resend`` (transport ``resend`` against the local Resend server, frozen clock at ``T0``,
an initialised organisation with a hold window of 0), plus an application holding ``send.propose``."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import bearer
from tests.outbound.resend.conftest import Org, clock, emulator, org, settings

__all__ = ["Org", "app_token", "clock", "emulator", "mail_body", "org", "settings"]


def mail_body(org: Org, cls: str = "realtime", key: str = "k-1", **fields: Any) -> dict[str, Any]:
    """A ``POST /api/mail`` body from the organisation's mailbox; ``fields`` override."""
    body: dict[str, Any] = {"mailbox_id": org.installed.mailbox_id, "class": cls, "to": ["researcher@remote.test"],
                            "subject": "Upload failed", "text": "Your upload stopped arriving.",
                            "idempotency_key": key}
    body.update(fields)
    return body


@pytest.fixture
def app_token(api: Any, org: Org) -> str:
    """The token of an application granted ``send.propose`` on the organisation's mailbox."""
    admin = bearer(org.installed.token)
    r = api.post("/api/apps", json={"name": "research-pipeline"}, headers=admin)
    assert r.status_code == 201, r.text
    app_id, token = r.json()["application"]["id"], r.json()["token"]
    r = api.post("/api/access", json={"subject_id": app_id, "relation": "send.propose",
                                      "object_id": org.installed.mailbox_id}, headers=admin)
    assert r.status_code in (200, 201), r.text
    return str(token)
