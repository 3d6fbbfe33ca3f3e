"""Reading through the HTTP API (issue 15, "Reading"), on SQLite and PostgreSQL: an HTML-only newsletter read
safely, an attachment downloaded, the Gmail bounce's inline images resolved, a PDF inside a returned message,
a message materialised before issue 15, and who may read."""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import delete, update

from mailnode.directory.tokens import create_token
from mailnode.ingress import receipts, routing
from mailnode.ingress.materialise import materialise_receipt
from mailnode.mail.message_tables import message_attachments, messages
from tests.corpus import CORPUS
from tests.ingress.test_ingress_reading import PDF, PNG, UNSAFE, newsletter, pdf_and_inline_image


def _h(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _deliver(node: Any, raw: bytes) -> str:
    with node.read() as conn:
        route = routing.resolve(conn, "support@example.test")
    assert route is not None
    rid = receipts.accept(node, raw, receipts.Envelope(mail_from="sender@remote.test", routes=(route,)))[0]
    return materialise_receipt(node, rid).message_id


def test_an_html_only_newsletter_reads_as_text_and_safe_html(api: Any, node: Any, installed: Any) -> None:
    mid = _deliver(node, newsletter())
    r = api.get(f"/api/messages/{mid}", headers=_h(installed.token))
    assert r.status_code == 200, r.text
    m = r.json()["message"]
    assert m["text_body_type"] == "text/html" and "Spring sale" in m["text_body"]
    assert not UNSAFE.search(m["html_body"]), m["html_body"]
    assert f'<img src="/api/messages/{mid}/attachments/2" alt="Shop logo">' in m["html_body"]
    assert m["remote_images_removed"] == 3
    assert [(a["part"], a["content_type"], a["inline"], a["content_id"]) for a in m["attachment_list"]] == [
        ("2", "image/png", True, "logo@shop.test")]
    remote = api.get(f"/api/messages/{mid}?remote_images=true", headers=_h(installed.token)).json()["message"]
    assert 'src="https://t.shop.test/open.gif"' in remote["html_body"] and "<script" not in remote["html_body"]
    logo = api.get(f"/api/messages/{mid}/attachments/2", headers=_h(installed.token))
    assert logo.status_code == 200 and logo.content == PNG
    assert logo.headers["content-type"] == "image/png"


def test_an_attachment_downloads_as_a_file_that_cannot_run(api: Any, node: Any, installed: Any) -> None:
    mid = _deliver(node, pdf_and_inline_image())
    m = api.get(f"/api/messages/{mid}", headers=_h(installed.token)).json()["message"]
    assert m["text_body"] == "Please find the invoice attached.\n" and m["attachments"] == 2
    pdf = next(a for a in m["attachment_list"] if a["part"] == "2")
    assert pdf == {"part": "2", "filename": "Rechnung März 2026.pdf", "safe_filename": "Rechnung März 2026.pdf",
                   "content_type": "application/pdf", "sniffed_type": "application/pdf", "size_bytes": len(PDF),
                   "sha256": hashlib.sha256(PDF).hexdigest(), "inline": False, "content_id": None, "danger": None,
                   "url": f"/api/messages/{mid}/attachments/2"}
    assert f'src="/api/messages/{mid}/attachments/1.2.2"' in m["html_body"]
    got = api.get(pdf["url"], headers=_h(installed.token))
    assert got.status_code == 200 and got.content == PDF
    assert got.headers["content-type"] == "application/octet-stream"
    assert got.headers["content-disposition"] == (
        "attachment; filename=\"Rechnung M_rz 2026.pdf\"; filename*=utf-8''Rechnung%20M%C3%A4rz%202026.pdf")
    assert got.headers["x-content-type-options"] == "nosniff"
    assert got.headers["content-security-policy"] == "default-src 'none'; sandbox"
    missing = api.get(f"/api/messages/{mid}/attachments/1.1", headers=_h(installed.token))  # the text body
    assert missing.status_code == 404 and missing.json()["error"] == "E_NO_SUCH_ATTACHMENT"
    assert "GET /api/messages/" in missing.json()["fix"]


def test_corpus_bounces_show_their_inline_images_and_the_returned_pdf(api: Any, node: Any, installed: Any) -> None:
    gmail = _deliver(node, (CORPUS / "bounces" / "rhost-gsuite-03.eml").read_bytes())
    m = api.get(f"/api/messages/{gmail}", headers=_h(installed.token)).json()["message"]
    assert f'src="/api/messages/{gmail}/attachments/1.2"' in m["html_body"] and not UNSAFE.search(m["html_body"])
    icon = api.get(f"/api/messages/{gmail}/attachments/1.2", headers=_h(installed.token))
    assert icon.status_code == 200 and icon.content.startswith(b"\x89PNG")
    returned = _deliver(node, (CORPUS / "flufl-bounce" / "simple_43.txt").read_bytes())
    m = api.get(f"/api/messages/{returned}", headers=_h(installed.token)).json()["message"]
    assert [(a["part"], a["filename"]) for a in m["attachment_list"]] == [("2.2", "dummy.pdf")]
    pdf = api.get(f"/api/messages/{returned}/attachments/2.2", headers=_h(installed.token))
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF-")
    assert hashlib.sha256(pdf.content).hexdigest() == m["attachment_list"][0]["sha256"]


def test_a_message_materialised_before_issue_15_reads_the_same(api: Any, node: Any, installed: Any) -> None:
    mid = _deliver(node, pdf_and_inline_image())
    before = api.get(f"/api/messages/{mid}", headers=_h(installed.token)).json()["message"]
    with node.begin() as conn:  # what 0014 leaves on an older row: no reading stored
        conn.execute(delete(message_attachments).where(message_attachments.c.message_id == mid))
        conn.execute(update(messages).where(messages.c.id == mid).values(text_body_type=None, html_part=None))
    after = api.get(f"/api/messages/{mid}", headers=_h(installed.token)).json()["message"]
    assert after == before
    html_only = _deliver(node, newsletter())
    with node.begin() as conn:
        conn.execute(delete(message_attachments).where(message_attachments.c.message_id == html_only))
        conn.execute(update(messages).where(messages.c.id == html_only)
                     .values(text_body_type=None, html_part=None, text_body=None))
    old = api.get(f"/api/messages/{html_only}", headers=_h(installed.token)).json()["message"]
    assert "Spring sale" in old["text_body"] and old["html_body"] and len(old["attachment_list"]) == 1


def test_reading_bodies_and_attachments_needs_content_read(api: Any, node: Any, installed: Any) -> None:
    mid = _deliver(node, pdf_and_inline_image())
    bob = api.post("/api/users", json={"email": "bob@example.test"}, headers=_h(installed.token)).json()["user"]
    with node.begin() as conn:
        _, token = create_token(conn, org_id=installed.org_id, principal_id=bob["id"], at=node.clock.now(),
                                actor_id=None, label="test")
    for path in (f"/api/messages/{mid}", f"/api/messages/{mid}/attachments/2"):
        r = api.get(path, headers=_h(token))
        assert r.status_code == 404 and r.json()["error"] == "E_NO_SUCH_MESSAGE", r.text
