"""``trainjob get jobs -w``: the table, then a job's row again each time its status changes.

A real 2-node job runs on the local backend while ``get jobs -w`` watches it; Ctrl-C (SIGINT)
ends the watch quietly, as kubectl's does.
"""

from __future__ import annotations

import itertools
import queue
import signal
import subprocess
import threading
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
    command: [python, -c, "{code}"]
"""
# The job runs until the test has seen the watch's first row (a file appears), so that row is
# Created or Running however slowly the watch starts under load (a fixed 10 s job could end first).
WAIT = "import os, time\\nwhile not os.path.exists({go!r}): time.sleep(0.1)\\nprint('done')"


def test_get_jobs_watch_prints_each_change_until_ctrl_c(tmp_path: Path) -> None:
    home = tmp_path / "home"
    go = tmp_path / "go"
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(code=WAIT.format(go=str(go))))
    ran = trainjob(home, "run", "-f", str(job))
    assert ran.returncode == 0, ran.stderr
    watch = subprocess.Popen(
        [*CLI, "get", "jobs", "-w"],
        env=local_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []

    def read() -> None:
        assert watch.stdout is not None
        for line in watch.stdout:
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # Ctrl-C once the watch itself printed the Complete row (not after a fixed sleep: a
        # loaded machine's watch can look later than 1.5 s after the job ended).
        deadline = time.monotonic() + 240
        while not (len(seen) > 1 and seen[-1].split()[1:2] == ["Complete"]):
            left = deadline - time.monotonic()
            assert left > 0, f"no Complete row from the watch in 240 s; it printed: {seen}"
            try:
                seen.append(lines.get(timeout=min(left, 1.0)))
            except queue.Empty:
                continue
            if len(seen) == 2:
                go.touch()  # the first row came: the job may end
        watch.send_signal(signal.SIGINT)
        _, err = watch.communicate(timeout=60)
        reader.join(timeout=60)
        while not lines.empty():
            seen.append(lines.get())
        out = "".join(seen)
    finally:
        go.touch()
        watch.kill()
    assert watch.returncode == 0, err
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["NAME", "STATUS", "RUNTIME", "NODES", "RESTARTS", "PROGRESS", "ETA", "AGE"]
    statuses = [r[1] for r in rows[1:]]
    assert statuses[-1] == "Complete", out
    assert len(statuses) >= 2 and statuses[0] in ("Created", "Running"), out
    assert all(a != b for a, b in itertools.pairwise(statuses)), out  # changes only
    assert "Traceback" not in err
