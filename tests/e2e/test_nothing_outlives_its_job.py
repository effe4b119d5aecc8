"""Nothing a job started outlives it (issue 11, class 1): a 2-node job whose every process ignores
SIGTERM, each pod with a ``setsid`` child, a double-forked daemon below that and a SIGSTOPped
child, leaves no process behind after ``delete``, after its ``activeDeadlineSeconds``, after a
failure of its other pod, and after its supervisor was SIGKILLed.

Each process prints ``PID <role> <pid>`` to the pod's log; the test takes their start times at
once (so a recycled pid is never taken for a survivor) and, once the job is over, checks that none
of them runs and that no process carries the job's owner mark.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from tests.e2e import local_jobs as L
from tests.e2e.hostile_jobs import POD, ROLES

from trainjob.local import LocalExecutor, procs, ptree

pytestmark = pytest.mark.e2e
TIMEOUT = 60.0


@pytest.fixture
def ex(tmp_path: Path) -> LocalExecutor:
    executor = LocalExecutor(tmp_path / "home")
    executor.apply_runtime(L.runtime())
    return executor


def _started(ex: LocalExecutor, name: str) -> dict[int, str]:
    """Every process of both pods (pid -> start time), once all have printed their pid."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        found: dict[int, str] = {}
        roles: list[str] = []
        for index in (0, 1):
            for line in ex.logs(name, index=index):
                if line.startswith("PID "):
                    _, role, pid = line.split()
                    token = procs.start_time(int(pid))
                    roles.append(role)
                    if token is not None and role != "setsid":  # the fork's middle, gone
                        found[int(pid)] = token
        if len(roles) >= 2 * len(ROLES):
            assert sorted(roles) == sorted([*ROLES, *ROLES]), roles
            assert len(found) == 2 * (len(ROLES) - 1), f"some died early: {roles} {found}"
            return found
        time.sleep(0.1)
    raise AssertionError(f"the job's processes did not all start: {roles}")


def _survivors(found: dict[int, str], uid: str) -> list[str]:
    left = [f"pid {pid}" for pid, token in found.items() if procs.start_time(pid) == token]
    left += [f"pid {pid} (marked)" for pid in ptree.owned(f"{uid}/")]
    return left


def _uid(ex: LocalExecutor, name: str) -> str:
    uid = ex.get(name).metadata.uid
    assert uid
    return uid


def test_delete_ends_every_process_of_the_job(ex: LocalExecutor, tmp_path: Path) -> None:
    ex.submit(L.trainjob("gone", POD, nodes=2), cwd=str(tmp_path))
    found, uid = _started(ex, "gone"), _uid(ex, "gone")
    ex.delete("gone")
    assert _survivors(found, uid) == []


def test_the_deadline_ends_every_process_of_the_job(ex: LocalExecutor, tmp_path: Path) -> None:
    ex.submit(L.trainjob("late", POD, nodes=2, activeDeadlineSeconds=6), cwd=str(tmp_path))
    found, uid = _started(ex, "late"), _uid(ex, "late")
    state = ex.wait("late", phases={"Failed"}, timeout=TIMEOUT)
    assert state.reason == "DeadlineExceeded"
    assert _survivors(found, uid) == []


def test_a_failed_pod_ends_every_process_of_the_job(ex: LocalExecutor, tmp_path: Path) -> None:
    job = L.trainjob("broken", POD, nodes=2, env={"FAIL_AFTER": "3"})
    ex.submit(job, cwd=str(tmp_path))
    found, uid = _started(ex, "broken"), _uid(ex, "broken")
    state = ex.wait("broken", phases={"Failed"}, timeout=TIMEOUT)
    assert state.reason == "FailedJobs"
    assert _survivors(found, uid) == []


def test_a_killed_supervisor_leaves_nothing_running(ex: LocalExecutor, tmp_path: Path) -> None:
    ex.submit(L.trainjob("orphaned", POD, nodes=2), cwd=str(tmp_path))
    found, uid = _started(ex, "orphaned"), _uid(ex, "orphaned")
    row = ex.store.job("default", "orphaned")
    assert row is not None and row.supervisor_pid
    os.kill(row.supervisor_pid, signal.SIGKILL)
    procs.wait_gone(row.supervisor_pid, row.supervisor_start, timeout=10)
    state = ex.state("orphaned")  # a reader notices the dead supervisor and ends its processes
    assert (state.phase, state.reason) == ("Failed", "SupervisorDied")
    assert _survivors(found, uid) == []
    ex.delete("orphaned")
