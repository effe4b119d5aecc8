"""A job's outputs outlive it: ``delete`` and ``run --replace`` keep them, ``--purge`` removes them.

A runtime shaped as the torchtune ones (a ``volumeClaimPolicies`` volume at ``/workspace``, an
``output_dir=`` argument) runs a one-line python trainer on the local backend, through the CLI as a
user types it; the SDK's ``get_job`` shows the same locations.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.cli import trainjob

pytestmark = pytest.mark.e2e

RUNTIME = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: keeps-output
spec:
  mlPolicy:
    numNodes: 1
  template:
    spec:
      volumeClaimPolicies:
        - templates:
            - metadata:
                name: initializer
              spec:
                accessModes: ["ReadWriteOnce"]
                resources:
                  requests:
                    storage: 1Gi
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
                      volumeMounts:
                        - mountPath: /workspace
                          name: initializer
"""

JOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: keeper
spec:
  runtimeRef:
    name: keeps-output
    kind: TrainingRuntime
  trainer:
    command:
      - python
      - -c
      - |
        import sys, pathlib
        out = pathlib.Path(sys.argv[1].split("=", 1)[1]); out.mkdir(parents=True, exist_ok=True)
        (out / "adapter.txt").write_text(sys.argv[2])
        print("wrote", out)
    args: ["output_dir=/workspace/output", "RUN"]
"""


def _output_dir(home: Path, name: str) -> Path:
    described = trainjob(home, "describe", "job", name)
    assert described.returncode == 0, described.stderr
    lines = [ln for ln in described.stdout.splitlines() if ln.startswith("Output:")]
    assert len(lines) == 1, described.stdout
    location = lines[0].split(":", 1)[1].strip().split("  (")[0]
    assert "(output_dir of node)" in lines[0]
    return Path(location)


def test_delete_and_replace_keep_outputs_and_purge_removes_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "runtime.yaml").write_text(RUNTIME)
    files = ["-f", str(tmp_path / "job.yaml"), "-f", str(tmp_path / "runtime.yaml")]
    (tmp_path / "job.yaml").write_text(JOB.replace('"RUN"', '"first"'))

    first = trainjob(home, "run", *files, "--wait")
    assert first.returncode == 0, first.stderr
    out1 = _output_dir(home, "keeper")
    assert (out1 / "adapter.txt").read_text() == "first"
    assert out1.is_relative_to(home / "outputs" / "default" / "keeper")

    # run --replace: the old job goes, its output stays apart from the new run's
    (tmp_path / "job.yaml").write_text(JOB.replace('"RUN"', '"second"'))
    second = trainjob(home, "run", *files, "--replace", "--wait")
    assert second.returncode == 0, second.stderr
    run1 = out1.parent.parent  # RUN/VOLUME/output: delete names the run's folder
    assert f"outputs kept in {run1} (delete --purge removes them)" in second.stderr
    out2 = _output_dir(home, "keeper")
    assert out2 != out1
    assert (out1 / "adapter.txt").read_text() == "first", "the replaced run's output is kept"
    assert (out2 / "adapter.txt").read_text() == "second"

    from trainjob import LocalProcessBackendConfig, TrainerClient

    job = TrainerClient(LocalProcessBackendConfig(home=str(home))).get_job("keeper")
    assert job.outputs["output_dir"] == str(out2)
    assert job.outputs["initializer"] == str(out2.parent)

    deleted = trainjob(home, "delete", "keeper")
    assert deleted.returncode == 0, deleted.stderr
    assert "delete --purge" in deleted.stderr
    assert (out2 / "adapter.txt").is_file(), "delete keeps the output"
    assert not (home / "jobs" / "default" / "keeper").exists(), "the scratch is gone"

    # --purge: says what it removes, then removes only this run's outputs
    third = trainjob(home, "run", *files, "--wait")
    assert third.returncode == 0, third.stderr
    out3 = _output_dir(home, "keeper")
    purged = trainjob(home, "delete", "keeper", "--purge")
    assert purged.returncode == 0, purged.stderr
    assert f"removing {out3.parent}" in purged.stderr
    assert not out3.parent.exists()
    assert (out1 / "adapter.txt").is_file() and (out2 / "adapter.txt").is_file()
