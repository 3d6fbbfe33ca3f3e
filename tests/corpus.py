"""Find the shared corpus (``../shared/corpus`` beside the repository) and read its expectation files.

CI runs on a clean clone with ``shared/`` next to it, so the path is taken relative to this file,
never from the working directory. The corpus is read in place and never edited.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: ``<repo>/../shared/corpus``.
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def corpus() -> Path:
    """The corpus directory."""
    return CORPUS


def message_files() -> list[Path]:
    """Every message file (``.eml``, ``.txt``) under the corpus except the licence texts, sorted."""
    return sorted(
        path
        for path in CORPUS.rglob("*")
        if path.suffix in (".eml", ".txt") and "LICENSES" not in path.parts and path.is_file()
    )


def read_jsonl(relative: str) -> list[dict[str, Any]]:
    """The records of one ``.jsonl`` expectation file, e.g. ``"bounces/expected.jsonl"``."""
    with (CORPUS / relative).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
