"""The composition root wires the Butler trigger into ingress, and a launch without that wiring is an error
(issue 18: ingress no longer imports butler to register the trigger as a side effect of import order)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mailnode import hooks, runtime, wiring
from mailnode.butler.trigger import trigger_workflow
from mailnode.errors import MailnodeError
from mailnode.ingress import workflows


@pytest.fixture
def trigger_wiring() -> Iterator[None]:
    """Restore the wiring after each test."""
    saved = list(workflows.AFTER_MATERIALISE)
    try:
        yield
    finally:
        workflows.wire_after_materialise(*saved)


def test_the_composition_root_wires_the_butler_trigger_once(trigger_wiring: None) -> None:
    workflows.wire_after_materialise()
    wiring.wire_hooks()
    wiring.wire_hooks()
    assert workflows.AFTER_MATERIALISE == [trigger_workflow]
    hooks.require_wired()


def test_an_unwired_hook_is_an_error_not_a_skip(trigger_wiring: None) -> None:
    workflows.wire_after_materialise()
    with pytest.raises(MailnodeError) as caught:
        hooks.require_wired()
    assert caught.value.code == "E_HOOK_UNWIRED"
    assert caught.value.detail == {"unwired": ["ingress.after_materialise"]}
    assert "Butler" in caught.value.why


def test_launch_refuses_to_start_unwired(trigger_wiring: None, node: object) -> None:
    """``runtime.launch`` itself checks, so a process that skips the composition root cannot start."""
    workflows.wire_after_materialise()
    with pytest.raises(MailnodeError) as caught:
        runtime.launch(node)  # type: ignore[arg-type]
    assert caught.value.code == "E_HOOK_UNWIRED"
    assert runtime.launched_executor_id() is None


@pytest.fixture
def parked_hooks() -> Iterator[None]:
    """Restore the parked-run hooks after each test."""
    saved = hooks.END_PARKED_RUN.target, hooks.TELL_PARKED_RUNS.target
    try:
        yield
    finally:
        hooks.END_PARKED_RUN.wire(saved[0])
        hooks.TELL_PARKED_RUNS.wire(saved[1])


def test_the_composition_root_wires_the_parked_run_hooks(parked_hooks: None) -> None:
    from mailnode.butler import parked

    hooks.END_PARKED_RUN.wire(None)
    hooks.TELL_PARKED_RUNS.wire(None)
    wiring.wire_hooks()
    assert hooks.END_PARKED_RUN.target is parked.end_parked_on
    assert hooks.TELL_PARKED_RUNS.target is parked.tell


def test_calling_an_unwired_hook_is_an_error_not_a_skip(parked_hooks: None) -> None:
    hooks.END_PARKED_RUN.wire(None)
    with pytest.raises(MailnodeError) as caught:
        hooks.END_PARKED_RUN(None, org_id="org", send_id="snd", send_state="cancelled", at=None)
    assert caught.value.code == "E_HOOK_UNWIRED"
    assert caught.value.detail == {"unwired": ["outbound.end_parked_run"]}
    with pytest.raises(MailnodeError) as at_launch:
        hooks.require_wired()
    assert at_launch.value.detail == {"unwired": ["outbound.end_parked_run"]}


def test_every_cli_command_runs_wired() -> None:
    """``mailnode`` (``cli.main``) wires before any command runs: a command that cancels a send must end the
    Butler run parked on it, so a fresh process's hooks are all wired once ``main`` has started."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import mailnode

    code = ("import sys\nsys.argv = ['mailnode', '--help']\nfrom mailnode import cli, hooks\n"
            "try:\n    hooks.require_wired()\nexcept Exception:\n    print('unwired before main')\n"
            "try:\n    cli.main()\nexcept SystemExit:\n    pass\nhooks.require_wired()\nprint('wired')\n")
    src = str(Path(mailnode.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[0] == "unwired before main"
    assert done.stdout.splitlines()[-1] == "wired"
