"""The composition root wires the Butler trigger into ingress, and a launch without that wiring is an error
(issue 18: ingress no longer imports butler to register the trigger as a side effect of import order)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mailnode import runtime
from mailnode.butler.trigger import trigger_workflow
from mailnode.errors import MailnodeError
from mailnode.ingress import workflows


@pytest.fixture
def hooks() -> Iterator[None]:
    """Restore the wiring after each test."""
    saved = list(workflows.AFTER_MATERIALISE)
    try:
        yield
    finally:
        workflows.wire_after_materialise(*saved)


def test_the_composition_root_wires_the_butler_trigger_once(hooks: None) -> None:
    workflows.wire_after_materialise()
    runtime.wire_hooks()
    runtime.wire_hooks()
    assert workflows.AFTER_MATERIALISE == [trigger_workflow]
    workflows.require_wired()


def test_an_unwired_hook_is_an_error_not_a_skip(hooks: None) -> None:
    workflows.wire_after_materialise()
    with pytest.raises(MailnodeError) as caught:
        workflows.require_wired()
    assert caught.value.code == "E_HOOK_UNWIRED"
    assert "Butler" in caught.value.why
