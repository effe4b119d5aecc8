"""Porting: a script written for the Kubeflow SDK runs on trainjob with only its import changed.

``kubeflow_sdk_script.py`` uses the documented ``kubeflow.trainer`` API (TrainerClient(),
list_runtimes, get_runtime, train with a 2-node CustomTrainer, wait_for_job_status, steps,
get_job_logs(follow=True), list_jobs, delete_job). The test rewrites its one import line and runs
it in a fresh process with no cluster configured, so the default backend is local.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

SCRIPT = Path(__file__).with_name("kubeflow_sdk_script.py")


def port(text: str) -> str:
    lines = text.splitlines(keepends=True)
    imports = [i for i, ln in enumerate(lines) if ln.startswith("from kubeflow.trainer import ")]
    assert len(imports) == 1, "the script must have exactly one kubeflow import line"
    i = imports[0]
    lines[i] = lines[i].replace("from kubeflow.trainer import ", "from trainjob import ")
    return "".join(lines)


def test_only_the_import_line_changes():
    before, after = SCRIPT.read_text().splitlines(), port(SCRIPT.read_text()).splitlines()
    assert [(a, b) for a, b in zip(before, after, strict=True) if a != b] == [
        (
            "from kubeflow.trainer import CustomTrainer, TrainerClient",
            "from trainjob import CustomTrainer, TrainerClient",
        ),
    ]


def test_kubeflow_script_runs_on_trainjob(tmp_path):
    script = tmp_path / "train_job.py"
    script.write_text(port(SCRIPT.read_text()))
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("KUBECONFIG", "TRAINJOB_BACKEND", "KUBERNETES_SERVICE_HOST")
    }
    env.update(HOME=str(home), TRAINJOB_HOME=str(tmp_path / "trainjob-home"))
    out = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "Runtime: torch-distributed, framework: torch" in text
    name = re.search(r"TrainJob: ([a-z][0-9a-f]{11})\n", text)
    assert name, text
    assert "Step: node-0, Status: Succeeded, Devices: cpu x 1" in text
    assert "Step: node-1, Status: Succeeded, Devices: cpu x 1" in text
    assert re.search(r"epoch 2 rank 0/2 loss \d+\.\d+", text)
    assert f"Job: {name.group(1)}, status: Complete, nodes: 2" in text
    assert text.rstrip().endswith("done")
