"""Where the local backend keeps things: the home directory and each job's files.

    $TRAINJOB_HOME (default ~/.trainjob)/
      trainjob.db                          the SQLite store (trainjob.local.store)
      jobs/<namespace>/<name>/
        supervisor.log                     the supervisor's own output (tracebacks, if any)
        logs/<job>-<index>.log             one file per pod: the container's stdout and stderr
        volumes/<volume>/                  a pod volume (emptyDir, PVC, Secret, ConfigMap) here
        tmp/                               $TRAINJOB_JOB_TMP of its pods: what they write aside
                                           (the virtual environment of packages_to_install)

Used by the executor, the supervisor and the pod builder.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from trainjob.errors import ConfigError

ENV_HOME = "TRAINJOB_HOME"
ENV_JOB_TMP = "TRAINJOB_JOB_TMP"
"""Set in every local container to the job's ``tmp/``, which is removed with the job."""
DB_NAME = "trainjob.db"
# Less free space than this on a job's disk is reported as a full disk.
LOW_SPACE = 1 << 20


def default_home() -> Path:
    """``$TRAINJOB_HOME``, else ``~/.trainjob``."""
    env = os.environ.get(ENV_HOME)
    return Path(env).expanduser() if env else Path.home() / ".trainjob"


def db_path(home: Path) -> Path:
    return home / DB_NAME


def job_dir(home: Path, namespace: str, name: str) -> Path:
    """``home/jobs/NS/NAME``; a namespace or name that is not one plain path component (``..``,
    ``a/b``) is refused, since the job's directory is removed with it."""
    for part in (namespace, name):
        if not part or part in (".", "..") or "/" in part or "\0" in part:
            raise ConfigError(f"{part!r} is not a valid job namespace or name here")
    return home / "jobs" / namespace / name


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
    """Every process of the job its supervisor knows (``trainjob.local.ptree.record``)."""
    return job_dir(home, namespace, name) / "processes"


def disk_full_note(path: Path) -> str:
    """``"; no space left on the disk of PATH (N KiB free)"`` when it is (nearly) full, else ``""``.

    Appended to the message of a pod or supervisor that failed, since a process that cannot write
    its log cannot say so itself.
    """
    try:
        free = shutil.disk_usage(path).free
    except OSError:
        return ""
    if free >= LOW_SPACE:
        return ""
    return f"; no space left on the disk of {path} ({free // 1024} KiB free)"
