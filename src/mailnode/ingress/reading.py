"""What a reader sees of a received message: text, sanitised HTML, the attachment list, and one attachment.

Pure over what the caller fetched: the message row's stored reading (``text_body``, ``text_body_type``,
``html_part`` and its ``message_attachments`` rows) and, when that is not enough, the raw bytes. The HTML is
sanitised on each read from the raw bytes rather than stored: how it is sanitised depends on the reader
(``remote_images``) and on this module's rules, which can tighten later and then apply to old mail too, and
the raw bytes are kept anyway. A message materialised before issue 15 (``text_body_type`` NULL) is read wholly
from its raw bytes. Every parse goes through ``parse.parse_message`` and ``bounds.load``, so a read costs no
more than materialisation did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import encode_rfc2231
from typing import Any

from mailnode.errors import MailnodeError, not_found
from mailnode.ingress import attachments, bounds, htmlbody
from mailnode.ingress.parse import parse_message

#: Types served under their own name when the bytes agree (an ``<img>`` needs an image type under
#: ``nosniff``); anything else is served as ``application/octet-stream``.
SHOWN_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
#: The Content-Security-Policy of a served attachment: nothing it holds may load, run or be framed.
ATTACHMENT_CSP = "default-src 'none'; sandbox"


@dataclass(frozen=True)
class Reading:
    """A message as a reader sees it.

    Fields:
        text_body: the text (``text/plain``, or made from the HTML), or ``None``.
        text_body_type: ``"text/plain"``, ``"text/html"`` or ``None`` (no text).
        html_body: the sanitised HTML (``htmlbody.sanitise``), or ``None`` when there is no HTML part or it
            was refused (a defect on the message says why).
        remote_images_removed: remote references taken out of ``html_body`` (0 when ``remote_images``).
        attachments: the attachment list (``ingress.attachments.Attachment``), in part order.
    """

    text_body: str | None
    text_body_type: str | None
    html_body: str | None
    remote_images_removed: int
    attachments: tuple[attachments.Attachment, ...]


def needs_raw(text_body_type: str | None, html_part: str | None) -> bool:
    """Whether reading a message needs its raw bytes: it has an HTML part, or it was materialised before its
    reading was stored (``text_body_type`` NULL)."""
    return text_body_type is None or html_part is not None


def stored_attachment(row: Any) -> attachments.Attachment:
    """A ``message_attachments`` row as an :class:`attachments.Attachment`; an unknown danger token is kept as
    ``executable`` (fail closed)."""
    danger: attachments.Danger | None = None
    if row.danger is not None:
        known = {item.value: item for item in attachments.Danger}
        danger = known.get(row.danger, attachments.Danger.EXECUTABLE)
    return attachments.Attachment(
        part_id=row.part_id, filename=row.filename, safe_filename=row.safe_filename, content_type=row.content_type,
        sniffed_type=row.sniffed_type, size_bytes=row.size_bytes, sha256=row.sha256, inline=row.inline,
        content_id=row.content_id, danger=danger)


def read(message_id: str, *, text_body: str | None, text_body_type: str | None,
         stored: Sequence[attachments.Attachment], raw: bytes | None, remote_images: bool) -> Reading:
    """The reading of one message (pure).

    Args:
        message_id: its ``msg_...`` id (for ``cid:`` image URLs).
        text_body, text_body_type: the row's stored text and where it came from (``text_body_type`` NULL:
            materialised before issue 15, so both are read from ``raw``).
        stored: its stored attachment list (empty for an old message).
        raw: its raw bytes when :func:`needs_raw` says so, else ``None``.
        remote_images: whether the reader asked for remote images.
    """
    if raw is None:
        return Reading(text_body, text_body_type if text_body_type != "none" else None, None, 0, tuple(stored))
    parsed = parse_message(raw)
    listed = tuple(stored) if text_body_type is not None else parsed.attachments.attachments
    if text_body_type is None:
        text_body, text_body_type = parsed.text_body, parsed.bodies.text_type
    html_body: str | None = None
    removed = 0
    if parsed.bodies.html is not None:
        by_cid = {item.content_id: item.part_id for item in listed if item.content_id}
        clean = htmlbody.sanitise(parsed.bodies.html, message_id=message_id, parts_by_cid=by_cid,
                                  remote_images=remote_images)
        html_body, removed = clean.html, clean.remote_removed
    return Reading(text_body, text_body_type if text_body_type != "none" else None, html_body, removed, listed)


def attachment_json(message_id: str, item: attachments.Attachment) -> dict[str, Any]:
    """One attachment as the API shows it (``url``: the route serving its bytes)."""
    return {"part": item.part_id, "filename": item.filename, "safe_filename": item.safe_filename,
            "content_type": item.content_type, "sniffed_type": item.sniffed_type, "size_bytes": item.size_bytes,
            "sha256": item.sha256, "inline": item.inline, "content_id": item.content_id,
            "danger": item.danger.value if item.danger else None,
            "url": htmlbody.ATTACHMENT_URL.format(message_id=message_id, part=item.part_id)}


def _no_attachment(message_id: str, part_id: str) -> MailnodeError:
    return not_found("E_NO_SUCH_ATTACHMENT", f"Message {message_id} has no attachment {part_id!r}.",
                     fix=f"List its attachments with GET /api/messages/{message_id} (attachment_list[].part).",
                     message_id=message_id, part=part_id)


@dataclass(frozen=True)
class Download:
    """One attachment's bytes and the headers that serve them (``media_type``, ``headers``)."""

    content: bytes
    media_type: str
    headers: dict[str, str]


