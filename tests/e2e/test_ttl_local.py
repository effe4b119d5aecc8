"""TTL after finish on the local backend: a finished TrainJob goes after its
``ttlSecondsAfterFinished`` (or its runtime's ``runPolicy`` default, which a TrainJob overrides),
its outputs stay; ``status.startTime``/``completionTime`` are set."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tests.e2e.cli import trainjob
from tests.e2e.test_outputs_kept import JOB, RUNTIME

pytestmark = pytest.mark.e2e


def test_a_finished_job_is_deleted_after_its_ttl_and_its_outputs_stay(tmp_path: Path) -> None:
    home = tmp_path / "home"
    runtime = RUNTIME.replace(
        "spec:\n  mlPolicy:", "spec:\n  runPolicy:\n    ttlSecondsAfterFinished: 8\n  mlPolicy:", 1
    )
    (tmp_path / "runtime.yaml").write_text(runtime)
    (tmp_path / "short.yaml").write_text(JOB.replace('"RUN"', '"short"'))
    kept = JOB.replace("name: keeper", "name: kept").replace(
        "spec:\n  runtimeRef:", "spec:\n  ttlSecondsAfterFinished: 3600\n  runtimeRef:", 1
    )
    (tmp_path / "kept.yaml").write_text(kept)
    rt = ["-f", str(tmp_path / "runtime.yaml")]
    for job in ("kept", "short"):
        ran = trainjob(home, "run", "-f", str(tmp_path / f"{job}.yaml"), *rt, "--wait")
        assert ran.returncode == 0, ran.stderr
    got = trainjob(home, "get", "jobs", "keeper", "-o", "json")
    assert got.returncode == 0, got.stderr
    status = json.loads(got.stdout)["status"]
    assert status["startTime"] <= status["completionTime"]
    output = home / "outputs" / "default" / "keeper"
    assert list(output.glob("*/initializer/output/adapter.txt"))

    from trainjob.core import times

    done = times.parse(status["completionTime"])
    assert done is not None
    time.sleep(max(0.0, done + 9 - time.time()))  # the runtime's 8 s ran out; kept's 3600 s not
    listed = trainjob(home, "get", "jobs")
    assert "keeper" not in listed.stdout and "kept" in listed.stdout, listed.stdout
    gone = trainjob(home, "describe", "job", "keeper")
    assert gone.returncode == 1 and "not found" in gone.stderr
    (adapter,) = output.glob("*/initializer/output/adapter.txt")
    assert adapter.read_text() == "short", "its outputs stay"
