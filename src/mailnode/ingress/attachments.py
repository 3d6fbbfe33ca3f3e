"""Attachments: the list a reader sees, the "dangerous attachment" classification, and one part's bytes.

``danger(filename, content_type)``, ``sniff(data)`` and ``safe_filename(name, part_id, content_type)`` are pure.
``summarise(message)`` walks an already parsed ``email.message.Message`` (compat32) and lists its attachments
by part id (IMAP section numbers, RFC 3501 §6.4.5); ``part_bytes(message, part_id)`` finds one again. Nothing
here opens or runs a file: the danger verdict is read from the name and the declared type only, so it is a
warning sign, not a scan; the sniffed type is read from the first bytes (WHATWG MIME Sniffing §6).
"""

from __future__ import annotations

import enum
import hashlib
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message

from mailnode import budgets


class Danger(enum.StrEnum):
    """Why an attachment is dangerous (a closed vocabulary).

    - ``executable``: a program Windows, macOS, Linux or Android would run (``.exe``, ``.msi``,
      ``.apk``, ``.jar``...), or a type declared as one (``application/x-msdownload``...).
    - ``script``: a script a double click runs (``.js``, ``.vbs``, ``.ps1``, ``.hta``, ``.bat``...).
    - ``disguised``: a program wearing a document's name: a document extension followed by a
      program extension (``invoice.pdf.exe``), or a name holding a bidirectional override
      character that makes the extension read backwards (``invoice\\u202efdp.exe``).
    """

    EXECUTABLE = "executable"
    SCRIPT = "script"
    DISGUISED = "disguised"


#: Extensions of programs (lower case, without the dot).
EXECUTABLE_EXTENSIONS = frozenset(
    {
        "exe",
        "com",
        "scr",
        "pif",
        "msi",
        "msp",
        "mst",
        "dll",
        "cpl",
        "sys",
        "drv",
        "ocx",
        "jar",
        "app",
        "apk",
        "appx",
        "msix",
        "deb",
        "rpm",
        "elf",
        "bin",
        "run",
        "gadget",
        "application",
        "xbap",
        "msc",
        "reg",
        "lnk",
        "url",
        "scf",
        "iso",
        "img",
        "vhd",
        "vhdx",
    }
)
#: Extensions of scripts a click runs (lower case, without the dot).
SCRIPT_EXTENSIONS = frozenset(
    {
        "js",
        "jse",
        "vbs",
        "vbe",
        "wsf",
        "wsh",
        "wsc",
        "ws",
        "ps1",
        "ps1xml",
        "ps2",
        "psm1",
        "psd1",
        "hta",
        "bat",
        "cmd",
        "sh",
        "bash",
        "zsh",
        "csh",
        "ksh",
        "command",
        "py",
        "pyw",
        "pl",
        "rb",
        "php",
        "applescript",
        "scpt",
        "inf",
        "sct",
        "vb",
        "chm",
    }
)
#: Extensions of documents a program may pretend to be (lower case, without the dot).
DOCUMENT_EXTENSIONS = frozenset(
    {
        "pdf",
        "doc",
        "docx",
        "docm",
        "xls",
        "xlsx",
        "xlsm",
        "ppt",
        "pptx",
        "pptm",
        "rtf",
        "txt",
        "odt",
        "ods",
        "odp",
        "csv",
        "jpg",
        "jpeg",
        "png",
        "gif",
        "bmp",
        "tif",
        "tiff",
        "htm",
        "html",
        "zip",
        "rar",
        "7z",
        "mp3",
        "mp4",
        "avi",
        "mov",
        "wav",
        "eml",
        "msg",
        "xml",
    }
)
#: MIME types declared by programs and scripts (lower case).
EXECUTABLE_TYPES = frozenset(
    {
        "application/x-msdownload",
        "application/x-msdos-program",
        "application/x-dosexec",
        "application/x-executable",
        "application/x-msi",
        "application/x-ms-installer",
        "application/vnd.microsoft.portable-executable",
        "application/x-ms-shortcut",
        "application/java-archive",
        "application/x-java-archive",
        "application/vnd.android.package-archive",
        "application/x-elf",
        "application/x-mach-binary",
    }
)
SCRIPT_TYPES = frozenset(
    {
        "application/javascript",
        "application/x-javascript",
        "text/javascript",
        "application/x-sh",
        "application/x-shellscript",
        "text/x-shellscript",
        "application/x-bat",
        "application/x-vbs",
        "text/vbscript",
        "application/hta",
        "application/x-powershell",
    }
)
#: Characters that reorder how a name is displayed (Unicode bidirectional controls).
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")


