"""What a send may carry beside its text: an HTML alternative and attachments, judged before anything is stored.

Pure. The seal calls ``check_content`` after ``check_composition`` (the Subject and the text body), so every
route that seals (``POST /api/sends``, a draft, a reply, a forward, a resend) meets the same limits:
``budgets.SEND_ATTACHMENTS_MAX`` attachments, each named by one line of at most
``budgets.SEND_ATTACHMENT_FILENAME_MAX_CHARS`` characters with no path, typed ``type/subtype``; the text,
the HTML and the attachments together at most ``budgets.SEND_CONTENT_MAX_BYTES``.

The HTML a person sends is bounded and checked as text (no NUL, no lone surrogate), not rewritten: it is
what they typed, and the receiving reader sanitises what it shows. What mailnode itself displays of any
message is sanitised on the way out by the reading side (issue 15, "Reading").
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence

from mailnode import budgets
from mailnode.addresses import header_fault, reject_body_fault
from mailnode.errors import MailnodeError, invalid
from mailnode.outbound.render import OutboundAttachment

#: A MIME type as RFC 2045 §5.1 writes it: token "/" token, no parameters (mailnode writes the charset itself).
_MIME_TYPE = re.compile(r"^[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+$")
#: Types a send may not attach directly: a multipart is structure the renderer builds itself.
_REFUSED_MAINTYPES = frozenset({"multipart"})


def _attachment_error(index: int, why: str, fix: str, **detail: object) -> MailnodeError:
    return invalid("E_ATTACHMENT_MALFORMED", f"Attachment {index} cannot be attached.", why, fix,
                   index=index, **detail)


def decode_attachment(index: int, filename: str, content_type: str, content_base64: str,
                      field: str = "content_base64") -> OutboundAttachment:
    """One attachment from an API request: ``content_base64`` (RFC 4648 §4, padding required) decoded;
    ``field`` is what the route calls it (``content_base64`` on ``POST /api/sends``, ``content`` on
    ``POST /api/mail``).

    Raises ``E_ATTACHMENT_MALFORMED`` (422) naming ``index`` (0-based) when the base64 does not decode.
    The name and type are judged by ``check_content``.
    """
    try:
        data = base64.b64decode(content_base64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _attachment_error(index, f"{field} is not base64 ({exc}).",
                                "Send the file's bytes base64 encoded (RFC 4648, with padding).",
                                filename=filename[:200]) from exc
    return OutboundAttachment(filename=filename, content_type=content_type.strip().lower(), data=data)


def content_too_large(observed: int) -> MailnodeError | None:
    """The 413 ``E_SEND_TOO_LARGE`` for ``observed`` bytes of text, HTML and attachments over
    ``budgets.SEND_CONTENT_MAX_BYTES``; None within it."""
    limit = budgets.SEND_CONTENT_MAX_BYTES
    if observed <= limit:
        return None
    return MailnodeError(code="E_SEND_TOO_LARGE",
                         what=f"SEND_CONTENT_MAX_BYTES is {limit} bytes; this send's text, HTML and attachments "
                              f"are {observed} bytes together.",
                         why="The rendered message must fit what this node and common receivers accept "
                             f"({budgets.MESSAGE_MAX_BYTES} bytes), and encoding it for mail grows it.",
                         fix="Attach less (link to large files instead) or shorten the text, and send again.",
                         status=413, detail={"limit_name": "SEND_CONTENT_MAX_BYTES", "limit": limit,
                                             "observed": observed})


def check_content(body: str, html: str | None, attachments: Sequence[OutboundAttachment]) -> None:
    """Refuse an HTML part or attachments the seal cannot carry. Pure.

    In order: ``E_TEXT_MALFORMED`` (422) for a NUL or lone surrogate in ``html``; ``E_TOO_MANY_ATTACHMENTS``
    (422) over ``budgets.SEND_ATTACHMENTS_MAX``; ``E_ATTACHMENT_MALFORMED`` (422) for an empty filename, one
    over ``budgets.SEND_ATTACHMENT_FILENAME_MAX_CHARS``, one holding a line break, control character, ``/``
    or ``\\``, or a type that is not ``type/subtype`` or is multipart; ``E_SEND_TOO_LARGE`` (413) for the
    text, HTML and attachment bytes together over ``budgets.SEND_CONTENT_MAX_BYTES``.
    """
    if html is not None:
        reject_body_fault("html", html)
    if len(attachments) > budgets.SEND_ATTACHMENTS_MAX:
        limit = budgets.SEND_ATTACHMENTS_MAX
        raise MailnodeError(code="E_TOO_MANY_ATTACHMENTS",
                            what=f"SEND_ATTACHMENTS_MAX is {limit}; this send carries {len(attachments)}.",
                            why="One send carries a bounded number of attachments.",
                            fix="Attach fewer files (an archive can hold several) and send again.", status=422,
                            detail={"limit_name": "SEND_ATTACHMENTS_MAX", "limit": limit,
                                    "observed": len(attachments)})
    for i, att in enumerate(attachments):
        name = att.filename
        if not name.strip() or len(name) > budgets.SEND_ATTACHMENT_FILENAME_MAX_CHARS:
            raise _attachment_error(i, "A filename is 1 to SEND_ATTACHMENT_FILENAME_MAX_CHARS "
                                       f"({budgets.SEND_ATTACHMENT_FILENAME_MAX_CHARS}) characters.",
                                    "Name the attachment with a short filename.", filename=name[:200])
        if header_fault(name) is not None or "/" in name or "\\" in name:
            raise _attachment_error(i, "A filename is one line with no control character and no path "
                                       "separator: the receiver saves it under that name.",
                                    "Send the file's base name only (invoice.pdf).", filename=name[:200])
        maintype = att.content_type.partition("/")[0]
        if not _MIME_TYPE.match(att.content_type) or maintype in _REFUSED_MAINTYPES:
            raise _attachment_error(i, f"{att.content_type[:80]!r} is not a type an attachment can have "
                                       "(type/subtype, RFC 2045 §5.1; not multipart).",
                                    "Send content_type as type/subtype, e.g. application/pdf, or "
                                    "application/octet-stream when unsure.", content_type=att.content_type[:80])
    text_bytes = len(body) if len(body) > budgets.SEND_CONTENT_MAX_BYTES else len(body.encode("utf-8"))
    html_bytes = 0 if html is None else (len(html) if len(html) > budgets.SEND_CONTENT_MAX_BYTES
                                         else len(html.encode("utf-8")))
    refusal = content_too_large(text_bytes + html_bytes + sum(len(a.data) for a in attachments))
    if refusal is not None:
        raise refusal
