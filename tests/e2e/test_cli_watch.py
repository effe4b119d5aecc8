"""``trainjob get jobs -w``: the table, then a job's row again each time its status changes.

A real 2-node job runs on the local backend while ``get jobs -w`` watches it; Ctrl-C (SIGINT)
ends the watch quietly, as kubectl's does.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

JOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: watched
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 2
    command: [python, -c, "import time; time.sleep(3); print('done')"]
"""


def test_get_jobs_watch_prints_each_change_until_ctrl_c(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TRAINJOB_BACKEND")}
    env["TRAINJOB_HOME"] = str(tmp_path / "home")
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    cli = [sys.executable, "-m", "trainjob.cli"]
    ran = subprocess.run([*cli, "run", "-f", str(job)], env=env, capture_output=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    watch = subprocess.Popen(
        [*cli, "get", "jobs", "-w"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            table = subprocess.run(
                [*cli, "get", "jobs", "watched"], env=env, capture_output=True, text=True
            )
            if table.stdout.splitlines()[-1].split()[1] == "Complete":
                break
            time.sleep(0.5)
        time.sleep(1.5)  # the watch looks every 0.5 s
        watch.send_signal(signal.SIGINT)
        out, err = watch.communicate(timeout=30)
    finally:
        watch.kill()
    assert watch.returncode == 0, err
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["NAME", "STATUS", "RUNTIME", "NODES", "RESTARTS", "AGE"]
    statuses = [r[1] for r in rows[1:]]
    assert statuses[-1] == "Complete", out
    assert len(statuses) >= 2 and statuses[0] in ("Created", "Running"), out
    assert all(a != b for a, b in itertools.pairwise(statuses)), out  # changes only
    assert "Traceback" not in err