def _extensions(filename: str) -> list[str]:
    """The dot-separated suffixes of a name, lower case, outermost last.

    Windows ignores trailing dots and spaces in a file name, so they are stripped first:
    ``"a.exe. "`` runs as ``a.exe``.
    """
    name = unicodedata.normalize("NFKC", filename).strip().rstrip(". ").lower()
    # Only the last path segment is the file name; senders sometimes send a full path.
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    parts = name.split(".")
    return [part.strip() for part in parts[1:]]


def danger(filename: str | None, content_type: str | None = None) -> Danger | None:
    """Classify one attachment by its name and declared MIME type.

    Args:
        filename: the decoded file name (``Content-Disposition`` ``filename`` or ``Content-Type``
            ``name``), or ``None`` when the part has none.
        content_type: the declared ``type/subtype`` (any case, parameters ignored), or ``None``.

    Returns:
        ``Danger.DISGUISED`` for a program under a document's name (checked first, because it is
        the stronger sign), ``Danger.EXECUTABLE`` or ``Danger.SCRIPT`` by extension or declared
        type, otherwise ``None``.
    """
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    if filename:
        if any(char in BIDI_CONTROLS for char in filename):
            return Danger.DISGUISED
        extensions = _extensions(filename)
        if extensions:
            last = extensions[-1]
            runs = last in EXECUTABLE_EXTENSIONS or last in SCRIPT_EXTENSIONS
            if runs and any(ext in DOCUMENT_EXTENSIONS for ext in extensions[:-1]):
                return Danger.DISGUISED
            if last in EXECUTABLE_EXTENSIONS:
                return Danger.EXECUTABLE
            if last in SCRIPT_EXTENSIONS:
                return Danger.SCRIPT
    if mime in EXECUTABLE_TYPES:
        return Danger.EXECUTABLE
    if mime in SCRIPT_TYPES:
        return Danger.SCRIPT
    return None


#: Byte signatures of the types a reader's program would open, checked in order on the first bytes
#: (WHATWG MIME Sniffing §6.1 images, §6.2 audio and video, §7.1 archives and PDF; executables by their
#: loaders' magic numbers: "MZ" PE/COFF, "\\x7fELF", Mach-O). ``None`` in a pattern matches any byte.
SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "application/pdf"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
    (b"\x00\x00\x01\x00", "image/x-icon"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x1f\x8b\x08", "application/gzip"),
    (b"Rar!\x1a\x07", "application/x-rar-compressed"),
    (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "application/x-ole-storage"),
    (b"{\\rtf", "text/rtf"),
    (b"ID3", "audio/mpeg"),
    (b"OggS\x00", "application/ogg"),
    (b"MZ", "application/x-msdownload"),
    (b"\x7fELF", "application/x-executable"),
    (b"\xcf\xfa\xed\xfe", "application/x-mach-binary"),
    (b"\xfe\xed\xfa\xcf", "application/x-mach-binary"),
)
#: Text that opens an HTML document (WHATWG MIME Sniffing §7.1, "text/html" patterns), case-insensitive,
#: after leading white space.
_HTML_START = re.compile(rb"\s*<(!doctype html|html|head|script|iframe|body|table|div|style|a |title|h1|p[ >]|br|!--)",
                         re.IGNORECASE)
