"""The local backend: TrainJobs run as processes on this machine.

``LocalExecutor`` (:mod:`trainjob.local.executor`) is the entry point; the other modules are its
parts: ``home`` (directory layout), ``store`` (SQLite), ``pods`` (a Plan's pods as local
processes: env, endpoints, paths, commands), ``volumes``, ``procs`` (spawning, killing, liveness),
``podrun`` (one pod's processes), ``probes`` (readiness, liveness and startup probes), ``status`` (conditions), ``mpi`` (OpenMPI on one host) and
``supervisor`` (the per-job process that runs the JobSet). Names are imported on first use, so the
supervisor starts without loading the API models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainjob import lazy

if TYPE_CHECKING:
    from trainjob.local.executor import LocalExecutor
    from trainjob.local.state import Event, JobFailedError, JobState, PodState

_EXPORTS = {
    "LocalExecutor": "trainjob.local.executor",
    "Event": "trainjob.local.state",
    "JobFailedError": "trainjob.local.state",
    "JobState": "trainjob.local.state",
    "PodState": "trainjob.local.state",
}

__all__ = ["Event", "JobFailedError", "JobState", "LocalExecutor", "PodState"]


__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS)
