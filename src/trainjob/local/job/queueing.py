"""A job's supervisor process while it waits Queued for its share of this machine: the light first
part of every supervisor.

Started by :func:`trainjob.local.client.launch.start_supervisor` as ``python -m
trainjob.local.job.queueing --home H --namespace NS --name N --uid UID``. It records its pid (the
job's supervisor, for :mod:`trainjob.local.client.liveness`), then waits for the job's share
(:mod:`trainjob.local.job.capacity`) with no more loaded than the store and the share: a hundred
jobs queued on a laptop are a hundred processes of about 15 MiB that look every
:data:`~trainjob.local.job.capacity.RECHECK` seconds, where a whole supervisor is about 35 MiB that
looks every 50 ms. While it waits the job carries the condition ``Queued``
(``WaitingForResources``, :mod:`trainjob.api.phases`). Once it holds the share, the same process
becomes the job's supervisor (:func:`trainjob.local.job.supervisor.main`), which keeps it; a job
deleted, finished or suspended meanwhile leaves the queue (a suspended one's supervisor waits
again on resume), and a SIGTERM fails the job as the supervisor's would.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from trainjob.api import phases
from trainjob.core import times
from trainjob.executor import model as st
from trainjob.local.job import capacity
from trainjob.local.state import home as homes
from trainjob.local.state import procs, status
from trainjob.local.state.store import JobRow, Store
from trainjob.runtime.plan import Plan


class _Terminated(Exception):
    """SIGTERM while the job waits."""


def _on_term(_signum: int, _frame: object) -> None:
    raise _Terminated


def _queued(row: JobRow, why: str) -> str:
    """The job's status with the Queued condition saying ``why``."""
    job_status = row.status_dict()
    held = phases.Phase(phases.CONDITION_QUEUED, phases.REASON_WAITING_FOR_RESOURCES, why)
    phases.set_phase(job_status.setdefault("conditions", []), held, times.now())
    return json.dumps(job_status)


def wait(home: Path, namespace: str, name: str, uid: str) -> capacity.Share | None:
    """Wait for the job's share; the share once held, None when the job needs none now (it is
    suspended: its supervisor takes one on resume). Exits when the job is gone or finished."""
    store = Store(homes.db_path(home))
    row = store.job(namespace, name)
    if row is None or row.uid != uid:
        raise SystemExit(0)
    pid = os.getpid()
    store.update_job(
        namespace, name, uid, supervisor_pid=pid, supervisor_start=procs.start_time(pid)
    )
    if row.suspend or row.phase != st.CREATED:
        return None
    share = capacity.Share(
        home, row.created_ts, uid, capacity.need(Plan(tuple(json.loads(row.plan)))),
        capacity.limit(os.environ),
    )  # fmt: skip
    shown = ""
    try:
        while True:
            why = share.take()
            if why is None:
                return share
            now = store.read(
                "SELECT uid, suspend, deleting, phase FROM jobs WHERE namespace = ? AND name = ?",
                (namespace, name),
            )
            if not now or now[0][0] != uid or now[0][2] or now[0][3] in st.FINISHED:
                share.release()
                raise SystemExit(0)
            if now[0][1]:  # suspended while it waited
                share.release()
                return None
            if share.soon and "trainjob.local.job.supervisor" not in sys.modules:
                # among the next to run: the whole supervisor loads now, not once it may run
                import trainjob.local.job.supervisor  # noqa: F401
            if why != shown:
                row = store.job(namespace, name) or row
                store.update_job(
                    namespace, name, uid, status=_queued(row, why), only_phases=[st.CREATED]
                )
                shown = why
            time.sleep(capacity.RECHECK)
    except _Terminated:
        share.release()
        job_status = row.status_dict()
        ts = times.now()
        message = "the local supervisor was terminated"
        status.failed(job_status, status.REASON_SUPERVISOR_ERROR, message, ts)
        phases.set_phase(job_status.setdefault("conditions", []), None)
        store.update_job(
            namespace, name, uid, phase=st.FAILED, reason=status.REASON_SUPERVISOR_ERROR,
            message=message, status=json.dumps(job_status), completed=ts,
            only_phases=[st.CREATED],
        )  # fmt: skip
        raise SystemExit(1) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainjob.local.job.queueing")
    for flag in ("--home", "--namespace", "--name", "--uid"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_term)
    share = wait(Path(args.home), args.namespace, args.name, args.uid)
    # A SIGTERM from now on waits (blocked) for the supervisor's handler: its loop takes it.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    from trainjob.local.job import supervisor  # the whole supervisor, once the job may run

    return supervisor.main(argv, share=share)


if __name__ == "__main__":
    sys.exit(main())
