"""A failed job says which step and rank failed first, how, and that rank's last log lines.

A 2-node job whose rank 1 prints a few lines (with terminal escapes and a bell in them) and is
then SIGKILLed while rank 0 still runs: the TrainJob's Failed message, ``describe``, ``run --wait``
and the SDK's ``wait_for_job_status`` all name node-1 (rank 1), SIGKILL and its last lines, and no
control character from the log reaches any of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.cli import trainjob

from trainjob import LocalProcessBackendConfig, TrainerClient

pytestmark = pytest.mark.e2e

TRAIN = r"""
import os, signal, sys, time
rank = int(os.environ["JOB_COMPLETION_INDEX"])
if rank == 1:
    for step in range(1, 8):
        print(f"step {step} loss {1.0 / step:.3f}", flush=True)
    print("\x1b[31mgoing down\x1b[0m with a bell \x07", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(60)
"""

JOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: crasher
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 2
    command: ["python", "train.py"]
"""


def test_a_failed_job_names_its_first_failed_rank_how_and_its_last_lines(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "job.yaml").write_text(JOB)
    run = trainjob(home, "run", "-f", str(tmp_path / "job.yaml"), "--wait")
    assert run.returncode == 1
    assert "crasher Failed" in run.stderr
    assert "node-1 (rank 1)" in run.stderr and "SIGKILL" in run.stderr
    assert "last lines of node-1's log:" in run.stderr and "step 7 loss 0.143" in run.stderr
    assert "Traceback" not in run.stderr

    described = trainjob(home, "describe", "job", "crasher")
    out = described.stdout
    failure = next(ln for ln in out.splitlines() if ln.startswith("Failure:"))
    assert "step node-1 (rank 1) failed first: exit code 137 (SIGKILL" in failure
    assert "step 7 loss 0.143" in out and "going down with a bell" in out
    message = next(ln for ln in out.splitlines() if ln.startswith("Message:"))
    assert "first failed: node-1 (rank 1)" in message and "SIGKILL" in message

    client = TrainerClient(LocalProcessBackendConfig(home=str(home)))
    with pytest.raises(RuntimeError) as caught:
        client.wait_for_job_status("crasher", timeout=30, polling_interval=1)
    said = str(caught.value)
    assert "node-1 (rank 1)" in said and "SIGKILL" in said and "step 7 loss 0.143" in said

    for text in (run.stderr, out, said):
        assert "\x1b" not in text and "\x07" not in text, "no control character reaches a message"