#: An SVG document's start (an SVG runs scripts when opened by itself).
_SVG_START = re.compile(rb"\s*(<\?xml[^>]*>\s*)?(<!--.*?-->\s*)*<svg[\s>]", re.IGNORECASE | re.DOTALL)


def sniff(data: bytes) -> str | None:
    """The type the first bytes of ``data`` show, or ``None`` when they show none of :data:`SIGNATURES`,
    HTML or SVG (pure). Reads at most ``budgets.ATTACHMENT_SNIFF_BYTES``."""
    head = data[:budgets.ATTACHMENT_SNIFF_BYTES]
    if head[:12].startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    if head[4:8] == b"ftyp":
        return "video/mp4"
    for signature, mime in SIGNATURES:
        if head.startswith(signature):
            return mime
    if _SVG_START.match(head):
        return "image/svg+xml"
    if _HTML_START.match(head):
        return "text/html"
    return None


#: Characters no saved file name may hold: path separators, Windows' reserved ``<>:"|?*``, and controls.
_UNSAFE_CHARS = re.compile(r'[\x00-\x1f\x7f-\x9f<>:"/\\|?*]')
#: Device names Windows reserves whatever the extension (``CON.txt`` opens the console).
_WINDOWS_DEVICES = re.compile(r"^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\.|$)", re.IGNORECASE)
#: A type's usual extension, for a part that has no name.
_EXTENSIONS: dict[str, str] = {
    "application/pdf": "pdf", "image/png": "png", "image/jpeg": "jpg", "image/jpg": "jpg", "image/gif": "gif",
    "image/webp": "webp", "image/bmp": "bmp", "text/plain": "txt", "text/html": "html", "text/calendar": "ics",
    "text/csv": "csv", "message/rfc822": "eml", "application/zip": "zip",
}


def safe_filename(filename: str | None, part_id: str, content_type: str) -> str:
    """A name under which the part is safe to save on Windows, macOS and Linux (pure).

    The last path segment only (``../../etc/passwd`` -> ``passwd``), NFC-normalised, without bidirectional
    controls (:data:`BIDI_CONTROLS`), control characters and Windows' reserved characters (each replaced by
    ``_``), leading dots (a hidden file) and trailing dots and spaces (Windows drops them); a reserved device
    name (``CON``, ``NUL``, ``COM1``...) gets a leading ``_``. At most ``budgets.ATTACHMENT_FILENAME_MAX_BYTES``
    bytes of UTF-8, cut before the extension so the extension stays. A part without a usable name is
    ``part-<part_id>.<extension of its type>`` (``part-2.pdf``; ``bin`` for an unknown type). The danger
    token (:func:`danger`) is computed from the name as given, not from this one.
    """
    name = unicodedata.normalize("NFC", filename or "")
    name = "".join(char for char in name if char not in BIDI_CONTROLS)
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = _UNSAFE_CHARS.sub("_", name).strip().lstrip(".").rstrip(". ")
    if not name.strip("_ "):
        extension = _EXTENSIONS.get(content_type.lower(), "bin")
        return f"part-{part_id}.{extension}"
    if _WINDOWS_DEVICES.match(name):
        name = "_" + name
    limit = budgets.ATTACHMENT_FILENAME_MAX_BYTES
    if len(name.encode("utf-8")) > limit:
        stem, dot, extension = name.rpartition(".")
        if not dot or len(extension.encode("utf-8")) > 16:
            stem, extension = name, ""
        keep = limit - (len(extension.encode("utf-8")) + 1 if extension else 0)
        stem = stem.encode("utf-8")[:keep].decode("utf-8", "ignore").rstrip(". ")
        name = f"{stem}.{extension}" if extension else stem
    return name


