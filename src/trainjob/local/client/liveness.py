"""A supervisor that died: noticed by whoever reads its job, which is then Failed.

A live-phase job whose supervisor's pid and start time no longer match a live process (killed,
the machine rebooted, the client exited before starting it) is marked Failed with reason
``SupervisorDied`` and its processes are stopped, so a job never stays Running forever. Used by
:mod:`trainjob.local.client.executor` on every read.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainjob.core import times
from trainjob.errors import ConfigError
from trainjob.executor import model as st
from trainjob.local.client.launch import reap
from trainjob.local.state import home as homes
from trainjob.local.state import procs, status
from trainjob.local.state.store import EventRow, JobRow, PodRow, Store, StoreFullError

if TYPE_CHECKING:  # the process table is read for a dead job only (ctypes loads with it)
    from trainjob.local.state import ptree

LIVE = (st.CREATED, st.RUNNING, st.SUSPENDED)
START_GRACE = 60.0  # seconds a stored job may wait for its supervisor to record its pid

Unwritten = dict[str, tuple[list[PodRow], EventRow]]
"""Pods and event of a job found dead that the store could not record (a full disk), by uid."""


def check_alive(store: Store, home: Path, row: JobRow, unwritten: Unwritten) -> JobRow:
    """Fail a live-phase job whose supervisor is gone; return the current row."""
    reap()
    if row.phase not in LIVE:
        return row
    if row.supervisor_pid is None:
        # Submitted, and its supervisor not started yet, or never (the client died between
        # storing the job and starting it): a supervisor records its pid within a second.
        if time.time() - row.created_ts < START_GRACE:
            return row
    elif procs.alive(row.supervisor_pid, row.supervisor_start):
        return row
    failed = fail_dead(store, home, row, unwritten)
    cur = store.job(row.namespace, row.name)
    if cur is None or (cur.uid == row.uid and cur.phase in LIVE):
        return failed  # deleted meanwhile, or the store could not be written
    return cur


def fail_dead(store: Store, home: Path, row: JobRow, unwritten: Unwritten) -> JobRow:
    """Stop a dead supervisor's processes and record the job Failed; the Failed row.

    When the store cannot be written (a full disk) the row is returned unwritten (and its pods
    and event kept in ``unwritten``), so that readers still see the job Failed; the next reader
    records it once there is room.
    """
    left = stop_processes(store, home, row)
    ts = times.now()
    sup_log = homes.supervisor_log(home, row.namespace, row.name)
    if row.supervisor_pid is None:
        message = (
            "the local supervisor never started (the client that submitted the job exited "
            "first); submit it again"
        )
    else:
        message = (
            f"the local supervisor (pid {row.supervisor_pid}) exited while the job was "
            f"{row.phase}; its processes were stopped (see {sup_log})"
        )
    if left:
        message += f"; not everything it started could be removed: {'; '.join(left)}"
    message += homes.disk_full_note(home)
    job_status = row.status_dict()
    status.failed(job_status, status.REASON_SUPERVISOR_DIED, message, ts)
    for counts in job_status.get("jobsStatus") or ():
        counts.update(active=0, ready=0)  # its processes are stopped
    pods_now = [
        p._replace(phase=st.POD_FAILED, pid=None, finished=ts, ready=False)
        if p.phase in (st.POD_PENDING, st.POD_RUNNING)
        else p
        for p in store.pods(row.namespace, row.name)
    ]
    event = EventRow(
        row.namespace, row.name, row.uid, "Warning", status.REASON_SUPERVISOR_DIED,
        message, ts, "TrainJob", row.name,
    )  # fmt: skip
    failed: dict[str, Any] = {
        "phase": st.FAILED,
        "reason": status.REASON_SUPERVISOR_DIED,
        "message": message,
        "status": json.dumps(job_status),
        "completed": ts,
    }
    try:
        store.write_status(
            row.namespace, row.name, row.uid, pods=pods_now, events=[event], **failed
        )
    except StoreFullError:
        unwritten[row.uid] = (pods_now, event)
    return row._replace(**failed)


def stop_processes(store: Store, home: Path, row: JobRow) -> list[str]:
    """Kill whatever of ``row``'s job still runs without its supervisor: its pods' process
    groups, every process of the job in any session, what its pod runner left (containers);
    returns once they are gone: what is still there (empty: nothing)."""
    from trainjob.local.state import ptree  # the process table is read for a dead job only

    for p in store.pods(row.namespace, row.name):
        if p.pid and procs.alive(p.pid, p.pid_start):
            procs.kill_group(p.pid)
    ptree.end(job_processes(home, row), grace=0)  # every process of the job, any session
    from trainjob.local.job import runner as runners  # its backends load only for a dead job

    return runners.clean_up(row.runner, row.namespace, row.name, row.uid)


def job_processes(home: Path, row: JobRow) -> ptree.Procs:
    """Every process of ``row``'s job still running: those carrying its mark, and those its
    supervisor last recorded (one that cleared its environment and left its session)."""
    from trainjob.local.state import ptree

    found = ptree.owned(f"{row.uid}/")
    with contextlib.suppress(ConfigError):  # a row no valid job dir belongs to
        found.update(ptree.recorded(homes.processes_file(home, row.namespace, row.name)))
    return found
