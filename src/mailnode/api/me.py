"""Routes for the caller's own contact address: ``POST /api/me/contact-email`` and ``.../verify`` (spec §4).

Both are realtime: the code is sent inside the request and the answer waits for the provider. The 503 is
deliberately vague. ``GET /api/me`` (``api.directory``) shows ``contact_email_verified``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from mailnode.api.deps import CallerDep, NodeDep
from mailnode.api.models import Strict
from mailnode.api.principal_models import ContactEmailAnswer, ContactEmailSentAnswer
from mailnode.api.responses import errors
from mailnode.codes import verification_io

router = APIRouter(prefix="/api/me", tags=["me"])


class ContactEmailIn(Strict):
    """Body of POST /api/me/contact-email."""

    address: str


class CodeIn(Strict):
    """Body of POST /api/me/contact-email/verify."""

    code: str


@router.post("/contact-email", response_model=ContactEmailSentAnswer, responses=errors(403, 429, 503))
def set_contact_email(body: ContactEmailIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Set the contact address and send it a verification code (answers after the provider did)."""
    return verification_io.request_code(node, org_id=caller.org_id, user_id=caller.principal_id,
                                        address=body.address)


@router.post("/contact-email/verify", response_model=ContactEmailAnswer, responses=errors(403, 409, 429))
def verify_contact_email(body: CodeIn, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Check a code; on success the contact address is verified."""
    return verification_io.verify_code(node, org_id=caller.org_id, user_id=caller.principal_id, code=body.code)
