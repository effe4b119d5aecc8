"""Every process a pod started, found and ended: nothing outlives its job.

Stopping a container's process group is not enough: torchrun puts its workers in sessions of
their own, and a ``setsid`` or double-forked child leaves the group (and its parent) behind. On a
cluster the container's cgroup holds them all; here three things do:

* **an owner mark**: every container process starts with ``TRAINJOB_OWNER=<job uid>/<pod>/
  <container>`` in its environment, which its children inherit whatever session they make, so
  ``/proc/<pid>/environ`` says whose a process is (:func:`owned`), even after the supervisor died;
* **a subreaper**: the supervisor is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so an orphan
  of a pod becomes the supervisor's child instead of init's, stays in its process tree
  (:func:`descendants`) and is reaped by it (:func:`reap_orphans`);
* **the tree, with start times**: a pod's descendants are looked up now and then and remembered
  by pid *and* start time, so a process that cleared its environment is still known, and a
  recycled pid is never signalled; the supervisor writes what it knows to its job's directory
  (:func:`record`), so a reader that finds it dead ends those too, not only what carries the mark.

:func:`end` stops processes as the kubelet stops a container: SIGTERM (with SIGCONT, so a stopped
process can act on it), the grace period, then SIGKILL. Linux only (``/proc``); elsewhere the
process group is all there is. Used by :mod:`trainjob.local.job.podrun`, the supervisor and the
executor (a job deleted, or whose supervisor died).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from trainjob.local.state import files

OWNER_ENV = "TRAINJOB_OWNER"
_PR_SET_CHILD_SUBREAPER = 36
_PROC = Path("/proc")

Procs = dict[int, str]
"""Processes by pid, each with its start time (``procs.start_time``): the identity to signal."""


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    start: str
    state: str


def table() -> dict[int, Proc]:
    """Every process of this machine (``/proc/<pid>/stat``); empty where there is no /proc."""
    out: dict[int, Proc] = {}
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return out
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            stat = (_PROC / entry / "stat").read_text()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2 :].split()
        out[int(entry)] = Proc(int(entry), int(rest[1]), rest[19], rest[0])
    return out


def descendants(roots: Iterable[int], tab: Mapping[int, Proc] | None = None) -> Procs:
    """The live processes below ``roots`` (not the roots themselves), by parent pid."""
    tab = table() if tab is None else tab
    children: dict[int, list[Proc]] = {}
    for p in tab.values():
        children.setdefault(p.ppid, []).append(p)
    out: Procs = {}
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child.pid not in out and child.state not in ("Z", "X"):
                out[child.pid] = child.start
                todo.append(child.pid)
    return out


def owned(prefix: str, tab: Mapping[int, Proc] | None = None) -> Procs:
    """The live processes whose ``TRAINJOB_OWNER`` starts with ``prefix`` (``uid/``: a whole
    job; ``uid/pod/``: a pod; ``uid/pod/container``: one container)."""
    tab = table() if tab is None else tab
    want = f"{OWNER_ENV}={prefix}".encode()
    out: Procs = {}
    me = os.getpid()
    for p in tab.values():
        if p.pid == me or p.state in ("Z", "X"):
            continue
        try:
            env = (_PROC / str(p.pid) / "environ").read_bytes()
        except OSError:
            continue
        if any(var.startswith(want) for var in env.split(b"\0")):
            out[p.pid] = p.start
    return out


def alive(procs: Procs, tab: Mapping[int, Proc] | None = None) -> Procs:
    """Those of ``procs`` still running as the same process (same start time)."""
    tab = table() if tab is None else tab
    out: Procs = {}
    for pid, start in procs.items():
        p = tab.get(pid)
        if p is not None and p.start == start and p.state not in ("Z", "X"):
            out[pid] = start
    return out


def signal_all(procs: Procs, sig: int) -> None:
    """Send ``sig`` to each of ``procs`` that is still the process it was (never a recycled pid)."""
    for pid in alive(procs):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
            if sig == signal.SIGTERM:
                os.kill(pid, signal.SIGCONT)  # a stopped process acts on SIGTERM only once woken


# How long end() waits for SIGKILLed processes to exit (a loaded machine can take a while).
KILL_WAIT = 5.0


def end(procs: Procs, grace: float) -> None:
    """Stop ``procs`` as the kubelet stops a container: SIGTERM, up to ``grace`` seconds for them
    to exit, then SIGKILL for what remains (``grace`` 0: SIGKILL at once).

    Returns once they are gone (or after ``KILL_WAIT`` seconds): SIGKILL is delivered
    asynchronously, and a caller that reports a job stopped must not race its processes' exit.
    """
    if not procs:
        return
    if grace > 0:
        signal_all(procs, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while alive(procs) and time.monotonic() < deadline:
            time.sleep(0.05)
    signal_all(procs, signal.SIGKILL)
    deadline = time.monotonic() + KILL_WAIT
    while alive(procs) and time.monotonic() < deadline:
        time.sleep(0.02)


def record(procs: Procs, path: Path) -> None:
    """Write ``procs`` to ``path``, one ``pid start`` a line (owner-only, never through a link):
    what a reader ends when the supervisor that knew them is gone (:func:`recorded`)."""
    files.write_private(path, "".join(f"{pid} {start}\n" for pid, start in procs.items()).encode())


def recorded(path: Path) -> Procs:
    """The processes :func:`record` wrote to ``path`` (none when it is missing or unreadable).
    Signal them only through :func:`end` or :func:`signal_all`, which check each one's start
    time: a recycled pid, or a line cut short by a write in progress, names no live process."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            text = f.read(1 << 20).decode(errors="replace")
    except OSError:
        return {}
    out: Procs = {}
    for line in text.splitlines():
        pid, _, start = line.partition(" ")
        if pid.isdigit() and start.isdigit():
            out[int(pid)] = start
    return out


def become_subreaper() -> bool:
    """Make this process the child subreaper of everything it starts (Linux); whether it is."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def reap_orphans(own: Iterable[int], tab: Mapping[int, Proc] | None = None) -> None:
    """Reap the zombie children of this process that are not in ``own`` (its Popen children,
    whose exit codes their Popen reads): orphans of pods reparented here by the subreaper."""
    tab = table() if tab is None else tab
    me, mine = os.getpid(), set(own)
    for p in tab.values():
        if p.ppid == me and p.state == "Z" and p.pid not in mine:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(p.pid, os.WNOHANG)
