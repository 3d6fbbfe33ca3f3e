"""The dangerous-attachment classification as a table, and counting over a parsed message."""

from __future__ import annotations

from email import message_from_bytes
from email.policy import compat32

import pytest

from mailnode.ingress.attachments import Danger, danger, summarise


@pytest.mark.parametrize(
    ("filename", "content_type", "expected"),
    [
        ("invoice.pdf", "application/pdf", None),
        ("photo.JPG", "image/jpeg", None),
        ("notes.txt", "text/plain", None),
        ("archive.tar.gz", "application/gzip", None),
        ("README", None, None),
        (None, None, None),
        (None, "text/plain", None),
        ("setup.exe", "application/octet-stream", Danger.EXECUTABLE),
        ("SETUP.EXE", None, Danger.EXECUTABLE),
        ("installer.msi", None, Danger.EXECUTABLE),
        ("app.apk", None, Danger.EXECUTABLE),
        ("tool.jar", None, Danger.EXECUTABLE),
        ("shortcut.lnk", None, Danger.EXECUTABLE),
        ("setup.exe.", None, Danger.EXECUTABLE),
        ("setup.exe  ", None, Danger.EXECUTABLE),
        ("C:\\Users\\x\\run.scr", None, Danger.EXECUTABLE),
        (None, "application/x-msdownload", Danger.EXECUTABLE),
        ("blob", "application/x-dosexec", Danger.EXECUTABLE),
        ("run.js", "text/plain", Danger.SCRIPT),
        ("macro.vbs", None, Danger.SCRIPT),
        ("page.hta", None, Danger.SCRIPT),
        ("deploy.ps1", None, Danger.SCRIPT),
        ("start.bat", None, Danger.SCRIPT),
        ("install.sh", None, Danger.SCRIPT),
        (None, "application/javascript", Danger.SCRIPT),
        ("invoice.pdf.exe", "application/pdf", Danger.DISGUISED),
        ("scan.JPG.scr", None, Danger.DISGUISED),
        ("report.docx.js", None, Danger.DISGUISED),
        ("invoice.pdf .exe", None, Danger.DISGUISED),
        ("invoice\u202efdp.exe", None, Danger.DISGUISED),
        ("photo\u202egpj.js", "image/jpeg", Danger.DISGUISED),
        # A program under a program's name is a program, not a disguise.
        ("setup.x64.exe", None, Danger.EXECUTABLE),
    ],
)
def test_danger_table(filename: str | None, content_type: str | None, expected: Danger | None) -> None:
    assert danger(filename, content_type) is expected


def test_summary_counts_attachments_inside_attached_messages() -> None:
    raw = (
        b"Content-Type: multipart/mixed; boundary=o\r\n\r\n"
        b"--o\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n"
        b"--o\r\nContent-Type: message/rfc822\r\n\r\n"
        b"Content-Type: multipart/mixed; boundary=i\r\n\r\n"
        b'--i\r\nContent-Type: application/octet-stream; name="a.pdf.exe"\r\n\r\nMZ\r\n--i--\r\n'
        b"--o\r\nContent-Disposition: attachment; filename*=utf-8''r%C3%A9sum%C3%A9.pdf\r\n"
        b"Content-Type: application/pdf\r\n\r\n%PDF\r\n"
        b"--o--\r\n"
    )
    summary = summarise(message_from_bytes(raw, policy=compat32))
    assert summary.count == 2
    assert summary.dangerous == 1
    assert {item.filename for item in summary.attachments} == {"a.pdf.exe", "résumé.pdf"}


def test_bare_name_star_parameter_is_not_a_file_name() -> None:
    raw = b"Content-Type: text/plain; name*\r\nContent-Disposition: attachment\r\n\r\nx\r\n"
    summary = summarise(message_from_bytes(raw, policy=compat32))
    assert summary.count == 1
    assert summary.attachments[0].filename is None
