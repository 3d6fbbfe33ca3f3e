"""``make run``'s install step says what it installs before each silent ``pip`` (issue 18)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_each_install_command_is_announced_with_what_it_installs(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    plan = subprocess.run(["make", "-n", "setup", f"VENV={venv}"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.splitlines()
    installs = [i for i, line in enumerate(plan) if " -m venv " in line or "pip install" in line]
    assert len(installs) == 3, plan
    assert all(plan[i - 1].startswith("echo ") for i in installs), plan
    # Run the announcements only (``make -n`` printed them; no install happens): they name the packages.
    said = subprocess.run(["sh", "-c", "\n".join(line for line in plan if line.startswith("echo "))], cwd=REPO,
                          capture_output=True, text=True, check=True).stdout
    assert f"creating the virtual environment {venv}" in said
    [listed] = [line for line in said.splitlines() if "its dependencies with the dev extra: " in line]
    names = listed.split(": ", 1)[1].split(", ")
    assert {"alembic", "dbos", "fastapi", "rich", "uvicorn", "pytest"} <= set(names), listed
