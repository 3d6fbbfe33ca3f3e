"""Builders for the search tests: an installed node, its API, mail delivered through the real ingress, and
people with chosen relations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from mailnode.directory.tokens import create_token
from mailnode.ingress import receipts, routing
from mailnode.ingress.materialise import materialise_receipt


def h(token: str) -> dict[str, str]:
    """The Authorization header for ``token``."""
    return {"Authorization": f"Bearer {token}"}


@dataclass
class World:
    """An installed organisation (administrator ``admin``) and its API."""

    api: Any
    installed: Any

    @property
    def node(self) -> Any:
        return self.api.app.state.node

    @property
    def admin(self) -> dict[str, str]:
        return h(self.installed.token)

    def deliver(self, raw: bytes, to: str | None = None, mail_from: str = "sender@remote.test") -> str:
        """Receive ``raw`` for ``to`` (the support address by default) and materialise it; the message id."""
        with self.node.read() as conn:
            route = routing.resolve(conn, to or self.installed.mailbox_address)
        assert route is not None
        rid = receipts.accept(self.node, raw, receipts.Envelope(mail_from=mail_from, routes=(route,)))[0]
        return str(materialise_receipt(self.node, rid).message_id)

    def mailbox(self, name: str, address: str) -> str:
        """A new mailbox whose content the administrator may read; its id."""
        r = self.api.post("/api/mailboxes", json={"name": name, "addresses": [address]}, headers=self.admin)
        assert r.status_code == 201, r.text
        mailbox_id = str(r.json()["mailbox"]["id"])
        g = self.api.post("/api/access", json={"subject_id": self.installed.user_id, "relation": "mailbox.content.read",
                                               "object_id": mailbox_id}, headers=self.admin)
        assert g.status_code == 201, g.text
        return mailbox_id

    def person(self, email: str, *grants: tuple[str, str]) -> tuple[str, dict[str, str]]:
        """A new person holding ``grants`` (``(relation, mailbox id)``); their id and header."""
        r = self.api.post("/api/users", json={"email": email}, headers=self.admin)
        assert r.status_code == 201, r.text
        uid = str(r.json()["user"]["id"])
        for relation, object_id in grants:
            g = self.api.post("/api/access", json={"subject_id": uid, "relation": relation, "object_id": object_id},
                              headers=self.admin)
            assert g.status_code == 201, g.text
        with self.node.begin() as conn:
            _, token = create_token(conn, org_id=self.installed.org_id, principal_id=uid, at=self.node.clock.now(),
                                    actor_id=None, label="test")
        return uid, h(token)

    def search(self, q: str, headers: dict[str, str] | None = None, **params: Any) -> Any:
        """``GET /api/search``; the response."""
        return self.api.get("/api/search", params={"q": q, **params}, headers=headers or self.admin)

    def found(self, q: str, headers: dict[str, str] | None = None) -> list[str]:
        """The ids a search answers, in order."""
        r = self.search(q, headers)
        assert r.status_code == 200, r.text
        return [x["id"] for x in r.json()["results"]]


@pytest.fixture
def world(api: Any, installed: Any) -> World:
    """An installed node and its API client."""
    return World(api, installed)


def mail(*, subject: str, body: str, sender: str = "Alice Müller <alice@remote.test>",
         to: str = "support@example.test", extra: str = "", n: int = 1) -> bytes:
    """A plain-text message."""
    return (f"From: {sender}\r\nTo: {to}\r\nSubject: {subject}\r\nDate: Tue, 1 Dec 2026 10:00:00 +0000\r\n"
            f"Message-ID: <m{n}.{abs(hash(subject))}@remote.test>\r\n{extra}MIME-Version: 1.0\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n").encode()
