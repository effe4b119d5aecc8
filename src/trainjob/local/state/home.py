"""Where the local backend keeps things: the home directory and each job's files.

    $TRAINJOB_HOME (default ~/.trainjob)/
      trainjob.db                          the SQLite store (trainjob.local.state.store)
      jobs/<namespace>/<name>/
        supervisor.log                     the supervisor's own output (tracebacks, if any)
        logs/<job>-<index>.log             one file per pod: the container's stdout and stderr
        volumes/<volume>/                  a pod volume (emptyDir, PVC, Secret, ConfigMap) here
        tmp/                               $TRAINJOB_JOB_TMP of its pods: what they write aside
                                           (the virtual environment of packages_to_install)
      outputs/<namespace>/<name>/<run>/    what a run of the job produced, kept after it
        <volume>/                          a volume of the JobSet's volumeClaimPolicies (the LLM
                                           trainer's output_dir, checkpoints, downloads)
        checkpoints/                       $TRAINJOB_CHECKPOINT_DIR of its pods (custom code's)
      claims/<namespace>/<claim>/          a persistentVolumeClaim volume: shared by the jobs
                                           that name the claim, as a PVC is on a cluster

``jobs/`` is scratch, removed with the job (``trainjob delete``, ``run --replace``); ``outputs/``
and ``claims/`` are not: only ``delete --purge`` removes a run's outputs. Each run (each uid) has
a directory of its own, so a replaced job's outputs stay beside the new run's.

Used by the executor, the supervisor and the pod builder.
"""

from __future__ import annotations

import os
from pathlib import Path

from trainjob.api import constants as c
from trainjob.errors import ConfigError

ENV_HOME = "TRAINJOB_HOME"
ENV_JOB_TMP = "TRAINJOB_JOB_TMP"
"""Set in every local container to the job's ``tmp/``, which is removed with the job."""
ENV_CHECKPOINT_DIR = c.ENV_CHECKPOINT_DIR
"""Set in every local container to the run's ``checkpoints/`` under ``outputs/``: it survives a
JobSet restart (and the job's deletion), so training code saves there and resumes from it."""
ENV_RESTART_ATTEMPT = c.ENV_RESTART_ATTEMPT
"""Set in every local container to the JobSet restart attempt (0 first, as JobSet's
``jobset.sigs.k8s.io/restart-attempt`` label on the pod)."""
DEFAULT_NAMESPACE = "default"
"""The namespace of a job that names none (a directory under ``jobs/``, as on a cluster)."""
DB_NAME = "trainjob.db"
# Less free space than this on a job's disk is reported as a full disk.
LOW_SPACE = 1 << 20


def default_home() -> Path:
    """``$TRAINJOB_HOME``, else ``~/.trainjob``."""
    env = os.environ.get(ENV_HOME)
    return Path(env).expanduser() if env else Path.home() / ".trainjob"


def db_path(home: Path) -> Path:
    return home / DB_NAME


def cache_dir(home: Path) -> Path:
    """``home/cache``: copies trainjob can make again (the built-in runtimes as JSON)."""
    return home / "cache"


def job_dir(home: Path, namespace: str, name: str) -> Path:
    """``home/jobs/NS/NAME``; a namespace or name that is not one plain path component (``..``,
    ``a/b``) is refused, since the job's directory is removed with it."""
    for part in (namespace, name):
        if not part or part in (".", "..") or "/" in part or "\0" in part:
            raise ConfigError(f"{part!r} is not a valid job namespace or name here")
    return home / "jobs" / namespace / name


def component(part: str, what: str) -> str:
    """``part`` when it is one plain path component (not ``..``, ``a/b``), else a ConfigError."""
    if not part or part in (".", "..") or "/" in part or "\0" in part:
        raise ConfigError(f"{part!r} is not a valid {what} here")
    return part


def outputs_dir(home: Path, namespace: str, name: str) -> Path:
    """``home/outputs/NS/NAME``: every kept run of jobs of that name."""
    job_dir(home, namespace, name)  # the same checks of the namespace and name
    return home / "outputs" / namespace / name


def run_id(created: str, uid: str) -> str:
    """A run's directory name: its creation time and the start of its uid
    (``20261201-150805-3f2a9c1e``), so runs sort by age and two runs never share one."""
    stamp = "".join(ch for ch in created if ch.isdigit())[:14]
    day, clock = stamp[:8], stamp[8:]
    return component(f"{day}-{clock}-{uid.split('-')[0][:8]}", "run id")


def run_outputs_dir(home: Path, namespace: str, name: str, created: str, uid: str) -> Path:
    """``home/outputs/NS/NAME/RUN``: the kept volumes of one run of a job."""
    return outputs_dir(home, namespace, name) / run_id(created, uid)


def claims_dir(home: Path, namespace: str) -> Path:
    """``home/claims/NS``: a directory per persistentVolumeClaim, outliving every job."""
    return home / "claims" / component(namespace, "namespace")


def logs_dir(home: Path, namespace: str, name: str) -> Path:
    return job_dir(home, namespace, name) / "logs"


def log_name(job: str, index: int, job_index: int = 0) -> str:
    """``node-1.log``; ``node-2-1.log`` for Job 2 of a replicatedJob with several replicas."""
    if job_index:
        return f"{job}-{job_index}-{index}.log"
    return f"{job}-{index}.log"


def log_path(
    home: Path, namespace: str, name: str, job: str, index: int, job_index: int = 0
) -> Path:
    return logs_dir(home, namespace, name) / log_name(job, index, job_index)


def volumes_dir(home: Path, namespace: str, name: str) -> Path:
    return job_dir(home, namespace, name) / "volumes"


def job_tmp_dir(volumes_root: Path) -> Path:
    """The job's ``tmp/``, beside the ``volumes/`` directory its pods are built with."""
    return volumes_root.parent / "tmp"


def supervisor_log(home: Path, namespace: str, name: str) -> Path:
    return job_dir(home, namespace, name) / "supervisor.log"


def processes_file(home: Path, namespace: str, name: str) -> Path:
    """Every process of the job its supervisor knows (``trainjob.local.state.ptree.record``)."""
    return job_dir(home, namespace, name) / "processes"


def disk_full_note(path: Path) -> str:
    """``"; no space left on the disk of PATH (N KiB free)"`` when it is (nearly) full, else ``""``.

    Appended to the message of a pod or supervisor that failed, since a process that cannot write
    its log cannot say so itself.
    """
    try:
        import shutil  # here: its compression modules load with it

        free = shutil.disk_usage(path).free
    except OSError:
        return ""
    if free >= LOW_SPACE:
        return ""
    return f"; no space left on the disk of {path} ({free // 1024} KiB free)"
