"""The repository's corpus copy (``tests/data/corpus``) is byte-identical to the shared corpus.

A fresh clone has no ``../shared``, so the suite reads the copy; where the shared original is present
(a working checkout, CI), every file's SHA-256 is compared both ways so the copy never drifts silently.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.corpus import CORPUS, SHARED_CORPUS


def _digests(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_the_copy_carries_the_corpus_with_its_licences() -> None:
    names = _digests(CORPUS)
    assert "README.md" in names
    assert any(name.startswith("LICENSES/") for name in names)
    assert len(names) > 100


@pytest.mark.skipif(not SHARED_CORPUS.is_dir(), reason="no ../shared/corpus beside this checkout")
def test_the_copy_is_byte_identical_to_the_shared_corpus() -> None:
    ours, theirs = _digests(CORPUS), _digests(SHARED_CORPUS)
    assert sorted(set(theirs) - set(ours)) == [], "files missing from tests/data/corpus"
    assert sorted(set(ours) - set(theirs)) == [], "files in tests/data/corpus that the shared corpus lacks"
    differ = sorted(name for name in ours if ours[name] != theirs[name])
    assert differ == [], f"files that differ from ../shared/corpus: {differ}"
