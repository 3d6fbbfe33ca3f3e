"""What each node needs from a Butler's declared capabilities, and the grain of a resource.

spec/butler.md §2 ("Capability requirement per node") and §7. A requirement is a set of actions,
satisfied by any one of them; ``None`` means the node needs nothing. The checker proves the declared
action set equals exactly what the graph needs; the runtime ceiling (later) reads the same table.
"""

from __future__ import annotations

import re

from mailnode.butler.ast import (
    CaseAssignNode,
    CaseCloseNode,
    DraftNode,
    LookupNode,
    Node,
    SendProposeNode,
)

METADATA_READ = "mailbox.metadata.read"
CONTENT_READ = "mailbox.content.read"
SEND_PROPOSE = "send.propose"

#: A resource names one mailbox by address: ``mailbox:<local>@<domain>``.
_RESOURCE = re.compile(r"mailbox:[^@\s]+@[^@\s]+")

_LOOKUP_NEEDS: dict[str, frozenset[str] | None] = {
    "message": frozenset({CONTENT_READ}),
    "conversation": frozenset({METADATA_READ, CONTENT_READ}),
    "case": frozenset({METADATA_READ, CONTENT_READ}),
    "mailbox": frozenset({METADATA_READ, CONTENT_READ}),
    # A Butler reads only drafts it wrote itself, so no mailbox authority is asked.
    "draft": None,
}


def requirement(node: Node) -> frozenset[str] | None:
    """The actions (any one suffices) ``node`` needs, or None for a node that needs none."""
    if isinstance(node, LookupNode):
        return _LOOKUP_NEEDS[node.entity]
    if isinstance(node, (CaseAssignNode, CaseCloseNode, DraftNode, SendProposeNode)):
        return frozenset({SEND_PROPOSE})
    return None


def resource_has_mailbox_grain(resource: str) -> bool:
    """True when ``resource`` is ``mailbox:<address>`` with one ``@`` and no whitespace."""
    return _RESOURCE.fullmatch(resource) is not None
