"""The one root error of mailnode, `MailnodeError`, and the shape every refusal takes.

Every error carries a stable ``E_...`` code, the HTTP status the API answers with, and three
sentences for the reader (often an agent): ``what`` happened, ``why`` it was refused, and the
``fix`` (a command or route that changes the outcome). ``detail`` holds the offending values.
Domain errors are raised where the rule lives, as ``MailnodeError(code=..., ...)`` or one of the
small helpers below; the API (``mailnode.api.errors``) and the CLI render them.

An error is an event, not a value: an error is equal only to itself (the same object), and every
error is hashable (it can sit in a set, key a dict, or be remembered by a library that tracks the
exceptions it has seen). Compare errors by ``code`` and their fields, never with ``==``. A subclass
that is itself a ``@dataclass`` must say ``eq=False`` too, or it would take value equality back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class MailnodeError(Exception):
    """A refusal or failure with a stable code; equal only to itself, and hashable (see the module).

    Attributes:
        code: stable token, ``E_`` followed by upper-case words (for example ``E_UNAUTHENTICATED``).
        what: one sentence, what happened.
        why: one sentence, why it was refused or failed.
        fix: the command or route that changes the outcome.
        status: the HTTP status the API answers with (400..599).
        detail: the offending values (JSON-serialisable).
    """

    code: str
    what: str
    why: str = ""
    fix: str = ""
    status: int = 400
    detail: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(self.code, self.what)

    def __str__(self) -> str:
        return self.render()

    def render(self) -> str:
        """The four-part text form: ``CODE  what`` then indented ``why`` and ``fix`` lines."""
        lines = [f"{self.code}  {self.what}"]
        if self.why:
            lines.append(f"  why  {self.why}")
        if self.fix:
            lines.append(f"  fix  {self.fix}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The API body: ``{"error", "message", "why", "fix", "detail"}``."""
        return {
            "error": self.code,
            "message": self.what,
            "why": self.why,
            "fix": self.fix,
            "detail": self.detail,
        }


def not_found(code: str, what: str, fix: str = "", **detail: Any) -> MailnodeError:
    """A 404: the thing is absent or the caller may not know it exists (the two answer alike)."""
    return MailnodeError(
        code=code,
        what=what,
        why="It does not exist, or you hold no relation that lets you see it.",
        fix=fix or "Check the id, or ask an administrator to grant you access (POST /api/access).",
        status=404,
        detail=detail,
    )


def no_such_mailbox(mailbox_id: str) -> MailnodeError:
    """``E_NO_SUCH_MAILBOX`` (404), for an absent or undisclosed mailbox (shared by authz and mail, which sits
    above it)."""
    return not_found("E_NO_SUCH_MAILBOX", f"No mailbox {mailbox_id}.", fix="List mailboxes with GET /api/mailboxes.",
                     mailbox_id=mailbox_id)


def invalid(code: str, what: str, why: str, fix: str, **detail: Any) -> MailnodeError:
    """A 422: the request is malformed; nothing was written."""
    return MailnodeError(code=code, what=what, why=why, fix=fix, status=422, detail=detail)


def conflict(code: str, what: str, why: str, fix: str, **detail: Any) -> MailnodeError:
    """A 409: the request is well formed but conflicts with the current state; nothing was written."""
    return MailnodeError(code=code, what=what, why=why, fix=fix, status=409, detail=detail)


def limit_exceeded(code: str, limit_name: str, limit: float, observed: float, ask: str) -> MailnodeError:
    """A 413/422-style refusal for a budget: names the limit, its value, what was seen, and the ask."""
    return MailnodeError(
        code=code,
        what=f"{limit_name} is {limit}; this request needs {observed}.",
        why=f"The budget {limit_name} bounds this request.",
        fix=ask,
        status=422,
        detail={"limit_name": limit_name, "limit": limit, "observed": observed},
    )


def not_an_administrator(act: str) -> MailnodeError:
    """The 403 for an administrator-only act (``org.admin``, direct or through a team)."""
    return MailnodeError(
        code="E_NOT_AN_ADMINISTRATOR",
        what=f"Only an administrator may {act}.",
        why="This act needs the org.admin relation on the organisation.",
        fix="Ask an administrator to do it, or to grant you org.admin (POST /api/access).",
        status=403,
        detail={"act": act},
    )
