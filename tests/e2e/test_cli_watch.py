"""``trainjob get jobs -w``: the table, then a job's row again each time its status changes.

A real 2-node job runs on the local backend while ``get jobs -w`` watches it; Ctrl-C (SIGINT)
ends the watch quietly, as kubectl's does.
"""

from __future__ import annotations

import itertools
import signal
import subprocess
import time
from pathlib import Path

import pytest
from tests.e2e.cli import CLI, local_env, trainjob

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
    command: [python, -c, "import time; time.sleep(10); print('done')"]
"""


def test_get_jobs_watch_prints_each_change_until_ctrl_c(tmp_path: Path) -> None:
    home = tmp_path / "home"
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    ran = trainjob(home, "run", "-f", str(job))
    assert ran.returncode == 0, ran.stderr
    watch = subprocess.Popen(
        [*CLI, "get", "jobs", "-w"],
        env=local_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            table = trainjob(home, "get", "jobs", "watched")
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
    assert rows[0] == ["NAME", "STATUS", "RUNTIME", "NODES", "RESTARTS", "PROGRESS", "ETA", "AGE"]
    statuses = [r[1] for r in rows[1:]]
    assert statuses[-1] == "Complete", out
    assert len(statuses) >= 2 and statuses[0] in ("Created", "Running"), out
    assert all(a != b for a, b in itertools.pairwise(statuses)), out  # changes only
    assert "Traceback" not in err
