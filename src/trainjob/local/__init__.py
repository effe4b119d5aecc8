"""The local backend: TrainJobs run as processes on this machine.

``LocalExecutor`` (:mod:`trainjob.local.client.executor`, an implementation of
:class:`trainjob.executor.base.Executor`) is the entry point. Three packages, imported one way:
:mod:`trainjob.local.client` (what the CLI, SDK and dashboard call: the executor, admission,
launching and following jobs, deletion, runtimes) over :mod:`trainjob.local.job` (what runs inside
a job's supervisor: the JobSet's rules, its pods as processes or containers, probes, progress
reports) over :mod:`trainjob.local.state` (what both share: the directory layout, the SQLite
store, conditions, log files, processes). The job side imports nothing of the client side
(``.importlinter``). Names are imported on first use, so the supervisor starts without loading the
API models.
Sweeps (OptimizationJobs) live on the client side: ``client.sweeps`` (their executor),
``client.sweep_supervisor`` (the process that runs a sweep's loop) and ``client.sweep_store``
(their table in the store).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainjob import lazy

if TYPE_CHECKING:
    from trainjob.local.client.executor import LocalExecutor

_EXPORTS = {
    "LocalExecutor": "trainjob.local.client.executor",
}

__all__ = ["LocalExecutor"]


__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS)
