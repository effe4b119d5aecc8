"""MPI runtimes on one host: ``mpirun`` starts every rank here, so no sshd pods are needed.

On a cluster an MPI TrainJob has a ``launcher`` pod running ``mpirun`` over a hostfile of
``<pod>.<subdomain> slots=N`` lines, and ``node`` pods that only run sshd for it. Locally:

* the ``node`` pods are not run (they are reported Running while the launcher runs, with a message
  saying why), unless the runtime has no ``launcher`` job;
* the hostfile becomes one line, ``localhost slots=<sum of all slots>``, so ``mpirun`` starts all
  ranks on this machine without ssh;
* OpenMPI is told it may run as root (``OMPI_ALLOW_RUN_AS_ROOT``), oversubscribe cores, and use no
  cross-memory attach (which containers often forbid).

Used by the supervisor.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from trainjob.api import constants as c
from trainjob.local.job.pods import PodTemplate
from trainjob.runtime.plan import Plan

SKIPPED_MESSAGE = "not run locally: mpirun starts every rank on this host, no sshd is needed"


@dataclass(frozen=True)
class LocalMPI:
    skip_jobs: frozenset[str]
    env: dict[str, str] = field(default_factory=dict)

    def skips(self, pod: PodTemplate) -> bool:
        return pod.job in self.skip_jobs


def openmpi_env() -> dict[str, str]:
    env = {
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
        "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
    }
    if os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def localhost_hostfile(text: str) -> str:
    """``h1 slots=2\\nh2 slots=2`` -> ``localhost slots=4``."""
    total = 0
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.search(r"slots=(\d+)", line)
        total += int(m.group(1)) if m else 1
    return f"localhost slots={max(total, 1)}\n"


def adapt(plan: Plan, runtime: dict[str, Any]) -> LocalMPI | None:
    """Rewrite ``plan``'s hostfile in place for this host; None when the runtime is not MPI."""
    policy = ((runtime.get("spec") or {}).get("mlPolicy") or {}).get("mpi")
    if policy is None:
        return None
    jobs = [r["name"] for r in (plan.jobset.get("spec") or {}).get("replicatedJobs") or ()]
    skip = frozenset({c.JOB_NODE}) if c.JOB_LAUNCHER in jobs else frozenset()
    for cm in plan.configmaps:
        data = cm.get("data") or {}
        if c.MPI_HOSTFILE_NAME in data and str(cm["metadata"]["name"]).endswith("-mpi-hostfile"):
            data[c.MPI_HOSTFILE_NAME] = localhost_hostfile(data[c.MPI_HOSTFILE_NAME])
    return LocalMPI(skip, openmpi_env())