@dataclass(frozen=True)
class Attachment:
    """One attachment as a reader sees it.

    Fields:
        part_id: the part's IMAP section number (RFC 3501 §6.4.5): ``"2"``, ``"1.2"``; inside an attached
            message ``"3.1"`` and so on.
        filename: the file name as the sender gave it (decoded), or ``None``.
        safe_filename: :func:`safe_filename` of it.
        content_type: the declared ``type/subtype``, lower case.
        sniffed_type: :func:`sniff` of its bytes, or ``None``.
        size_bytes: the decoded size in bytes.
        sha256: the hex SHA-256 of the decoded bytes.
        inline: whether it is shown in the body (``Content-Disposition: inline`` or no disposition, with a
            Content-ID or as a non-text part of the body) rather than offered as a file.
        content_id: the Content-ID without its angle brackets (RFC 2392), or ``None``.
        danger: :func:`danger` of the name as given and the declared type.
    """

    part_id: str
    filename: str | None
    safe_filename: str
    content_type: str
    sniffed_type: str | None
    size_bytes: int
    sha256: str
    inline: bool
    content_id: str | None
    danger: Danger | None


@dataclass(frozen=True)
class AttachmentSummary:
    """What a message carries: its :class:`Attachment` list, ``count`` of them, ``dangerous`` of them with a
    danger token, and ``defects`` (a part that could not be decoded, in words)."""

    attachments: tuple[Attachment, ...]
    defects: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        """How many attachments the message carries."""
        return len(self.attachments)

    @property
    def dangerous(self) -> int:
        """How many of them :func:`danger` flags."""
        return sum(1 for item in self.attachments if item.danger is not None)

    @property
    def by_content_id(self) -> dict[str, str]:
        """Content-ID (as written, without brackets) -> part id, for ``cid:`` URLs (RFC 2392)."""
        return {item.content_id: item.part_id for item in self.attachments if item.content_id}


def filename_of(part: Message) -> str | None:
    """The part's decoded file name, or ``None``.

    ``get_filename`` collapses RFC 2231 values; ``get_param`` answers a bare ``name*`` parameter
    with a tuple, so only a non-empty ``str`` is taken as a name.
    """
    value = part.get_filename()
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _disposition(part: Message) -> str:
    """The Content-Disposition's type, lower case, or ``""`` (RFC 2183 §2)."""
    return str(part.get("Content-Disposition", "")).split(";", 1)[0].strip().lower()


def content_id(part: Message) -> str | None:
    """The part's Content-ID without angle brackets and white space (RFC 2045 §7, RFC 2392), or ``None``."""
    value = part.get("Content-ID")
    if value is None:
        return None
    text = str(value).strip().removeprefix("<").removesuffix(">").strip()
    return text or None


def _encapsulated(part: Message) -> Message | None:
    """The message ``part`` encapsulates when compat32 parsed it as one (``message/rfc822`` or
    ``message/global``, RFC 2046 §5.2.1, RFC 6532 §3.5), else ``None``."""
    if part.get_content_type() not in ("message/rfc822", "message/global"):
        return None
    payload = part.get_payload()
    if isinstance(payload, list) and len(payload) == 1 and isinstance(payload[0], Message):
        return payload[0]
    return None


def is_attachment(part: Message) -> bool:
    """Whether a leaf part is an attachment: ``Content-Disposition: attachment`` or a file name."""
    if part.is_multipart():
        return False
    return _disposition(part) == "attachment" or filename_of(part) is not None


