"""The red-team harness itself (``python -m tests.redteam``, tests/redteam): its cases are well
formed, and a run counts a case's outcome from a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.redteam.cases import CLASSES
from tests.redteam.registry import all_cases

ROOT = Path(__file__).resolve().parents[2]


def test_every_case_has_a_class_and_a_kind() -> None:
    cases = all_cases()
    assert len(cases) >= 300
    assert {c.cls for c in cases.values()} <= set(CLASSES)
    assert {c.kind for c in cases.values()} <= {"input", "fault"}


def test_a_run_prints_the_counts() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.redteam", "-k", "run-zero", "-k", "sdk-env-is-a-list"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        "bad inputs: 2 tried, 2 clear errors, 0 tracebacks, 0 hangs, 0 wrongly accepted"
        in proc.stdout
    ), proc.stdout
