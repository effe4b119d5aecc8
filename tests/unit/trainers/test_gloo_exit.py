"""trainers/gloo_exit: wait at exit until torch's gloo worker threads are idle, and no longer.

The race it closes (torch 2.15 aborting a finished DDP run at interpreter exit) cannot be made to
happen on demand, so these tests pin the waiting rule itself: against a scripted ``/proc/self/task``
whose thread states change as the function sleeps, and against a real thread of this process
named as torch names its gloo workers.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from trainjob.trainers import gloo_exit


def _task(root: Path, tid: int, name: str, state: str, switches: int = 0) -> None:
    d = root / str(tid)
    d.mkdir(exist_ok=True)
    (d / "status").write_text(
        f"Name:\t{name}\nUmask:\t0022\nState:\t{state} (sleeping)\nTgid:\t1\n"
        f"voluntary_ctxt_switches:\t{switches}\nnonvoluntary_ctxt_switches:\t{switches % 3}\n"
    )


Look = tuple[tuple[str, int], ...]
"""What the gloo threads show at one check: (state, context switches) per thread."""


class ScriptedProc:
    """A fake task folder whose gloo threads show the next scripted look at each sleep."""

    def __init__(self, root: Path, script: list[Look]):
        self.root, self.script, self.sleeps = root, script, 0
        _task(root, 1, "python", "R")
        _task(root, 7, "gloo_tcp_loop", "S")  # the transport loop is not a worker
        self._apply()

    def _apply(self) -> None:
        look = self.script[min(self.sleeps, len(self.script) - 1)]
        for i, (state, switches) in enumerate(look):
            _task(self.root, 100 + i, "pt_gloo_runloop", state, switches)

    def sleep(self, _seconds: float) -> None:
        self.sleeps += 1
        self._apply()


@pytest.fixture
def scripted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[list[Look]], ScriptedProc]:
    def make(script: list[Look]) -> ScriptedProc:
        proc = ScriptedProc(tmp_path, script)
        monkeypatch.setattr(time, "sleep", proc.sleep)
        return proc

    return make


IDLE: Look = (("S", 40), ("S", 52))


def test_no_gloo_threads_returns_without_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    _task(tmp_path, 1, "python", "R")
    _task(tmp_path, 2, "gloo_tcp_loop", "R")
    gloo_exit.settle_gloo_workers(tasks=str(tmp_path))
    assert slept == []


def test_idle_workers_need_three_unchanged_looks_after_the_first(
    scripted: Callable[[list[Look]], ScriptedProc],
) -> None:
    proc = scripted([IDLE])
    gloo_exit.settle_gloo_workers(tasks=str(proc.root))
    assert proc.sleeps == 4


def test_a_runnable_worker_restarts_the_count_until_it_sleeps(
    scripted: Callable[[list[Look]], ScriptedProc],
) -> None:
    # one worker still holds a finished collective (runnable), then goes back to waiting
    busy: Look = (("S", 40), ("R", 53))
    after: Look = (("S", 40), ("S", 54))
    proc = scripted([IDLE, IDLE, busy, after])
    gloo_exit.settle_gloo_workers(tasks=str(proc.root))
    # quiet at look 1, busy at 2, changed at 3, unchanged at 4, 5 and 6
    assert proc.sleeps == 7


def test_a_worker_that_woke_and_slept_again_between_looks_is_not_idle(
    scripted: Callable[[list[Look]], ScriptedProc],
) -> None:
    # asleep at every look, but woken (for the GIL) in between: its switch count moves
    woke = [(("S", 40), ("S", 52 + 2 * i)) for i in range(5)]
    proc = scripted([*woke, woke[-1]])
    gloo_exit.settle_gloo_workers(tasks=str(proc.root))
    assert proc.sleeps == 5 + 3


def test_a_worker_that_never_goes_idle_is_given_up_on_after_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _task(tmp_path, 100, "pt_gloo_runloop", "R")
    checks = 0
    real_sleep = time.sleep

    def count(seconds: float) -> None:
        nonlocal checks
        checks += 1
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", count)
    start = time.monotonic()
    gloo_exit.settle_gloo_workers(timeout=0.1, tasks=str(tmp_path))
    assert time.monotonic() - start >= 0.1
    assert checks >= 2


def test_a_thread_that_ends_while_read_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    (tmp_path / "55").mkdir()  # listed, but its status is gone: the thread ended
    gloo_exit.settle_gloo_workers(tasks=str(tmp_path))
    assert slept == []


def test_no_proc_returns_at_once(tmp_path: Path) -> None:
    gloo_exit.settle_gloo_workers(tasks=str(tmp_path / "absent"))


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_a_real_named_worker_blocked_on_a_condition_counts_as_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    named, release = threading.Event(), threading.Event()

    def worker() -> None:
        assert libc.prctl(15, b"pt_gloo_runloop", 0, 0, 0) == 0  # PR_SET_NAME
        named.set()
        release.wait()  # blocked in the kernel, like a gloo worker waiting for work

    t = threading.Thread(target=worker, daemon=True)
    t.start()
    named.wait()
    names = [
        (p / "comm").read_text().strip()
        for p in Path("/proc/self/task").iterdir()
        if (p / "comm").exists()
    ]
    assert "pt_gloo_runloop" in names
    slept: list[float] = []
    real_sleep = time.sleep

    def sleep(s: float) -> None:
        slept.append(s)
        real_sleep(s)

    monkeypatch.setattr(time, "sleep", sleep)
    try:
        gloo_exit.settle_gloo_workers(timeout=5.0)
    finally:
        release.set()
        t.join()
    assert 4 <= len(slept) < 100  # found it, saw it idle and unchanged, did not wait the timeout
