"""``trainjob run`` on a name that exists: a clear refusal, and ``--replace`` runs it afresh.

Running the README's main command twice must work; kubectl's ``create`` refuses an existing name,
so ``run`` does too (saying how to proceed) unless ``--replace`` asks to delete the old job first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.cli import trainjob

pytestmark = pytest.mark.e2e

JOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: hello-twice
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    command: ["python", "-c", "import os; print('hello from', os.environ['PET_NODE_RANK'])"]
"""


def test_run_twice_refuses_then_replace_runs_again(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    home = tmp_path / "home"

    first = trainjob(home, "run", "-f", str(job), "--follow")
    assert first.returncode == 0, first.stderr
    assert "hello from 0" in first.stdout

    again = trainjob(home, "run", "-f", str(job), "--wait")
    assert again.returncode == 1
    assert "already exists" in again.stderr
    assert "--replace" in again.stderr
    assert "Traceback" not in again.stderr

    replaced = trainjob(home, "run", "-f", str(job), "--replace", "--follow")
    assert replaced.returncode == 0, replaced.stderr
    assert "trainjob.trainer.kubeflow.org/hello-twice deleted" in replaced.stdout
    assert "hello from 0" in replaced.stdout
    listed = trainjob(home, "get", "jobs")
    assert listed.stdout.count("hello-twice") == 1
    assert "Complete" in listed.stdout
