"""Keeping track of every process of a running job, so that none outlives it.

The supervisor is the child subreaper of its pods (:mod:`trainjob.local.state.ptree`): whatever a pod
starts, in any session, stays in its process tree. Every :data:`TRACK_EVERY` seconds the tree is
looked up, each pod notes its processes, orphans are reaped, and the set is recorded in the
job's processes file for a reader that finds the supervisor dead
(:func:`trainjob.local.client.liveness.job_processes`). When the job is over, every process still below
the supervisor ends, before the job's end is written. Used by :mod:`trainjob.local.job.supervisor`.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable
from pathlib import Path

from trainjob.errors import ConfigError
from trainjob.local.job.podrun import PodRun
from trainjob.local.state import home as homes
from trainjob.local.state import ptree

TRACK_EVERY = 0.5  # seconds between looks at the pods' process trees


class Tracker:
    """The processes of one job's pods, below this (supervisor) process."""

    def __init__(self, home: Path, namespace: str, name: str) -> None:
        self.home, self.namespace, self.name = home, namespace, name
        self._recorded: ptree.Procs = {}  # the processes last written to the processes file
        self._next_track = 0.0

    def track(self, runs: Iterable[PodRun]) -> None:
        """Note every pod's processes and reap the orphans the subreaper inherited (at most
        every :data:`TRACK_EVERY` seconds)."""
        now_ = time.monotonic()
        if now_ < self._next_track:
            return
        self._next_track = now_ + TRACK_EVERY
        runs = list(runs)
        tab = ptree.table()
        known = ptree.descendants([os.getpid()], tab)  # the pods and the orphans it inherited
        for run in runs:
            run.track(tab)
            known.update(run.seen)
        ptree.reap_orphans([p.pid for run in runs for p in run.procs], tab)
        if known != self._recorded:  # for a reader that finds this supervisor dead
            with contextlib.suppress(OSError, ConfigError):
                ptree.record(known, homes.processes_file(self.home, self.namespace, self.name))
                self._recorded = known


def end_everything(uid: str) -> list[str]:
    """The job is over: no process below the supervisor may outlive it (orphans that left
    their pod, whatever a pod started and did not stop), nor any carrying the job's mark.
    Returns once they are gone (:func:`trainjob.local.state.ptree.end`): those still running after
    that, as ``process PID`` (empty: none), for the supervisor to say before the job's end."""
    left = ptree.descendants([os.getpid()])
    left.update(ptree.owned(f"{uid}/"))
    ptree.end(left, grace=0)
    ptree.reap_orphans(())
    return [f"process {pid}" for pid in sorted(ptree.alive(left))]
