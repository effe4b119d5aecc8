"""Custom training code resumes after a JobSet restart on the local backend.

A runtime with ``failurePolicy.maxRestarts`` runs a 2-node job whose code saves a checkpoint in
``$TRAINJOB_CHECKPOINT_DIR`` every step; rank 1 is SIGKILLed by the test mid-run (as the kernel's
OOM killer would), the JobSet restarts, the new attempt sees ``$TRAINJOB_RESTART_ATTEMPT`` 1 and
the checkpoint, and finishes from there: fewer steps than two full runs. The checkpoint directory
is kept after ``delete``.
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest
from tests.e2e.cli import trainjob

from trainjob.local import LocalExecutor

pytestmark = pytest.mark.e2e

RUNTIME = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: restartable
spec:
  mlPolicy:
    numNodes: 2
  template:
    spec:
      failurePolicy:
        maxRestarts: 2
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels:
                trainer.kubeflow.org/trainjob-ancestor-step: trainer
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: python:3.12
"""

TRAIN = """
import json, os, pathlib, time
rank = int(os.environ["JOB_COMPLETION_INDEX"])
attempt = int(os.environ["TRAINJOB_RESTART_ATTEMPT"])
ckpt = pathlib.Path(os.environ["TRAINJOB_CHECKPOINT_DIR"]) / f"rank-{rank}.json"
step = 0
if ckpt.exists():
    step = json.loads(ckpt.read_text())["step"]
    print(f"attempt {attempt}: resumed from checkpoint at step {step}", flush=True)
while step < 40:
    step += 1
    tmp = ckpt.with_suffix(".tmp")
    tmp.write_text(json.dumps({"step": step}))
    os.replace(tmp, ckpt)
    print(f"attempt {attempt} step {step}", flush=True)
    time.sleep(0.25)  # 35 steps (~9 s) left after step 5: the test's SIGKILL comes first
print("done", flush=True)
"""

JOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: resumer
spec:
  runtimeRef:
    name: restartable
    kind: TrainingRuntime
  trainer:
    command: ["python", "train.py"]
"""


def test_custom_code_resumes_from_its_checkpoint_dir_after_a_sigkill(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "runtime.yaml").write_text(RUNTIME)
    (tmp_path / "job.yaml").write_text(JOB)
    run = trainjob(
        home, "run", "-f", str(tmp_path / "job.yaml"), "-f", str(tmp_path / "runtime.yaml")
    )
    assert run.returncode == 0, run.stderr

    ex = LocalExecutor(home)
    deadline = time.monotonic() + 90
    while True:  # wait for rank 1 to be a few steps in, then SIGKILL it
        assert time.monotonic() < deadline, "rank 1 never reached step 5"
        log = Path(ex.log_path("resumer", "default", "node", 1))
        if log.is_file() and "attempt 0 step 5" in log.read_text():
            break
        time.sleep(0.1)
    pod = next(p for p in ex.store.pods("default", "resumer") if p.idx == 1)
    assert pod.pid
    os.kill(pod.pid, signal.SIGKILL)

    state = ex.wait("resumer", "default", frozenset({"Complete", "Failed"}), timeout=120)
    assert state.phase == "Complete", (state.reason, state.message)
    assert state.restarts == 1
    logs = trainjob(home, "logs", "resumer", "--step", "node-1")
    resumed = re.search(r"attempt 1: resumed from checkpoint at step (\d+)", logs.stdout)
    assert resumed, logs.stdout
    n = int(resumed.group(1))
    assert n >= 5
    steps_run = logs.stdout.count("attempt 1 step ")
    assert steps_run == 40 - n < 40, "the second attempt went on, not from step 0"

    ckpt_dir = Path(
        dict((o.name, o.location) for o in ex.outputs("resumer", "default"))["checkpoints"]
    )
    assert (ckpt_dir / "rank-1.json").is_file()
    assert trainjob(home, "delete", "resumer").returncode == 0
    assert (ckpt_dir / "rank-1.json").read_text() == '{"step": 40}', "kept after delete"
