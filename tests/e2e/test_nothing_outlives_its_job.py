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
import socket
import time
from pathlib import Path

import pytest
from tests.e2e import local_jobs as L
from tests.e2e.hostile_jobs import POD, ROLES

from trainjob.local import LocalExecutor
from trainjob.local.state import procs, ptree

pytestmark = pytest.mark.e2e
TIMEOUT = 60.0
# POD that says where its status endpoint is, and exits 0 (leaving its daemon and stopped child
# running) once the test has seen every process start: the file $GO exists.
URL_LINE = 'print("URL", os.environ["KUBEFLOW_TRAINER_SERVER_URL"], flush=True)\n'
SUCCEEDING_POD = (
    POD.replace('print("PID pod"', URL_LINE + 'print("PID pod"', 1).rsplit("time.sleep(600)", 1)[0]
    + "while not os.path.exists(os.environ['GO']):\n    time.sleep(0.1)\n"
)
assert SUCCEEDING_POD.count("time.sleep(600)") == 2 and "KUBEFLOW_TRAINER" in SUCCEEDING_POD


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


def _status_port(ex: LocalExecutor, name: str) -> int:
    url = next(line.split()[1] for line in ex.logs(name, index=0) if line.startswith("URL "))
    return int(url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


def _serving(port: int) -> bool:
    """Whether something listens on loopback ``port`` (the job's status endpoint)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=10).close()
    except ConnectionRefusedError:
        return False
    except ConnectionResetError:
        return True  # accepted, then closed: a server shutting down
    return True


def test_complete_is_written_once_every_process_and_the_status_endpoint_are_gone(
    ex: LocalExecutor, tmp_path: Path
) -> None:
    """Both pods exit 0 and leave a daemon and a stopped child behind: the moment the job reads
    Complete, none of them runs and its status endpoint is closed (the supervisor ends them
    first, then writes Complete; before, the endpoint still answered after Complete)."""
    go = tmp_path / "go"
    job = L.trainjob("done", SUCCEEDING_POD, nodes=2, env={"GO": str(go)})
    ex.submit(job, cwd=str(tmp_path))
    found, uid = _started(ex, "done"), _uid(ex, "done")
    port = _status_port(ex, "done")
    assert _serving(port), "the status endpoint serves while the job runs"
    go.touch()
    # looked at the moment Complete can be read (a read each millisecond): the supervisor that
    # wrote Complete first and ended them after was seen with them still there
    state = ex.wait("done", phases={"Complete", "Failed"}, timeout=TIMEOUT, poll=0.001)
    running = [pid for pid, token in found.items() if procs.start_time(pid) == token]
    serving = _serving(port)
    assert running == [], "no process of the job runs once it is Complete"
    assert not serving, "the status endpoint is closed once the job is Complete"
    assert _survivors(found, uid) == []
    assert state.phase == "Complete", state.message


def test_delete_ends_every_process_of_the_job(ex: LocalExecutor, tmp_path: Path) -> None:
    ex.submit(L.trainjob("gone", POD, nodes=2), cwd=str(tmp_path))
    found, uid = _started(ex, "gone"), _uid(ex, "gone")
    ex.delete("gone")
    assert _survivors(found, uid) == []


def test_the_deadline_ends_every_process_of_the_job(ex: LocalExecutor, tmp_path: Path) -> None:
    # 20 s: every process of both pods must have started (and printed its pid) before the
    # deadline ends them; a loaded machine took seconds to start each pod's python processes
    ex.submit(L.trainjob("late", POD, nodes=2, activeDeadlineSeconds=20), cwd=str(tmp_path))
    found, uid = _started(ex, "late"), _uid(ex, "late")
    state = ex.wait("late", phases={"Failed"}, timeout=TIMEOUT, poll=0.001)
    assert _survivors(found, uid) == []
    assert state.reason == "DeadlineExceeded"


def test_a_failed_pod_ends_every_process_of_the_job(ex: LocalExecutor, tmp_path: Path) -> None:
    job = L.trainjob("broken", POD, nodes=2, env={"FAIL_AFTER": "3"})
    ex.submit(job, cwd=str(tmp_path))
    found, uid = _started(ex, "broken"), _uid(ex, "broken")
    state = ex.wait("broken", phases={"Failed"}, timeout=TIMEOUT, poll=0.001)
    assert state.reason == "FailedJobs"
    assert _survivors(found, uid) == []


def test_a_killed_supervisor_leaves_nothing_running(ex: LocalExecutor, tmp_path: Path) -> None:
    ex.submit(L.trainjob("orphaned", POD, nodes=2), cwd=str(tmp_path))
    found, uid = _started(ex, "orphaned"), _uid(ex, "orphaned")
    row = ex.store.job("default", "orphaned")
    assert row is not None and row.supervisor_pid
    os.kill(row.supervisor_pid, signal.SIGKILL)
    assert procs.wait_gone(row.supervisor_pid, row.supervisor_start, timeout=60)
    state = ex.state("orphaned")  # a reader notices the dead supervisor and ends its processes
    assert (state.phase, state.reason) == ("Failed", "SupervisorDied")
    assert _survivors(found, uid) == []
    ex.delete("orphaned")
