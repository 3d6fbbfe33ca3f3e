"""What a reader sees of a message (issue 15, "Reading"): sanitised HTML, text made from HTML, the attachment
list by part id, safe file names and sniffed types; pure, no database."""

from __future__ import annotations

import hashlib
import re
from email.message import EmailMessage

import pytest

from mailnode import budgets
from mailnode.ingress import attachments, htmlbody, reading
from mailnode.ingress.parse import parse_message
from tests.corpus import message_files

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40

#: What must never survive sanitising: a script, an event handler, a form, a frame, or anything that loads
#: from another host (an image source, a background, CSS url(), srcset).
UNSAFE = re.compile(r"<script|<form|<iframe|<object|<embed|<svg|<link|<meta|<base|\son[a-z]+\s*=|srcset|"
                    r"src\s*=\s*[\"']?(https?:|//|data:|javascript:)|background\s*=|url\s*\(|javascript:",
                    re.IGNORECASE)


def newsletter() -> bytes:
    """An HTML-only newsletter with a tracking pixel, a script, handlers, a form and a cid logo."""
    msg = EmailMessage()
    msg["From"] = "News <news@shop.test>"
    msg["To"] = "support@example.test"
    msg["Subject"] = "Our spring sale"
    msg.set_content(
        "<html><head><style>body{background:url(http://t.shop.test/bg.png)}</style>"
        "<script>steal()</script></head><body onload='x()'>"
        "<h1>Spring sale</h1><p style='color:#333;background-image:url(https://t.shop.test/p.gif)'>Up to "
        "<b onmouseover='y()'>50% off</b> everything.</p><img src='https://t.shop.test/open.gif' width='1'>"
        "<img src='cid:logo@shop.test' alt='Shop logo'><a href='javascript:alert(1)'>js</a>"
        "<a href='https://shop.test/sale'>Shop now</a><form action='https://shop.test/f'><input name='q'>"
        "</form><iframe src='https://shop.test/frame'></iframe><table background='https://t.shop.test/t.png'>"
        "<tr><td>Item</td><td>Price</td></tr></table></body></html>", subtype="html")
    msg.make_related()
    msg.add_related(PNG, maintype="image", subtype="png", cid="<logo@shop.test>")
    return msg.as_bytes()


def pdf_and_inline_image() -> bytes:
    """A message with a text and HTML body, an inline image referenced by cid, and a PDF attachment."""
    msg = EmailMessage()
    msg["From"] = "Alice <alice@remote.test>"
    msg["To"] = "support@example.test"
    msg["Subject"] = "Invoice"
    msg.set_content("Please find the invoice attached.")
    msg.add_alternative("<p>Please find the invoice attached.</p><img src=\"cid:chart@remote.test\">",
                        subtype="html")
    html_part = msg.get_payload()[1]
    html_part.add_related(PNG, maintype="image", subtype="png", cid="<chart@remote.test>", filename="chart.png",
                          disposition="inline")
    msg.add_attachment(PDF, maintype="application", subtype="pdf", filename="Rechnung März 2026.pdf")
    return msg.as_bytes()


def test_the_newsletter_reads_as_text_and_as_html_with_nothing_that_runs_or_loads() -> None:
    parsed = parse_message(newsletter())
    assert parsed.bodies.text_type == "text/html" and parsed.bodies.html_part == "1"
    assert parsed.text_body is not None and "Spring sale" in parsed.text_body
    assert "50% off everything." in parsed.text_body and "steal" not in parsed.text_body
    seen = reading.read("msg_1", text_body=None, text_body_type=None, stored=(), raw=newsletter(),
                        remote_images=False)
    assert seen.html_body is not None and not UNSAFE.search(seen.html_body), seen.html_body
    assert '<img src="/api/messages/msg_1/attachments/2" alt="Shop logo">' in seen.html_body
    assert '<a href="https://shop.test/sale" target="_blank" rel="noopener noreferrer">Shop now</a>' in seen.html_body
    assert "<b>50% off</b>" in seen.html_body
    assert seen.remote_images_removed == 3  # the pixel, the p's background-image, the table background


def test_remote_images_stay_when_asked_and_nothing_else_is_let_through() -> None:
    seen = reading.read("msg_1", text_body=None, text_body_type=None, stored=(), raw=newsletter(),
                        remote_images=True)
    assert seen.html_body is not None and seen.remote_images_removed == 0
    assert 'src="https://t.shop.test/open.gif"' in seen.html_body
    assert 'background="https://t.shop.test/t.png"' in seen.html_body
    for unsafe in ("<script", "onload", "onmouseover", "<form", "<input", "<iframe", "javascript:", "steal()"):
        assert unsafe not in seen.html_body


