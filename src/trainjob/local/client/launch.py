"""Starting a job's supervisor: a detached process (its own session) that outlives the client.

The supervisor (:mod:`trainjob.local.job.supervisor`, after it waited Queued for this machine's
capacity: :mod:`trainjob.local.job.queueing`) records nothing until it runs; its pid and
start time are stored here, so that :mod:`trainjob.local.client.liveness` can tell a dead one from a live
one (a pid may be reused). Used by :meth:`trainjob.local.client.executor.LocalExecutor.submit`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from trainjob.local.state import files, procs
from trainjob.local.state import home as homes
from trainjob.local.state.store import JobRow, Store

if TYPE_CHECKING:  # subprocess loads when a supervisor is started (a reader only reaps)
    import subprocess

# Supervisors this process started: kept so that they are reaped (no zombies, no warnings).
_STARTED: list[subprocess.Popen[bytes]] = []


def reap() -> None:
    """Forget the supervisors this process started that have exited (and reap them)."""
    _STARTED[:] = [p for p in _STARTED if p.poll() is None]


def start_supervisor(home: Path, store: Store, row: JobRow) -> None:
    """Start the supervisor of the stored job ``row`` in a fresh job directory and store its
    pid. Raises ConfigError when its files cannot be made safely, OSError when it cannot start."""
    import subprocess

    jdir = homes.job_dir(home, row.namespace, row.name)
    files.remove_tree(home, jdir)  # a previous job's files (never through a link)
    files.private_dirs(home, jdir / "logs")
    argv = [
        sys.executable, "-m", "trainjob.local.job.queueing",  # then the supervisor
        "--home", str(home), "--namespace", row.namespace,
        "--name", row.name, "--uid", row.uid,
    ]  # fmt: skip
    out = files.open_private(homes.supervisor_log(home, row.namespace, row.name))
    with os.fdopen(out, "ab") as sup_log:
        proc = subprocess.Popen(
            argv,
            cwd=row.cwd,
            stdin=subprocess.DEVNULL,
            stdout=sup_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    reap()
    _STARTED.append(proc)
    token = procs.start_time(proc.pid)
    store.update_job(
        row.namespace, row.name, row.uid, supervisor_pid=proc.pid, supervisor_start=token
    )
