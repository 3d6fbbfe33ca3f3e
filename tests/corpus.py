"""Find the repository's copy of the corpus (``tests/data/corpus``) and read its expectation files.

The repository carries what its tests read, so a clone with nothing beside it runs the whole suite. The
copy is byte-identical to the project's shared corpus (``../shared/corpus`` where it exists beside the
repository); ``tests/test_corpus_copy.py`` compares the two file by file so the copy never drifts
silently. The path is taken relative to this file, never from the working directory. Never edit either.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: ``<repo>/tests/data/corpus``: the repository's copy.
CORPUS = Path(__file__).resolve().parent / "data" / "corpus"

#: ``<repo>/../shared/corpus``: the project's shared original, present only beside a working checkout.
SHARED_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"  # read only by the digest comparison


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
