"""Processes: start one detached, tell whether a pid is still the process we started, kill a group.

A process is identified by its pid *and* its start time (from ``/proc/<pid>/stat`` on Linux), so a
recycled pid is never mistaken for a live supervisor or worker. Used by the executor (starting
supervisors, liveness checks, cleaning up after a dead supervisor) and by the supervisor (workers).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # subprocess and ctypes load when a process is started, not on a liveness check
    import subprocess


def start_time(pid: int) -> str | None:
    """An opaque token for when ``pid`` started (None if it does not exist or is a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:  # pragma: no cover - not Linux
        return _start_time_fallback(pid)
    # Field 2 (comm) may contain spaces and parentheses: split after the last ')'.
    rest = stat[stat.rindex(")") + 2 :].split()
    if rest[0] in ("Z", "X"):
        return None
    return rest[19]  # field 22: starttime in clock ticks since boot


def _start_time_fallback(pid: int) -> str | None:  # pragma: no cover - not Linux
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return "?"


def alive(pid: int | None, token: str | None) -> bool:
    """Whether ``pid`` is running and is the process that had start time ``token``."""
    if not pid:
        return False
    now = start_time(pid) if Path("/proc").is_dir() else _start_time_fallback(pid)
    if now is None:
        return False
    return token is None or token == "?" or now == "?" or now == token


_SIGKILL, _SIGTERM = 9, 15
"""signal.SIGKILL and SIGTERM (POSIX's numbers), without importing :mod:`signal`: making its
enums was about 1 ms of every ``trainjob get jobs``, which imports this module and sends none."""


def kill_group(pgid: int | None, sig: int = _SIGKILL) -> None:
    """Send ``sig`` to process group ``pgid`` (members outlive their leader; the group stays)."""
    if not pgid:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


_PR_SET_PDEATHSIG = 1


def _child_setup(ctypes: Any) -> None:
    """In the child: own session (so its whole group can be killed) and die with the parent.
    ``ctypes`` is the module, imported by the parent (a child between fork and exec imports
    nothing)."""
    os.setsid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, _SIGTERM)


def spawn(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    out: IO[bytes] | int,
    *,
    die_with_parent: bool = True,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` as the leader of a new session, stdout and stderr into ``out``."""
    import ctypes
    import subprocess

    return subprocess.Popen(
        list(argv),
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT,
        preexec_fn=functools.partial(_child_setup, ctypes) if die_with_parent else os.setsid,
        close_fds=True,
    )


def wait_gone(pid: int, token: str | None, timeout: float) -> bool:
    """Wait until ``pid`` (with start time ``token``) has exited; whether it did in time."""
    deadline = time.monotonic() + timeout
    while alive(pid, token):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True
