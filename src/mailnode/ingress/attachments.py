"""Attachment counting and the "dangerous attachment" classification.

``danger(filename, content_type)`` is a pure function of a file name and a MIME type and returns
``None`` or a :class:`Danger` token. ``count_attachments(message)`` walks an already parsed
``email.message.Message`` (compat32) and never raises. Nothing here opens or runs a file: the
verdict is read from the name and the declared type only, so it is a warning sign, not a scan.
"""

from __future__ import annotations

import enum
import unicodedata
from dataclasses import dataclass
from email.message import Message


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


@dataclass(frozen=True)
class Attachment:
    """One attachment: its decoded file name (or ``None``), declared type, and danger token."""

    filename: str | None
    content_type: str
    danger: Danger | None


@dataclass(frozen=True)
class AttachmentSummary:
    """What a message carries: ``count`` attachments, ``dangerous`` of them with a danger token."""

    attachments: tuple[Attachment, ...]

    @property
    def count(self) -> int:
        """How many attachments the message carries."""
        return len(self.attachments)

    @property
    def dangerous(self) -> int:
        """How many of them :func:`danger` flags."""
        return sum(1 for item in self.attachments if item.danger is not None)


def _filename(part: Message) -> str | None:
    """The part's decoded file name, or ``None``.

    ``get_filename`` collapses RFC 2231 values; ``get_param`` answers a bare ``name*`` parameter
    with a tuple, so only a non-empty ``str`` is taken as a name.
    """
    value = part.get_filename()
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def is_attachment(part: Message) -> bool:
    """Whether a leaf part is an attachment: ``Content-Disposition: attachment`` or a file name."""
    if part.is_multipart():
        return False
    disposition = str(part.get("Content-Disposition", "")).split(";", 1)[0].strip().lower()
    return disposition == "attachment" or _filename(part) is not None


def summarise(message: Message) -> AttachmentSummary:
    """Walk a parsed message and list its attachments with their danger tokens.

    Parts of an attached ``message/rfc822`` are walked too (``walk()`` descends into them), so a
    program hidden inside a forwarded message is still counted. It raises only what the stdlib
    raises on a compat32 message (nothing on the corpus); ``parse.parse_message`` guards the call.
    """
    found: list[Attachment] = []
    for part in message.walk():
        if not is_attachment(part):
            continue
        content_type = part.get_content_type()
        name = _filename(part)
        found.append(Attachment(filename=name, content_type=content_type, danger=danger(name, content_type)))
    return AttachmentSummary(attachments=tuple(found))
