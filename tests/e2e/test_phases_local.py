"""trainjob's phase conditions on the local backend, through suspend, resume, a restart and a
failure: what the supervisor writes into the TrainJob's ``status.conditions`` as its pods move
(``trainjob.api.phases``), read back the way every front end reads it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.e2e import local_jobs as L

from trainjob.api import phases
from trainjob.api.load import parse
from trainjob.api.trainer import ClusterTrainingRuntime, TrainJob
from trainjob.local import LocalExecutor

pytestmark = pytest.mark.e2e
TIMEOUT = 90.0

Seen = list[tuple[str, str]]


def _conditions(ex: LocalExecutor, name: str) -> list[dict[str, Any]]:
    return list((ex.state(name).trainjob.get("status") or {}).get("conditions") or ())


def _watch(ex: LocalExecutor, name: str, until: Callable[[], bool]) -> Seen:
    """The phase conditions (type, reason) the job carried, in order, each change once, polled
    until ``until()``."""
    seen: Seen = []
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        now = phases.current(_conditions(ex, name))
        entry = (now.type, now.reason) if now else ("-", "")
        if not seen or seen[-1] != entry:
            seen.append(entry)
        if until():
            return seen
        time.sleep(0.05)
    raise AssertionError(f"timed out; seen {seen}")


def test_queued_initializing_running_then_upstreams_conditions_only(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    # Each phase lasts seconds (a poll every 0.05 s must see it even when a loaded machine
    # starts the 2 trainer processes seconds apart: Running holds only while both run).
    ex.apply_runtime(L.runtime("with-init", initializer="import time; time.sleep(5)"))
    job = L.trainjob(
        "life", "import time; time.sleep(8)", runtime="with-init", nodes=2, suspend=True
    )
    ex.submit(job, cwd=str(tmp_path))
    queued = _watch(ex, "life", lambda: phases.current(_conditions(ex, "life")) is not None)
    assert queued[-1] == ("Queued", "Suspended"), queued
    ex.resume("life")
    seen = _watch(ex, "life", lambda: ex.state("life").finished)
    assert ex.state("life").phase == "Complete"
    kinds = [t for t, _ in seen]
    # Initializing (the initializer runs), then Running (both trainer pods): after a resume the
    # TrainJob already has a condition (Suspended=False), so Running is written
    assert ("Initializing", "InitializerRunning") in seen, seen
    assert ("Running", "AllTrainerPodsRunning") in seen, seen
    assert kinds.index("Initializing") < kinds.index("Running"), seen
    final = _conditions(ex, "life")
    assert [(k["type"], k["status"], k["reason"]) for k in final] == [
        ("Suspended", "False", "Resumed"),
        ("Complete", "True", "AllJobsCompleted"),
    ], "finished: upstream's conditions exactly"


def _warmup_runtime() -> ClusterTrainingRuntime:
    """node depends on a 1.5 s warmup job, so a restarted JobSet's trainer waits: Restarting
    holds long enough to be seen; restarted once."""

    def rj(name: str, code: str, **extra: Any) -> dict[str, Any]:
        labels = {L.ANCESTOR: "trainer"} if name == "node" else {}
        return {
            "name": name,
            **extra,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "node",
                                    "image": "python:3.11",
                                    "command": ["python", "-c", code],
                                    "env": [
                                        {
                                            "name": "ATTEMPT",
                                            "valueFrom": {"fieldRef": {"fieldPath": L.ATTEMPT}},
                                        }
                                    ],
                                }
                            ]
                        }
                    }
                },
            },
        }

    obj = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "ClusterTrainingRuntime",
            "metadata": {"name": "warmup"},
            "spec": {
                "mlPolicy": {"numNodes": 1},
                "template": {
                    "spec": {
                        "failurePolicy": {"maxRestarts": 1},
                        "replicatedJobs": [
                            # 4 s: Restarting holds while it runs again (a poll sees it)
                            rj("warmup", "import time; time.sleep(4)"),
                            rj(
                                "node",
                                "import time; time.sleep(1); raise SystemExit(3)",
                                dependsOn=[{"name": "warmup", "status": "Complete"}],
                            ),
                        ],
                    }
                },
            },
        }
    )
    assert isinstance(obj, ClusterTrainingRuntime)
    return obj


def test_restarting_after_a_jobset_restart_then_failed_without_a_phase(tmp_path: Path) -> None:
    ex = LocalExecutor(tmp_path / "home")
    ex.apply_runtime(_warmup_runtime())
    job = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "flaky"},
            "spec": {"runtimeRef": {"name": "warmup"}},
        }
    )
    assert isinstance(job, TrainJob)
    ex.submit(job, cwd=str(tmp_path))
    seen = _watch(ex, "flaky", lambda: ex.state("flaky").finished)
    s = ex.state("flaky")
    assert (s.phase, s.reason, s.restarts) == ("Failed", "ReachedMaxRestarts", 1)
    assert ("Restarting", "JobSetRestarting") in seen, seen
    # never suspended: Running is never written (the Kubeflow SDK reads Running only from a
    # TrainJob without conditions), and a finished job has no phase condition
    assert "Running" not in [t for t, _ in seen], seen
    assert seen[-1] == ("-", ""), seen
    assert [k["type"] for k in _conditions(ex, "flaky")] == ["Failed"]
