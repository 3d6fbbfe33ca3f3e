"""The composition root's wiring: the calls a lower layer makes into a higher one, connected at start-up.

Issue 18 ("Layers run one way"): ingress must not import butler, yet a materialised message must start
the Butler trigger; outbound and retention must not import butler, yet a cancelled or withheld send must
end the Butler run parked on it. Each such call is a hook declared in ``mailnode.hooks``; this module,
above every domain package, fills them. ``mailnode serve`` (through ``launch``) and every CLI command
(``cli.main``) wire before they do anything; ``runtime.launch`` refuses to start if any declared hook is
still unwired, and calling an unwired hook raises ``E_HOOK_UNWIRED``.
"""

from __future__ import annotations

from mailnode import hooks, runtime
from mailnode.butler import parked
from mailnode.butler.trigger import trigger_workflow
from mailnode.ingress import workflows as ingress_workflows
from mailnode.node import Node


def wire_hooks() -> None:
    """Wire every hook (idempotent: wiring twice does not run a hook twice).

    Every hook ``mailnode.hooks`` lists: after a message is materialised (ingress), the Butler trigger
    runs (butler); when a send is decided against (outbound, retention), the Butler run parked on it ends
    and its workflow is told (butler).
    """
    ingress_workflows.wire_after_materialise(trigger_workflow)
    hooks.END_PARKED_RUN.wire(parked.end_parked_on)
    hooks.TELL_PARKED_RUNS.wire(parked.tell)


def launch(node: Node, role: str = "serve") -> None:
    """Wire the hooks, then launch DBOS for this process (``runtime.launch``; its errors:
    ``E_EXECUTOR_ALREADY_RUNNING``, ``E_HOOK_UNWIRED``)."""
    wire_hooks()
    runtime.launch(node, role)
