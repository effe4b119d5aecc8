"""The per-sweep supervisor: runs one OptimizationJob's loop on this machine until it finishes.

Started detached (own session) by :mod:`trainjob.local.client.sweeps` as
``python -m trainjob.local.client.sweep_supervisor --home H --namespace NS --name N --uid UID``, it
outlives the client, as a TrainJob's supervisor does. Each pass is the generic driver's
(:class:`trainjob.optimizer.driver.Driver`) over the local executor (trials as processes, or
containers with the job's ``runner``): its trials are ordinary TrainJobs with supervisors of
their own, so this process holds nothing a SIGKILL could lose. The next client call (or the
liveness check of a listing) starts another, which picks up where this one was.

Between passes it waits for the store to change (:meth:`~trainjob.local.state.store.Store.
data_version`, asked every :data:`TICK`): a trial's supervisor writing Complete wakes it within
a tick, so the next trial starts a few hundredths of a second after the one before ended
(``benchmarks/sweep.py``). Every :data:`RESYNC` seconds it makes a pass anyway (a trial's
supervisor that died writes nothing; the pass's listing notices it). It exits when the job has
finished, is deleted or re-created, or another supervisor took it over.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainjob.core import times
from trainjob.executor import sweeps
from trainjob.local.client import sweep_store
from trainjob.local.state import home as homes
from trainjob.local.state.store import Store

if TYPE_CHECKING:
    from trainjob.api.optimization import OptimizationJob, OptimizationJobStatus
    from trainjob.optimizer.driver import Driver, Pass

TICK = 0.02
RESYNC = 2.0
CLAIM_TIMEOUT = 10.0  # seconds to wait for the launcher to record this process as the job's


class SweepSupervisor:
    """One OptimizationJob's loop (see the module docstring)."""

    def __init__(self, home: Path, namespace: str, name: str, uid: str) -> None:
        from trainjob.local.client.executor import LocalExecutor  # the trials' executor
        from trainjob.optimizer.driver import Driver

        self.home, self.namespace, self.name, self.uid = home, namespace, name, uid
        self.store = Store(homes.db_path(home))
        row = self._row()
        if row is None:
            raise SystemExit(0)
        self.job = job_of(row)
        self.trials = LocalExecutor(home, runner=row.runner)
        self.driver = Driver(self.trials, cwd=row.cwd)
        self.written: dict[str, Any] = row.object().get("status") or {}
        self.stopping = False
        self.acted = False

    def _row(self) -> sweep_store.SweepRow | None:
        row = sweep_store.get(self.store, self.namespace, self.name)
        return row if row is not None and row.uid == self.uid else None

    def claimed(self) -> bool:
        """Wait until the launcher recorded this process as the job's supervisor; False when
        another one is (two clients each started one: the one recorded goes on)."""
        deadline = time.monotonic() + CLAIM_TIMEOUT
        while time.monotonic() < deadline:
            row = self._row()
            if row is None:
                return False
            if row.supervisor_pid == os.getpid():
                return True
            if row.supervisor_pid is not None and row.supervisor_start is not None:
                from trainjob.local.state import procs

                if procs.alive(row.supervisor_pid, row.supervisor_start):
                    return False
            time.sleep(TICK)
        return False

    def run(self) -> int:
        if not self.claimed():
            return 0
        while not self.stopping:
            row = self._row()
            if row is None or row.deleting or row.supervisor_pid != os.getpid():
                return 0
            try:
                self.job = job_of(row)  # with the status written last: its conditions' times
                done = self.sync()
            except Exception:  # a pass that failed is made again (the loop is level-triggered)
                traceback.print_exc()
                sys.stderr.flush()
                time.sleep(1.0)
                continue
            if done:
                return 0
            if not self.acted:  # what a pass did (a stop frees a slot) is looked at at once
                self.wait_for_change()
        return 0

    def sync(self) -> bool:
        """One pass and its write; whether the job has finished (or is gone)."""
        written = sync_and_write(self.store, self.driver, self.job, self.written)
        if written is None:
            return True  # deleted, or re-created meanwhile
        self.written, finished, self.acted = written
        return finished

    def wait_for_change(self) -> None:
        """Until another process wrote to the store (a trial moved), at most :data:`RESYNC`."""
        version = self.store.data_version()
        deadline = time.monotonic() + RESYNC
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(TICK)
            if self.store.data_version() != version:
                return


def sync_and_write(
    store: Store, driver: Driver, job: OptimizationJob, written: dict[str, Any]
) -> tuple[dict[str, Any], bool, bool] | None:
    """One pass of ``driver`` over ``job`` and its write (the status and new events, only when
    they changed since ``written``): the status now, whether the job has finished and whether
    the pass did anything (created or stopped a trial); None when the job is gone (deleted,
    re-created). The supervisor's loop, and the client that
    creates a job (its first trials start without waiting for the supervisor to load)."""
    seen: list[OptimizationJobStatus] = []
    name, ns, uid = job.metadata.name or "", job.metadata.namespace or "", job.metadata.uid or ""
    p = driver.sync(job, seen.append)
    status = seen[-1].to_dict() if seen else {}
    events = events_of(p, name)
    if (status != written or events) and not sweep_store.write_status(
        store, ns, name, uid, status, sweeps.phase(status), events
    ):
        return None
    return status, p.finished, any(a.type == "Normal" for a in p.actions)


def job_of(row: sweep_store.SweepRow) -> OptimizationJob:
    """The stored job as the model, with its status."""
    from trainjob.api.optimization import parse_optimization_job

    return parse_optimization_job(row.object())


def events_of(p: Pass, name: str) -> list[dict[str, str]]:
    """The pass's actions, and the job's verdict once it has one, as stored events."""
    now = times.now()
    out = [
        {
            "type": a.type, "reason": a.reason, "message": a.message, "timestamp": now,
            "involvedKind": "TrainJob" if a.trial else sweeps.KIND,
            "involvedName": a.trial or name,
        }
        for a in p.actions
    ]  # fmt: skip
    if p.finished and p.decision.condition is not None:
        type_, reason, message = p.decision.condition
        out.append(
            {
                "type": "Warning" if type_ == sweeps.FAILED else "Normal",
                "reason": reason, "message": message, "timestamp": now,
                "involvedKind": sweeps.KIND, "involvedName": name,
            }
        )  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainjob.local.client.sweep_supervisor")
    parser.add_argument("--home", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--uid", required=True)
    args = parser.parse_args(argv)
    sup = SweepSupervisor(Path(args.home), args.namespace, args.name, args.uid)

    def stop(signum: int, frame: Any) -> None:
        sup.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return sup.run()


if __name__ == "__main__":
    sys.exit(main())
