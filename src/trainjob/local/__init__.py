"""The local backend: TrainJobs run as processes on this machine.

``LocalExecutor`` (:mod:`trainjob.local.executor`) is the entry point; the other modules are its
parts: ``home`` (directory layout), ``store`` (SQLite), ``pods`` (a Plan's pods as local
processes: env, endpoints, paths, commands), ``procs`` (spawning, killing, liveness),
``supervisor`` (the per-job process that runs the JobSet), ``mpi`` (OpenMPI on one host).
"""

from trainjob.local.executor import LocalExecutor
from trainjob.local.state import Event, JobFailedError, JobState, PodState

__all__ = ["Event", "JobFailedError", "JobState", "LocalExecutor", "PodState"]
