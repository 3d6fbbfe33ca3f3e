"""``POST /api/sends/{id}/release``: a person releases a Butler's send (``butler.release``).

Needs ``send.propose`` on the send's mailbox. 200 ``{"release": {"send_id", "state": "held", "run_id",
"resumed", "resumption"}}``: ``run_id`` is the run that sealed it (null when none did), ``resumption``
what telling it did (``release.Resumption``), and ``resumed`` true only when it is ``delivered`` (a
workflow live in this process received the release). 409 ``E_SEND_NOT_RELEASABLE`` otherwise (absent, not permitted,
another gate, raced). The dispatcher is woken for the send's ``release_at``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from mailnode.api.deps import CallerDep, NodeDep
from mailnode.api.responses import SendId, errors
from mailnode.api.send_models import SendReleaseAnswer
from mailnode.butler import release
from mailnode.outbound.workflows import wake

router = APIRouter(prefix="/api/sends", tags=["sends"])


@router.post("/{send_id}/release", response_model=SendReleaseAnswer, responses=errors(409))
def release_send(send_id: SendId, node: NodeDep, caller: CallerDep) -> dict[str, Any]:
    """Release one Butler send and tell its run."""
    with node.begin() as conn:
        done = release.release_send(conn, org_id=caller.org_id, principal_id=caller.principal_id,
                                    at=node.clock.now(), send_id=send_id)
    told = release.tell_run(node, done, caller.principal_id)
    wake(send_id, max(0.0, (done.release_at - node.clock.now()).total_seconds()))
    return {"release": {"send_id": send_id, "state": "held", "run_id": done.run_id,
                        "resumed": told is release.Resumption.DELIVERED, "resumption": told.value}}
