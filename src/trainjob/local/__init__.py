"""The local backend: TrainJobs run as processes on this machine.

``LocalExecutor`` (:mod:`trainjob.local.executor`, an implementation of
:class:`trainjob.executor.base.Executor`) is the entry point; the other modules are its
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

_EXPORTS = {
    "LocalExecutor": "trainjob.local.executor",
}

__all__ = ["LocalExecutor"]


__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS)