def content_disposition(filename: str) -> str:
    """``attachment`` with an ASCII ``filename`` fallback and the UTF-8 ``filename*`` (RFC 6266 §4.1, RFC 5987
    §3.2); ``filename`` is already safe to save (``attachments.safe_filename``)."""
    fallback = "".join(char if 32 <= ord(char) < 127 and char not in '"\\%' else "_" for char in filename)
    return f"attachment; filename=\"{fallback}\"; filename*={encode_rfc2231(filename, 'utf-8')}"


def download(message_id: str, raw: bytes, part_id: str) -> Download:
    """The bytes of attachment ``part_id`` of a message whose raw bytes are ``raw``, ready to serve.

    The message is parsed within ``ingress.bounds`` (a body not read into parts has no attachments). Served as
    ``application/octet-stream`` unless it is a raster image its bytes agree with (:data:`SHOWN_IMAGE_TYPES`),
    always with ``Content-Disposition: attachment``, ``X-Content-Type-Options: nosniff`` and
    :data:`ATTACHMENT_CSP`. Raises ``E_NO_SUCH_ATTACHMENT`` (404) for a part that is not listed, and
    ``E_ATTACHMENT_UNREADABLE`` (422) for one whose bytes cannot be decoded.
    """
    loaded = bounds.load(raw)
    part = attachments.find_part(loaded.message, part_id) if loaded.body_read else None
    if part is None:
        raise _no_attachment(message_id, part_id)
    try:
        data = attachments.part_bytes(part)
    except Exception as exc:  # the stdlib raises many kinds on malformed parts; it becomes the 422
        raise MailnodeError(
            code="E_ATTACHMENT_UNREADABLE", status=422,
            what=f"Attachment {part_id} of message {message_id} could not be decoded.",
            why=f"Its transfer encoding or structure is malformed ({type(exc).__name__}).",
            fix=f"GET /api/messages/{message_id}/raw serves the message exactly as received.",
            detail={"message_id": message_id, "part": part_id}) from exc
    declared = part.get_content_type()
    sniffed = attachments.sniff(data)
    media_type = declared if declared in SHOWN_IMAGE_TYPES and sniffed == declared else "application/octet-stream"
    name = attachments.safe_filename(attachments.filename_of(part), part_id, declared)
    return Download(content=data, media_type=media_type, headers={
        "Content-Disposition": content_disposition(name), "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": ATTACHMENT_CSP, "Cache-Control": "private, no-cache"})