@pytest.mark.parametrize("html", [
    "<img src=x onerror=alert(1)>", "<svg><script>alert(1)</script></svg>", "<a href='  javascript:x'>a</a>",
    "<div style='width: expression(alert(1))'>e</div>", "<p style='color:\\72 ed;background:u\\72l(http://x)'>q</p>",
    "<math><mi xlink:href='javascript:1'>m</mi></math>", "<base href='http://evil.test/'><a href='/x'>r</a>",
    "<meta http-equiv='refresh' content='0;url=http://evil.test'>", "<object data='http://x/f.swf'></object>",
    "<img srcset='http://x/a.png 1x'>", "<img src='//evil.test/p.gif'>", "<img src='data:image/svg+xml,<svg/>'>",
    "<link rel=stylesheet href='http://x/s.css'>", "<form><button formaction='http://x'>b</button></form>",
    "<table background='http://x/bg.png'><tr><td>t</td></tr></table>", "<!--[if gte mso 9]><img src=http://x><![endif]-->",
])
@pytest.mark.parametrize("remote_images", [False, True])
def test_hostile_html_loses_what_runs_either_way(html: str, remote_images: bool) -> None:
    out = htmlbody.sanitise(html, message_id="msg_1", parts_by_cid={}, remote_images=remote_images).html
    for unsafe in ("<script", "onerror", "javascript:", "expression(", "<svg", "<math", "<base", "<meta",
                   "<object", "<link", "<form", "formaction", "srcset", "\\72", "<!--", "//evil"):
        assert unsafe not in out.lower(), (html, out)
    if not remote_images:
        assert not UNSAFE.search(out), (html, out)


def test_every_corpus_message_renders_with_no_script_handler_or_remote_load() -> None:
    rendered = 0
    for path in message_files():
        raw = path.read_bytes()
        seen = reading.read("msg_1", text_body=None, text_body_type=None, stored=(), raw=raw, remote_images=False)
        if seen.html_body is None:
            continue
        rendered += 1
        assert not UNSAFE.search(seen.html_body), (path.name, UNSAFE.search(seen.html_body))
    assert rendered >= 30  # the corpus has 39 messages with an HTML part


def test_an_html_only_corpus_message_has_text() -> None:
    parsed = parse_message((message_files()[0].parent.parent / "flufl-bounce" / "yahoo_12.txt").read_bytes())
    assert parsed.bodies.text_type == "text/html"
    assert parsed.text_body is not None and parsed.text_body.startswith("I'm afraid I wasn't able to deliver")


def test_attachments_are_listed_by_part_with_what_a_reader_needs() -> None:
    parsed = parse_message(pdf_and_inline_image())
    assert parsed.text_body == "Please find the invoice attached.\n" and parsed.bodies.text_type == "text/plain"
    listed = {a.part_id: a for a in parsed.attachments.attachments}
    assert sorted(listed) == ["1.2.2", "2"], listed
    image, pdf = listed["1.2.2"], listed["2"]
    assert (image.content_type, image.sniffed_type, image.inline, image.content_id, image.size_bytes) == (
        "image/png", "image/png", True, "chart@remote.test", len(PNG))
    assert (pdf.filename, pdf.safe_filename, pdf.content_type, pdf.sniffed_type, pdf.inline, pdf.danger) == (
        "Rechnung März 2026.pdf", "Rechnung März 2026.pdf", "application/pdf", "application/pdf", False, None)
    assert pdf.sha256 == hashlib.sha256(PDF).hexdigest()
    seen = reading.read("msg_9", text_body=parsed.text_body, text_body_type="text/plain",
                        stored=parsed.attachments.attachments, raw=pdf_and_inline_image(), remote_images=False)
    assert seen.html_body is not None and 'src="/api/messages/msg_9/attachments/1.2.2"' in seen.html_body


def test_a_pdf_inside_a_returned_message_is_numbered_inside_it() -> None:
    raw = (message_files()[0].parent.parent / "flufl-bounce" / "simple_43.txt").read_bytes()
    found = [(a.part_id, a.filename, a.sniffed_type) for a in parse_message(raw).attachments.attachments]
    assert found == [("2.2", "dummy.pdf", "application/pdf")]
    served = reading.download("msg_1", raw, "2.2")
    assert served.content.startswith(b"%PDF-") and served.media_type == "application/octet-stream"


