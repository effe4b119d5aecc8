"""What one machine can run: the local backend's limits, checked before anything starts.

A Plan valid on a cluster can be more than this machine survives, since every pod is a process
here and every torchrun or mpirun rank another: ``numNodes: 1000000`` would exhaust memory, and
``resourcesPerNode: {cpu: 1e30}`` (``numProcPerNode: auto``) asks torchrun for 10**30 processes.
Each limit is a field error naming the field, the limit and the way out (a cluster), so nothing
is stored and no process starts. Also refused: a replicatedJob whose Jobs have no pods
(``numNodes: 0``, ``parallelism: 0``, ``replicas: 0``), which a cluster completes without running
anything, so nothing would train. Called by :mod:`trainjob.local.client.executor` on submit.
"""

from __future__ import annotations

import os
import re
from typing import Any

from trainjob.api import constants as c
from trainjob.api.trainer import TrainJob
from trainjob.errors import FieldError, InvalidError
from trainjob.runtime.plan import Plan

MAX_LOCAL_PODS = 256
TRAINJOB = f"{c.TRAINJOB_KIND}.{c.GROUP}"


def max_procs_per_node(cpus: int | None = None) -> int:
    """Processes one pod may start here: 4 per CPU, at least 8 (small runs oversubscribe a
    laptop's cores on purpose; a runaway count does not)."""
    return max(8, 4 * (cpus if cpus is not None else os.cpu_count() or 1))


def _replicated_jobs(plan: Plan) -> list[dict[str, Any]]:
    return list((plan.jobset.get("spec") or {}).get("replicatedJobs") or ())


def _trainer_job(plan: Plan) -> dict[str, Any] | None:
    for rjob in _replicated_jobs(plan):
        labels = ((rjob.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if labels.get(c.LABEL_ANCESTOR) == c.ANCESTOR_TRAINER:
            return rjob
    return None


def _count(value: Any) -> int:
    return 1 if value is None else int(value)


def check(plan: Plan, tj: TrainJob) -> None:
    """Raise InvalidError (of the TrainJob) when this machine cannot run ``plan``."""
    name = tj.metadata.name or ""
    trainer = _trainer_job(plan)
    errors: list[FieldError] = []
    total = 0
    for i, rjob in enumerate(_replicated_jobs(plan)):
        job_spec = (rjob.get("template") or {}).get("spec") or {}
        replicas, parallelism = _count(rjob.get("replicas")), _count(job_spec.get("parallelism"))
        total += replicas * parallelism
        if replicas and parallelism:
            continue
        if rjob is trainer and tj.spec.trainer is not None and tj.spec.trainer.num_nodes == 0:
            errors.append(
                FieldError.invalid(
                    "spec.trainer.numNodes",
                    0,
                    "must be at least 1 on the local backend: 0 nodes give the trainer no pods "
                    "(parallelism 0), so nothing would train",
                )
            )
        else:
            fld = "replicas" if not replicas else "template.spec.parallelism"
            errors.append(
                FieldError.invalid(
                    f"spec.template.spec.replicatedJobs[{i}].{fld}",
                    0,
                    f'must be at least 1 on the local backend: replicatedJob "{rjob.get("name")}" '
                    "would have no pods, so it would never run",
                )
            )
    if total > MAX_LOCAL_PODS:
        value: Any = (
            tj.spec.trainer.num_nodes if tj.spec.trainer and tj.spec.trainer.num_nodes else total
        )
        errors.append(
            FieldError.invalid(
                "spec.trainer.numNodes",
                value,
                f"must give at most {MAX_LOCAL_PODS} pods on the local backend, where every pod "
                f"is a process on this machine (this job has {total}): lower numNodes, or submit "
                "it to a cluster",
            )
        )
    per_node = procs_per_node(plan)
    limit = max_procs_per_node()
    if per_node is not None and per_node > limit:
        errors.append(
            FieldError.invalid(
                "spec.trainer.numProcPerNode",
                per_node,
                f"must be at most {limit} on the local backend, where every process of every "
                f"node runs on this machine ({os.cpu_count() or 1} CPUs){_why(tj)}: lower it, "
                "or submit the job to a cluster",
            )
        )
    if errors:
        raise InvalidError(errors, TRAINJOB, name)


def _why(tj: TrainJob) -> str:
    trainer = tj.spec.trainer
    if trainer is not None and trainer.num_proc_per_node is not None:
        return ""
    return "; numProcPerNode (auto) is one process per CPU of resourcesPerNode or the runtime"


_SLOTS = re.compile(r"slots=(\d+)")


def procs_per_node(plan: Plan) -> int | None:
    """The processes one trainer pod starts: torchrun's ``PET_NPROC_PER_NODE`` (when a number),
    or the most ``slots`` of an MPI hostfile line; None when neither says."""
    found: list[int] = []
    trainer = _trainer_job(plan)
    pod = (((trainer or {}).get("template") or {}).get("spec") or {}).get("template") or {}
    for ctr in (pod.get("spec") or {}).get("containers") or ():
        for env in ctr.get("env") or ():
            if (
                env.get("name") == c.TORCH_ENV_NUM_PROC_PER_NODE
                and str(env.get("value", "")).isdigit()
            ):
                found.append(int(env["value"]))
    for cm in plan.configmaps:
        for text in (cm.get("data") or {}).values():
            if isinstance(text, str) and cm["metadata"]["name"].endswith("-mpi-hostfile"):
                found.extend(int(m) for m in _SLOTS.findall(text))
    return max(found) if found else None
