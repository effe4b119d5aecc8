"""What ``get jobs``, ``describe`` and a job's outputs folder say of real local jobs, as a new
user reads them (issue 31's small things): NODES is the runtime's count when the TrainJob leaves
it to the runtime (not ``<default>``); a Failed job's describe says when it failed (``Failed:``),
not ``Completed:``, its status having no completionTime; a job that wrote nothing leaves no
empty ``checkpoints/`` (or run) folder under ``outputs/``; one that wrote a checkpoint keeps it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.cli import trainjob

pytestmark = pytest.mark.e2e

JOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: {name}}}
spec:
  runtimeRef: {{name: torch-distributed}}
  trainer:
    command: [python, -c, "{code}"]
"""


def run(home: Path, tmp: Path, name: str, code: str) -> str:
    (tmp / f"{name}.yaml").write_text(JOB.format(name=name, code=code))
    out = trainjob(home, "run", "-f", str(tmp / f"{name}.yaml"), "--wait")
    return out.stdout + out.stderr


def test_nodes_failed_and_empty_folders_as_a_user_reads_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run(home, tmp_path, "ok", "print('fine')")
    run(home, tmp_path, "bad", "raise SystemExit(3)")
    saves = "import os; open(os.environ['TRAINJOB_CHECKPOINT_DIR'] + '/step-1', 'w').write('x')"
    run(home, tmp_path, "saves", saves)

    rows = {r.split()[0]: r.split() for r in trainjob(home, "get", "jobs").stdout.splitlines()}
    assert rows["NAME"][3] == "NODES"
    assert [rows[n][1] for n in ("ok", "bad", "saves")] == ["Complete", "Failed", "Complete"]
    assert rows["ok"][3] == "1", rows["ok"]  # torch-distributed's mlPolicy.numNodes

    described = trainjob(home, "describe", "job", "bad").stdout
    fields = [ln.split(":", 1)[0] for ln in described.splitlines() if ":" in ln]
    assert "Failed" in fields and "Completed" not in fields, described
    got = trainjob(home, "get", "jobs", "bad", "-o", "yaml").stdout
    assert "completionTime" not in got
    assert "Completed:" in trainjob(home, "describe", "job", "ok").stdout

    outputs = home / "outputs" / "default"
    assert not (outputs / "ok").exists(), list(outputs.rglob("*"))
    assert not (outputs / "bad").exists(), list(outputs.rglob("*"))
    (kept,) = (outputs / "saves").glob("*/checkpoints/step-1")
    assert kept.read_text() == "x"