@pytest.mark.parametrize(("given", "content_type", "safe"), [
    ("report.pdf", "application/pdf", "report.pdf"),
    ("../../etc/passwd", "text/plain", "passwd"),
    ("C:\\Users\\a\\invoice.pdf", "application/pdf", "invoice.pdf"),
    ("invoice\u202efdp.exe", "application/octet-stream", "invoicefdp.exe"),
    ("a<b>c:d|e?f*.txt", "text/plain", "a_b_c_d_e_f_.txt"),
    (".bashrc", "text/plain", "bashrc"),
    ("setup.exe. . ", "application/octet-stream", "setup.exe"),
    ("CON.txt", "text/plain", "_CON.txt"),
    ("nul", "text/plain", "_nul"),
    ("line\r\nbreak.txt", "text/plain", "line__break.txt"),
    (None, "application/pdf", "part-3.pdf"),
    ("...", "image/png", "part-3.png"),
    (None, "application/x-unknown", "part-3.bin"),
    ("x" * 300 + ".pdf", "application/pdf", "x" * 251 + ".pdf"),
    ("ü" * 200 + ".pdf", "application/pdf", "ü" * 125 + ".pdf"),
])
def test_safe_filename(given: str | None, content_type: str, safe: str) -> None:
    assert attachments.safe_filename(given, "3", content_type) == safe
    assert len(safe.encode("utf-8")) <= budgets.ATTACHMENT_FILENAME_MAX_BYTES


@pytest.mark.parametrize(("data", "sniffed"), [
    (PDF, "application/pdf"), (PNG, "image/png"), (b"\xff\xd8\xff\xe0JFIF", "image/jpeg"),
    (b"GIF89a...", "image/gif"), (b"PK\x03\x04zip", "application/zip"), (b"MZ\x90\x00", "application/x-msdownload"),
    (b"\x7fELF\x02", "application/x-executable"), (b"  <!DOCTYPE html><html>", "text/html"),
    (b"<?xml version='1.0'?><svg xmlns='x'>", "image/svg+xml"), (b"RIFF\x00\x00\x00\x00WEBPVP8", "image/webp"),
    (b"hello, plain text", None), (b"", None),
])
def test_sniff(data: bytes, sniffed: str | None) -> None:
    assert attachments.sniff(data) == sniffed


def test_a_deeply_nested_html_body_is_refused_and_said_and_a_long_one_is_cut() -> None:
    deep = ("Content-Type: text/html\r\nSubject: deep\r\n\r\n" + "<div>" * 5000 + "x").encode()
    parsed = parse_message(deep)
    assert parsed.bodies.html is None and parsed.text_body is None
    assert "body: the HTML part is not shown because its elements nest more than 256 deep (HTML_NESTING_MAX)" \
           in str(parsed.parse_error)
    long = ("Content-Type: text/html\r\nSubject: long\r\n\r\n" + "<p>word</p>" * 100_000).encode()
    parsed = parse_message(long)
    assert parsed.bodies.html is not None and len(parsed.bodies.html) == budgets.HTML_BODY_MAX_CHARS
    assert ("body: the HTML part was cut: it is 1,100,000 characters long; the first 524,288 were read "
            "(HTML_BODY_MAX_CHARS); the raw message keeps the rest") in str(parsed.parse_error)


def test_nesting_counts_what_the_parser_keeps_open() -> None:
    assert htmlbody.nesting("<table><tr><td><p>a<p>b<br><img></td></tr></table>") == 1
    assert htmlbody.nesting("<div><div></div><div><span>x</span></div></div>") == 3
    assert htmlbody.nesting("<div>" * 1000) == budgets.HTML_NESTING_MAX + 1
    assert htmlbody.nesting("</b>" * 10 + "<b>x</b>") == 1


def test_a_cut_never_halves_a_tag() -> None:
    html = "<p>a</p>" * (budgets.HTML_BODY_MAX_CHARS // 8) + "<table><tr><td>b</td></tr></table>"
    cut, note = htmlbody.bounded(html[:budgets.HTML_BODY_MAX_CHARS + 3] + "x" * 10)
    assert cut.endswith("</p>") and note is not None and "the first 524,288 were read" in note
    cut, note = htmlbody.bounded("<p>a</p>" * (budgets.HTML_BODY_MAX_CHARS // 8 - 1) + "xxxxx<table>" + "y" * 100)
    assert cut.endswith("</p>xxxxx") and note is not None and "the first 524,285 were read" in note


def test_an_html_part_decoding_to_a_lone_surrogate_is_read_with_it_replaced() -> None:
    # UTF-7's "+2AA-" decodes to U+D800 alone, which nh3 (Rust) and the databases refuse.
    raw = b"Subject: utf7\r\nContent-Type: text/html; charset=utf-7\r\n\r\n<p>a+2AA-b</p>\r\n"
    parsed = parse_message(raw)
    assert parsed.text_body == "a?b" and parsed.subject == "utf7"
    assert "body: the HTML did not decode as its declared charset 'utf-7'" in str(parsed.parse_error)
    seen = reading.read("msg_1", text_body=None, text_body_type=None, stored=(), raw=raw, remote_images=False)
    assert seen.html_body == "<p>a?b</p>\n"
