"""``trainjob logs NAME --all-steps [-f]``: every step's log, each line prefixed with its step.

A 2-node job whose nodes print, wait, and print again runs for real on the local backend; followed,
both nodes' first lines arrive before either's last (the logs are read side by side, not one
after the other); afterwards the same command prints node by node.
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
  name: chatty
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 2
    command:
      - python
      - -c
      - |
        import os, time
        rank = os.environ["PET_NODE_RANK"]
        print("start", rank, flush=True)
        time.sleep(15)  # room for the logs command to start before the last lines (under load)
        print("end", rank, flush=True)
"""


def test_all_steps_followed_side_by_side_then_printed_step_by_step(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    home = tmp_path / "home"
    assert trainjob(home, "run", "-f", str(job)).returncode == 0

    followed = trainjob(home, "logs", "chatty", "--all-steps", "-f")
    assert followed.returncode == 0, followed.stderr
    lines = followed.stdout.splitlines()
    assert sorted(lines) == [
        "[node-0] end 0",
        "[node-0] start 0",
        "[node-1] end 1",
        "[node-1] start 1",
    ]
    assert {lines[0], lines[1]} == {"[node-0] start 0", "[node-1] start 1"}, lines

    again = trainjob(home, "logs", "chatty", "--all-steps")
    assert again.stdout.splitlines() == [
        "[node-0] start 0",
        "[node-0] end 0",
        "[node-1] start 1",
        "[node-1] end 1",
    ]

    both = trainjob(home, "logs", "chatty", "--all-steps", "--step", "node-1")
    assert both.returncode == 1
    assert both.stderr.strip() == (
        "error: --step and --all-steps select different logs: use one of them"
    )
