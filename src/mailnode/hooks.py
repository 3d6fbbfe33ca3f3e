"""The calls a lower layer makes into a higher one, each declared here and wired by the composition root.

Issue 18, "Layers run one way": a package never imports one above it. Where a lower layer must still call a
higher one, the call is declared as a hook (its name, and what an unwired call would skip), and
``mailnode.wiring`` fills every hook at start-up. A hook that is not wired is an error, never a silent
skip: calling it raises ``E_HOOK_UNWIRED`` (500), and ``runtime.launch`` refuses to start while any
declared hook is unwired (``require_wired``).

The hooks:

- ``ingress.after_materialise`` (ingress -> butler): the Butler trigger after a message is materialised,
  held as ``ingress.workflows.AFTER_MATERIALISE`` (a list of DBOS steps, declared through ``declare``);
- ``END_PARKED_RUN`` (outbound, retention -> butler): in the transaction that moves a send to a state it
  can never be released from (cancelled, withheld, refused ...), end the Butler run parked on its release
  (``butler.parked.end_parked_on``; seed 003 "The human-release gate"); returns what was ended or None;
- ``TELL_PARKED_RUNS`` (outbound, retention -> butler): after that commit, tell each ended run's workflow
  (``butler.parked.tell``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mailnode.errors import MailnodeError

#: name -> (is it wired?, one sentence on what an unwired call would skip).
_DECLARED: dict[str, tuple[Callable[[], bool], str]] = {}


def declare(name: str, is_wired: Callable[[], bool], skipped: str) -> None:
    """Declare a hook: ``name`` (``<package>.<moment>``), a predicate telling whether it is wired, and one
    sentence on what would be skipped without it."""
    _DECLARED[name] = (is_wired, skipped)


def unwired_error(names: list[str]) -> MailnodeError:
    """``E_HOOK_UNWIRED`` (500) naming ``names`` and what each would skip."""
    return MailnodeError(code="E_HOOK_UNWIRED", what=f"Hooks not wired: {', '.join(names)}.",
                         why=" ".join(_DECLARED[name][1] for name in names),
                         fix="Start through the composition root (mailnode.wiring.wire_hooks, called by "
                             "mailnode serve, every CLI command and wiring.launch).",
                         status=500, detail={"unwired": names})


def require_wired() -> None:
    """Raise ``E_HOOK_UNWIRED`` (500) naming every declared hook that is not wired."""
    unwired = sorted(name for name, (is_wired, _) in _DECLARED.items() if not is_wired())
    if unwired:
        raise unwired_error(unwired)


class Hook:
    """One call into a higher layer: ``wire`` sets its target; calling it calls the target with the same
    arguments and returns what it returns, or raises ``E_HOOK_UNWIRED`` (500) when nothing is wired."""

    def __init__(self, name: str, skipped: str) -> None:
        self.name = name
        self._target: Callable[..., Any] | None = None
        declare(name, lambda: self._target is not None, skipped)

    def wire(self, target: Callable[..., Any] | None) -> None:
        """Set (or, with None, clear) the target."""
        self._target = target

    @property
    def target(self) -> Callable[..., Any] | None:
        """The wired target, or None."""
        return self._target

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._target is None:
            raise unwired_error([self.name])
        return self._target(*args, **kwargs)


END_PARKED_RUN = Hook("outbound.end_parked_run",
                      "Without it, a Butler run parked on a send that was cancelled, withheld or refused "
                      "would sleep out its release timeout instead of ending with the send.")
TELL_PARKED_RUNS = Hook("outbound.tell_parked_runs",
                        "Without it, the workflow of a Butler run ended with its send would not be told and "
                        "would wait out its release timeout.")
