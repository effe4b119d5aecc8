"""``trainjob run --workdir`` and ``Workspace(...)`` on the local backend, for real: a folder
with ``train.py`` and a package ``mylib/`` runs as a 2-node job whose code imports ``mylib``;
an edit after submit changes nothing the job runs; a second job of the same folder reuses the
snapshot, which goes with the last job naming it; a bad folder is refused, in one line, before
anything runs."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.e2e.cli import trainjob

from trainjob import CustomTrainer, LocalProcessBackendConfig, TrainerClient, Workspace
from trainjob.local import LocalExecutor
from trainjob.workspace import names

pytestmark = pytest.mark.e2e

JOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {name}
spec:
  suspend: {suspend}
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 2
    command: ["python", "train.py"]
"""


def project(root: Path) -> Path:
    (root / "mylib").mkdir(parents=True)
    (root / "mylib" / "__init__.py").write_text("GREETING = 'packed at submit'\n")
    (root / "train.py").write_text(
        "import os, mylib\n"
        "print('rank', os.environ['PET_NODE_RANK'], mylib.GREETING, 'in', os.getcwd())\n"
    )
    (root / ".gitignore").write_text("data/\n")
    (root / "data").mkdir()
    (root / "data" / "huge.bin").write_bytes(b"\0" * 4096)
    return root


def job_file(tmp_path: Path, name: str, suspend: bool = False) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(JOB.format(name=name, suspend=str(suspend).lower()))
    return path


def copies(home: Path) -> list[str]:
    base = home / "workspaces"
    return sorted(p for p in os.listdir(base) if not p.startswith(".")) if base.exists() else []


def test_a_two_node_job_imports_its_folder_as_it_was_at_submit_and_shares_the_snapshot(
    tmp_path: Path,
) -> None:
    home, src = tmp_path / "home", project(tmp_path / "proj")
    first = trainjob(home, "run", "-f", str(job_file(tmp_path, "ws-a", suspend=True)),
                     "--workdir", str(src))  # fmt: skip
    assert first.returncode == 0, first.stderr
    (src / "mylib" / "__init__.py").write_text("GREETING = 'edited after submit'\n")
    assert trainjob(home, "resume", "ws-a").returncode == 0
    LocalExecutor(home).wait("ws-a", "default", timeout=240)
    [copy] = copies(home)
    for step in ("node-0", "node-1"):
        rank = step[-1]
        log = trainjob(home, "logs", "ws-a", "--step", step).stdout
        assert f"rank {rank} packed at submit in {home / 'workspaces' / copy}" in log, log
    described = trainjob(home, "describe", "job", "ws-a").stdout
    assert f"Workspace:  sha256:{copy} ({src})" in described

    # The folder as edited is another snapshot; the same content again is the same one.
    (src / "mylib" / "__init__.py").write_text("GREETING = 'packed at submit'\n")
    second = trainjob(home, "run", "-f", str(job_file(tmp_path, "ws-b")), "--workdir", str(src),
                      "--wait")  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert copies(home) == [copy]
    assert "data" not in os.listdir(home / "workspaces" / copy)  # .gitignore'd

    assert trainjob(home, "delete", "ws-a").returncode == 0
    assert copies(home) == [copy]  # ws-b still names it
    assert trainjob(home, "delete", "ws-b").returncode == 0
    assert copies(home) == []


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        pytest.param(lambda p: None, "no such folder", id="a missing folder"),
        pytest.param(
            lambda p: (project(p), (p / "mylib" / "keys").symlink_to("/etc/hostname")),
            "mylib/keys: a symlink out of the folder (to /etc/hostname)",
            id="a symlink out of it",
        ),
        pytest.param(
            lambda p: (project(p), (p / "weights.bin").write_bytes(b"\0" * 3000)),
            "3.1 KiB is over the limit of 2.0 KiB (largest: weights.bin 2.9 KiB, ",
            id="too large",
        ),
    ],
)
def test_a_bad_folder_is_refused_in_one_line_before_anything_runs(
    tmp_path: Path, make: Callable[[Path], object], expected: str
) -> None:
    home, src = tmp_path / "home", tmp_path / "proj"
    make(src)
    os.environ[names.ENV_LIMIT] = "2Ki"
    try:
        done = trainjob(home, "run", "-f", str(job_file(tmp_path, "bad")), "--workdir", str(src))
    finally:
        del os.environ[names.ENV_LIMIT]
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: workspace {src}: ") and expected in line, line
    assert "Traceback" not in done.stderr
    assert "bad" not in trainjob(home, "get", "jobs").stdout
    assert copies(home) == []


def test_a_custom_trainers_function_imports_the_workspaces_modules(tmp_path: Path) -> None:
    src = project(tmp_path / "proj")

    def train() -> None:
        import os

        import mylib  # type: ignore[import-not-found]

        print("rank", os.environ["PET_NODE_RANK"], mylib.GREETING)

    os.environ["TRAINJOB_HOME"] = str(tmp_path / "home")
    try:
        client = TrainerClient(LocalProcessBackendConfig())
        name = client.train(
            runtime="torch-distributed",
            trainer=CustomTrainer(func=train, num_nodes=2),
            options=[Workspace(str(src))],
        )
        job = client.wait_for_job_status(name, timeout=240)
        logs = "".join(client.get_job_logs(name))
        other = "".join(client.get_job_logs(name, step="node-1"))
    finally:
        del os.environ["TRAINJOB_HOME"]
    assert job.status == "Complete", logs
    assert "rank 0 packed at submit" in logs
    assert "rank 1 packed at submit" in other


SWEEP = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: OptimizationJob
metadata:
  name: ws-sweep
spec:
  objectives:
  - metric: loss
  searchAlgorithm:
    grid: {}
  numTrials: 2
  parallelTrials: 2
  parameters:
  - name: scale
    searchSpace:
      categorical:
        choices: ["1", "3"]
  trainJobTemplate:
    spec:
      runtimeRef:
        name: torch-distributed
      trainer:
        command: ["python", "sweep_train.py", "{{.scale}}"]
"""


def test_a_sweep_with_workdir_runs_every_trial_on_the_folder_as_it_was_at_submit(
    tmp_path: Path,
) -> None:
    """``run -f sweep.yaml --workdir DIR``: every trial imports the folder's ``mylib`` from one
    shared copy, edited after submit or not; the copy stays while the sweep is stored."""
    home, src = tmp_path / "home", project(tmp_path / "proj")
    (src / "sweep_train.py").write_text(
        "import sys, mylib, trainjob\n"
        "print(mylib.GREETING)\n"
        "trainjob.update_trainjob_status(metrics={'loss': float(sys.argv[1])})\n"
    )
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP)
    ran = trainjob(home, "run", "-f", str(path), "--workdir", str(src))
    assert ran.returncode == 0, ran.stderr
    (src / "mylib" / "__init__.py").write_text("GREETING = 'edited after submit'\n")
    done = trainjob(home, "run", "-f", str(path), "--wait")  # already exists: refused
    assert done.returncode != 0
    LocalExecutor(home).wait("ws-sweep-0", "default", timeout=240)
    LocalExecutor(home).wait("ws-sweep-1", "default", timeout=240)
    [copy] = copies(home)
    for trial in ("ws-sweep-0", "ws-sweep-1"):
        assert "packed at submit" in trainjob(home, "logs", trial).stdout
        described = trainjob(home, "describe", "job", trial).stdout
        assert f"Workspace:  sha256:{copy} ({src})" in described
    assert copies(home) == [copy]
