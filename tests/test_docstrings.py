"""Every public module, class and function of mailnode has a docstring (the contract)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "mailnode"


def _missing() -> list[str]:
    missing: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        if "alembic" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(SRC.parent)
        if ast.get_docstring(tree) is None:
            missing.append(f"{rel}: module")
        for node in tree.body:
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    and not node.name.startswith("_") and ast.get_docstring(node) is None):
                missing.append(f"{rel}:{node.lineno} {node.name}")
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                for item in node.body:
                    if (isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("_")
                            and ast.get_docstring(item) is None):
                        missing.append(f"{rel}:{item.lineno} {node.name}.{item.name}")
    return missing


def test_every_public_module_class_and_function_has_a_docstring() -> None:
    missing = _missing()
    assert missing == [], "\n".join(missing)
