"""Faults the red team found after the first hardening pass (issue 11, classes 1 and 5), with real
jobs on the local backend.

* A pod's daemon that cleared its environment (``Popen(env={...})``: no owner mark), left its
  session and ignores SIGTERM, outlived a SIGKILLed supervisor: the mark was all a reader had.
  The supervisor now records every process it knows in the job's directory, and a reader that
  finds it dead ends those too.
* ``logs -f`` of a log that never writes a newline (a progress bar redrawn with ``\\r``) held the
  whole log in memory and scanned it again for every 64 KiB read: it now comes in pieces of
  ``logfiles.LONGEST_LINE``, as ``logs`` without ``-f`` gives it.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from tests.e2e import local_jobs as L
from tests.e2e.hostile_jobs import CLEARED_POD, ROLES

from trainjob.local import LocalExecutor
from trainjob.local.state import home as homes
from trainjob.local.state import logfiles, procs, ptree

pytestmark = pytest.mark.e2e
TIMEOUT = 90.0


@pytest.fixture
def ex(tmp_path: Path) -> LocalExecutor:
    executor = LocalExecutor(tmp_path / "home")
    executor.apply_runtime(L.runtime())
    return executor


def _started(ex: LocalExecutor, name: str) -> dict[int, str]:
    """Every process of both pods that printed its pid (pid -> start time) but ``setsid``'s
    (it execs into the fork's middle process, which exits)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        found: dict[int, str] = {}
        roles = 0
        for index in (0, 1):
            for line in ex.logs(name, index=index):
                if line.startswith("PID "):
                    _, role, pid = line.split()
                    roles += 1
                    token = procs.start_time(int(pid))
                    if token and role != "setsid":
                        found[int(pid)] = token
        if roles == 2 * len(ROLES):
            return found
        time.sleep(0.1)
    raise AssertionError("the hostile job's processes did not all start")


def _without_mark(pids: dict[int, str]) -> list[int]:
    out = []
    for pid in pids:
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if ptree.OWNER_ENV.encode() not in env:
            out.append(pid)
    return out


def test_a_killed_supervisor_leaves_no_daemon_without_the_mark(
    ex: LocalExecutor, tmp_path: Path
) -> None:
    ex.submit(L.trainjob("unmarked", CLEARED_POD, nodes=2), cwd=str(tmp_path))
    found = _started(ex, "unmarked")
    unmarked = _without_mark(found)
    assert len(unmarked) == 2  # each pod's daemon: only the record knows it
    # the supervisor looks at its pods' trees every half second and records them: wait for the
    # record to name both daemons (a fixed 1.5 s could come before a loaded supervisor's look)
    record = homes.processes_file(ex.home, "default", "unmarked")
    deadline = time.monotonic() + TIMEOUT
    while not all(pid in (known := ptree.recorded(record)) for pid in unmarked):
        assert time.monotonic() < deadline, f"the record never named {unmarked}: {known}"
        time.sleep(0.1)
    row = ex.store.job("default", "unmarked")
    assert row is not None and row.supervisor_pid
    os.kill(row.supervisor_pid, signal.SIGKILL)
    assert procs.wait_gone(row.supervisor_pid, row.supervisor_start, timeout=60)
    state = ex.state("unmarked")  # a reader notices the dead supervisor and ends its processes
    assert (state.phase, state.reason) == ("Failed", "SupervisorDied")
    left = [pid for pid, token in found.items() if procs.start_time(pid) == token]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []
    ex.delete("unmarked")


def test_logs_follow_gives_a_line_without_end_in_pieces(ex: LocalExecutor, tmp_path: Path) -> None:
    ex.submit(L.trainjob("bar", "print('start')"), cwd=str(tmp_path))
    ex.wait("bar", timeout=TIMEOUT)
    piece = logfiles.LONGEST_LINE
    with ex.log_path("bar").open("ab") as f:  # 2.5 pieces of a progress bar, then its last line
        f.write(b"\r10%" * (piece * 5 // 8))
        f.write(b"\rdone\n")
    followed = list(ex.logs("bar", follow=True))
    assert followed[0] == "start"
    assert [len(line) for line in followed[1:]] == [piece, piece, piece // 2 + len("\rdone")]
    assert "".join(followed[1:]) == "\r10%" * (piece * 5 // 8) + "\rdone"
    assert followed[1:] == list(ex.logs("bar"))[1:]  # the same pieces as without -f
    ex.delete("bar")
