"""The local backend: TrainJobs run as processes on this machine.

``LocalExecutor`` (:mod:`trainjob.local.executor`, an implementation of
:class:`trainjob.executor.base.Executor`) is the entry point; the other modules are its
parts. The client side of a job: ``admission`` (what a submit checks, the first rows),
``launch`` (starting the supervisor), ``liveness`` (a supervisor that died), ``views`` (stored rows
as the job model), ``follow`` (following a log across restarts), ``deletion``, ``runtimes``
(built-in and stored), ``outputs``, ``limits``; sweeps: ``sweeps`` (OptimizationJobs) and their
``sweep_supervisor`` and ``sweep_store``. The job's side: ``supervisor`` (the per-job
process that runs the JobSet), ``pods`` (a Plan's pods as local processes: env, endpoints, paths,
commands), ``podrun`` (one pod's processes), ``probes`` (readiness, liveness and startup probes),
``volumes``, ``mpi`` (OpenMPI on one host), ``status`` (conditions), ``runner`` and
``containers/`` (how pods run: processes or containers). Shared by both: ``home`` (directory
layout), ``store`` (SQLite; its tables in ``schema``, its rows in ``rows``), ``files``, ``logfiles``, ``procs`` and ``ptree`` (spawning, killing,
liveness). Names are imported on first use, so the supervisor starts without loading the API
models.
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