def sections(message: Message) -> Iterator[tuple[str, Message]]:
    """Every part with its IMAP section number (RFC 3501 §6.4.5), depth first, in order, without recursion.

    A message that is not multipart is one part, ``"1"``. The children of a multipart are numbered from 1
    under its number. An encapsulated message (:func:`_encapsulated`) at ``n`` is yielded itself, then its
    own parts under ``n`` (its body alone is ``n.1`` when it is not multipart). Multipart containers are
    yielded too, so callers filter. The number of parts is bounded by ``PARSE_MIME_PARTS_MAX`` before any
    parse (``ingress.bounds``).
    """
    if not message.is_multipart():
        yield "1", message
        return
    stack: list[tuple[str, Message]] = []

    def children(prefix: str, container: Message) -> list[tuple[str, Message]]:
        payload = container.get_payload()
        parts = [item for item in payload if isinstance(item, Message)] if isinstance(payload, list) else []
        return [(f"{prefix}.{index}" if prefix else str(index), item) for index, item in enumerate(parts, 1)]

    stack.extend(reversed(children("", message)))
    while stack:
        number, part = stack.pop()
        yield number, part
        inner = _encapsulated(part)
        if inner is not None:
            if inner.is_multipart():
                stack.extend(reversed(children(number, inner)))
            else:
                stack.append((f"{number}.1", inner))
        elif part.is_multipart() and part.get_content_maintype() == "multipart":
            stack.extend(reversed(children(number, part)))


def listed(part: Message) -> bool:
    """Whether the reader's attachment list shows ``part`` (pure over its headers).

    An attached message (``message/rfc822`` with ``Content-Disposition: attachment`` or a file name), any other
    leaf marked as an attachment (:func:`is_attachment`), and a leaf that is not text with a Content-ID or in
    a ``multipart/related`` body (an inline image) are listed. Body text and HTML, and the machine parts of a
    delivery report (``message/delivery-status``), are not.
    """
    if _encapsulated(part) is not None:
        return _disposition(part) == "attachment" or filename_of(part) is not None
    if part.is_multipart():
        return False
    if is_attachment(part):
        return True
    return part.get_content_maintype() not in ("text", "message", "multipart") and (
        content_id(part) is not None or _disposition(part) in ("", "inline"))


def part_bytes(part: Message) -> bytes:
    """The decoded bytes of one listed part (RFC 2045 §6 transfer encodings undone; an attached message's
    own bytes). Raises what the stdlib raises on a malformed part; callers guard."""
    inner = _encapsulated(part)
    if inner is not None:
        return inner.as_bytes()
    payload = part.get_payload(decode=True)
    return payload if isinstance(payload, bytes) else b""


def find_part(message: Message, part_id: str) -> Message | None:
    """The listed part numbered ``part_id`` (:func:`sections`), or ``None``."""
    for number, part in sections(message):
        if number == part_id:
            return part if listed(part) else None
    return None


def summarise(message: Message) -> AttachmentSummary:
    """List a parsed message's attachments (:func:`listed`) with what a reader needs; never raises on a part.

    Parts of an attached ``message/rfc822`` are listed too, so a program hidden inside a forwarded message
    still counts. A part whose bytes cannot be decoded is listed with size 0 and the sha256 of nothing, and a
    defect names it (``part 2: its bytes could not be decoded``).
    """
    found: list[Attachment] = []
    defects: list[str] = []
    for number, part in sections(message):
        if not listed(part):
            continue
        content_type = part.get_content_type()
        name = filename_of(part)
        try:
            data = part_bytes(part)
        except Exception:  # noqa: BLE001 - the stdlib raises many kinds on malformed parts; recorded below
            defects.append(f"part {number}: its bytes could not be decoded; the raw message keeps them")
            data = b""
        disposition = _disposition(part)
        found.append(Attachment(
            part_id=number, filename=name, safe_filename=safe_filename(name, number, content_type),
            content_type=content_type, sniffed_type=sniff(data), size_bytes=len(data),
            sha256=hashlib.sha256(data).hexdigest(), inline=disposition != "attachment" and (
                disposition == "inline" or content_id(part) is not None or name is None),
            content_id=content_id(part), danger=danger(name, content_type),
        ))
    return AttachmentSummary(attachments=tuple(found), defects=tuple(defects))
