"""The composition root's wiring: the calls a lower layer makes into a higher one, connected at start-up.

Issue 18 ("Layers run one way"): ingress must not import butler, yet a materialised message must start
the Butler trigger. Ingress holds the hook list (``ingress.workflows.AFTER_MATERIALISE``) and declares it
to the runtime; this module, above every domain package, fills it. ``launch`` is the one way a process
starts its durable executor: it wires, then ``runtime.launch`` refuses to start if any declared hook is
still unwired (``E_HOOK_UNWIRED``).
"""

from __future__ import annotations

from mailnode import runtime
from mailnode.butler.trigger import trigger_workflow
from mailnode.ingress import workflows as ingress_workflows
from mailnode.node import Node


def wire_hooks() -> None:
    """Wire every hook (idempotent: wiring twice does not run a hook twice).

    Today one: after a message is materialised (ingress), the Butler trigger runs (butler).
    """
    ingress_workflows.wire_after_materialise(trigger_workflow)


def launch(node: Node, role: str = "serve") -> None:
    """Wire the hooks, then launch DBOS for this process (``runtime.launch``; its errors:
    ``E_EXECUTOR_ALREADY_RUNNING``, ``E_HOOK_UNWIRED``)."""
    wire_hooks()
    runtime.launch(node, role)
