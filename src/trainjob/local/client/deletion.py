"""Deleting a job: stop its processes, remove its files, keep its outputs unless asked.

The supervisor is told first (it stops the pods with their grace periods); one that does not
exit in time, and every process still carrying the job's mark, is killed. Then the job's scratch
directory goes; its outputs (``outputs/NS/NAME/RUN``) only with ``purge``; a claim's never. Used
by :meth:`trainjob.local.client.executor.LocalExecutor.delete` and its TTL.
"""

from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path

from trainjob.errors import ConfigError
from trainjob.local.client.liveness import stop_processes
from trainjob.local.job import podrun, pods
from trainjob.local.state import files, procs
from trainjob.local.state import home as homes
from trainjob.local.state.store import JobRow, Store, StoreFullError
from trainjob.runtime.plan import Plan

# The executor's logger, as before the split: the name a logging set-up knows.
log = logging.getLogger("trainjob.local.client.executor")


def delete(store: Store, home: Path, row: JobRow, *, purge: bool = False) -> None:
    """Stop the stored job ``row``'s processes and remove it, its logs and its scratch volumes
    (its run's outputs too with ``purge``)."""
    namespace, name = row.namespace, row.name
    try:
        store.update_job(namespace, name, row.uid, deleting=1)
        # the supervisor stops its pods (SIGTERM, their grace period, SIGKILL) and exits
        grace = longest_grace(row) + 7.0
    except StoreFullError:
        grace = 0.0  # it cannot be told: kill it, and free the disk before the store
    pid, token = row.supervisor_pid, row.supervisor_start
    if pid and not procs.wait_gone(pid, token, timeout=grace):
        procs.kill_group(pid)
        procs.wait_gone(pid, token, timeout=5.0)
    # What the supervisor knew and whatever carries the job's mark (it was killed before it
    # could stop them).
    for what in stop_processes(store, home, row):
        log.warning("warning: %s/%s left behind %s", namespace, name, what)
    try:
        files.remove_tree(home, homes.job_dir(home, namespace, name))
    except files.UnsafePathError as e:  # a link planted on the way: its target is left alone
        log.warning("warning: the files of %s/%s were not removed: %s", namespace, name, e)
    except ConfigError:
        pass  # a row no valid job dir belongs to: no files
    if purge:
        with contextlib.suppress(ConfigError):
            run_dir = homes.run_outputs_dir(home, namespace, name, row.created, row.uid)
            try:
                files.remove_tree(home, run_dir)
            except files.UnsafePathError as e:  # a link planted on the way: left alone
                log.warning(
                    "warning: the outputs of %s/%s were not removed: %s", namespace, name, e
                )
            with contextlib.suppress(OSError):  # the job's folder, once no run is left
                run_dir.parent.rmdir()
    store.delete_job(namespace, name, row.uid)
    _release_workspace(store, home, row)


def _release_workspace(store: Store, home: Path, row: JobRow) -> None:
    """The job's workspace copy, unless another job shares it (:mod:`trainjob.local.client.workspaces`)."""
    from trainjob.local.client import workspaces

    try:
        workspaces.release(home, store, json.loads(row.trainjob))
    except (ValueError, TypeError, OSError) as e:  # a damaged row; a copy that cannot go yet
        log.warning(
            "warning: the workspace of %s/%s was not removed: %s", row.namespace, row.name, e
        )


def longest_grace(row: JobRow) -> float:
    """The longest ``terminationGracePeriodSeconds`` of the job's pods (the local default when
    none sets one): how long its supervisor may take to stop them."""
    try:
        plan = Plan(tuple(json.loads(row.plan)))
        graces = [podrun.grace_of(t.spec) for t in pods.pod_templates(plan, row.uid)]
    except (ValueError, TypeError, KeyError, AttributeError):  # a damaged row: delete it anyway
        return podrun.DEFAULT_GRACE
    return max(graces, default=podrun.DEFAULT_GRACE)
