"""``MailnodeError`` is an exception with identity: hashable, equal only to itself, raised and caught as before
(issue 18). Every subclass anywhere in mailnode keeps that, so none can take value equality back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mailnode
from mailnode.errors import MailnodeError, conflict, not_found


def _twins() -> tuple[MailnodeError, MailnodeError]:
    return (conflict("E_TWIN", "Same.", "Same.", "Same.", n=1), conflict("E_TWIN", "Same.", "Same.", "Same.", n=1))


def test_an_error_can_sit_in_a_set_and_key_a_dict() -> None:
    a, b = _twins()
    seen = {a, b}
    assert len(seen) == 2 and a in seen and b in seen
    assert {a: "first", b: "second"}[a] == "first"


def test_two_errors_with_equal_fields_are_two_errors() -> None:
    a, b = _twins()
    assert (a.code, a.what, a.why, a.fix, a.status, a.detail) == (b.code, b.what, b.why, b.fix, b.status, b.detail)
    assert a != b
    assert not a == b  # noqa: SIM201 (the == operator itself is what is tested, not only !=)
    same = a
    assert a == same


def test_raise_and_except_behave_as_before() -> None:
    with pytest.raises(MailnodeError) as caught:
        raise not_found("E_NO_SUCH_THING", "No thing thg_1.", thing_id="thg_1")
    err = caught.value
    assert (err.code, err.status, err.detail) == ("E_NO_SUCH_THING", 404, {"thing_id": "thg_1"})
    assert str(err).startswith("E_NO_SUCH_THING  No thing thg_1.")
    assert err.args == ("E_NO_SUCH_THING", "No thing thg_1.")
    try:
        try:
            raise err
        except MailnodeError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert outer.__cause__ is err


# Imports every module of mailnode in a fresh interpreter (so this session's imports do not matter) and
# reports each subclass of MailnodeError with whether it is hashable and compares by identity.
_SUBCLASSES = """
import importlib, json, pkgutil, mailnode
for m in pkgutil.walk_packages(mailnode.__path__, "mailnode."):
    if not (m.name.endswith("__main__") or ".alembic" in m.name):
        importlib.import_module(m.name)
from mailnode.errors import MailnodeError
def below(c):
    for s in c.__subclasses__():
        yield s
        yield from below(s)
print(json.dumps({f"{c.__module__}.{c.__qualname__}": [c.__hash__ is not None, c.__eq__ is object.__eq__]
                  for c in [MailnodeError, *below(MailnodeError)]}))
"""


def test_no_error_class_in_mailnode_takes_value_equality_back() -> None:
    # The same mailnode this session imported (a worktree's src, not an installed copy).
    src = str(Path(mailnode.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, "-c", _SUBCLASSES], capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    # The root and the domain errors known today: the scan is not silently empty.
    assert {"mailnode.errors.MailnodeError", "mailnode.butler.expr.ExprError"} <= set(found)
    assert {name: v for name, v in found.items() if v != [True, True]} == {}
