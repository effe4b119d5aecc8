"""Porting: a script written for the Kubeflow SDK runs on trainjob with only its imports changed.

``kubeflow_sdk_script.py`` uses the documented ``kubeflow.trainer`` API the way a notebook does:
``TrainerClient()``, ``list_runtimes``, ``get_runtime``, ``train`` of a 2-node CustomTrainer with
``func_args``, ``resources_per_node``, ``env`` and the ``Labels`` option (from
``kubeflow.trainer.options``), ``get_job_logs(follow=True)`` while it trains,
``wait_for_job_status`` with a callback, steps, ``get_job_logs(step="node-1")``, ``get_job``,
``get_job_events``, ``list_jobs(runtime=...)`` and ``delete_job``. (The script was also run on the
released ``kubeflow`` 0.5.0 package's own TrainerClient and options, over a stub cluster backend,
to check it is written against upstream's real API.) The test rewrites its two import lines to
``from trainjob import`` and runs it in a fresh process with no cluster configured, so the default
backend is local.
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


PORTED = re.compile(r"^from kubeflow\.trainer(\.options)? import ", re.M)


def port(text: str) -> str:
    """``from kubeflow.trainer[.options] import X`` -> ``from trainjob import X``."""
    return PORTED.sub("from trainjob import ", text)


def test_only_the_import_lines_change() -> None:
    before, after = SCRIPT.read_text().splitlines(), port(SCRIPT.read_text()).splitlines()
    assert [(a, b) for a, b in zip(before, after, strict=True) if a != b] == [
        (
            "from kubeflow.trainer import CustomTrainer, TrainerClient",
            "from trainjob import CustomTrainer, TrainerClient",
        ),
        ("from kubeflow.trainer.options import Labels", "from trainjob import Labels"),
    ]
    assert "kubeflow" not in "\n".join(ln for ln in after if not ln.startswith("#"))


TORCH_EXIT_ABORT = "terminate called without an active exception"


def test_kubeflow_script_runs_on_trainjob(tmp_path: Path) -> None:
    script = tmp_path / "train_job.py"
    script.write_text(port(SCRIPT.read_text()))
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("KUBECONFIG", "TRAINJOB_BACKEND", "KUBERNETES_SERVICE_HOST")
    }
    env["HOME"] = str(home)
    for attempt in range(3):
        # a fresh store per attempt: the script counts the jobs left after deleting its own
        store = tmp_path / f"trainjob-home-{attempt}"
        env["TRAINJOB_HOME"] = str(store)
        out = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if out.returncode == 0:
            break
        # torch 2.15's gloo worker threads can abort a finished DDP run at interpreter exit
        # (std::terminate; cause in src/trainjob/trainers/gloo_exit.py). The shipped script now
        # waits for them at exit, which closed it in the stress runs measured there; should it
        # still happen, only that failure, after the last epoch, is run again; anything else
        # fails the test now.
        said = out.stdout + out.stderr
        job = re.search(r"TrainJob: ([a-z][0-9a-f]{11})\n", out.stdout)
        logs = store / "jobs" / "default" / (job.group(1) if job else "?")
        pods = "".join(f.read_text() for f in sorted(logs.glob("logs/node-*.log")))
        assert TORCH_EXIT_ABORT in pods and "[node-0] epoch 2" in said, said + pods
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "Runtime: torch-distributed, framework: torch" in text
    assert "Default nodes: 1, type: TrainerType.CUSTOM_TRAINER" in text
    name = re.search(r"TrainJob: ([a-z][0-9a-f]{11})\n", text)
    assert name, text
    # followed while training: node-0's three epochs, streamed before the wait returned
    followed = re.findall(r"^\[node-0\] epoch (\d) rank 0/2 loss \d+\.\d+$", text, re.M)
    assert followed == ["0", "1", "2"], text
    assert text.index("[node-0] epoch 2") < text.index("Status: Complete, checks: True")
    assert "Step: node-0, Status: Succeeded, Devices: cpu x 1" in text
    assert "Step: node-1, Status: Succeeded, Devices: cpu x 1" in text
    assert re.search(r"^\[node-1\] epoch 2 rank 1/2 loss \d+\.\d+$", text, re.M)
    assert "Created: True, runtime: torch-distributed" in text
    assert "Event: JobSet AllJobsCompleted" in text, text
    assert f"Job: {name.group(1)}, status: Complete, nodes: 2" in text
    assert "Jobs left: 0" in text
    assert text.rstrip().endswith("done")
