"""``LocalSweepExecutor``: OptimizationJobs on this machine, their trials local TrainJobs.

Creating checks the job (its fields; that its first trial would be admitted here, so a bad
template is refused before anything starts), stores it in the SQLite store's
``optimizationjobs`` table (:mod:`trainjob.local.client.sweep_store`) and starts a detached sweep
supervisor (:mod:`trainjob.local.client.sweep_supervisor`) that runs the loop until the job finishes.
Every read checks that a live job's supervisor still runs and starts another one when it does
not (killed, the machine rebooted): the loop is level-triggered, so the new one picks up where
the old one was, no trial lost or made twice. The container backend is this one with a
``runner`` (its trials' pods run as containers). Deleting stops the supervisor, deletes every
trial (their outputs kept unless ``purge``, as a TrainJob's) and the job.

Callers: the SDK's ``OptimizerClient`` (local and container backends) and the CLI.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from trainjob.api import constants as c
from trainjob.core import times
from trainjob.errors import ConfigError, FieldError, InvalidError, NotFoundError
from trainjob.executor import sweeps
from trainjob.executor.model import Event
from trainjob.executor.sweeps import SweepExecutor
from trainjob.local.client import sweep_store
from trainjob.local.client.executor import DEFAULT_NAMESPACE, LocalExecutor
from trainjob.local.client.sweep_store import SweepRow
from trainjob.local.state import files, procs
from trainjob.local.state import home as homes

if TYPE_CHECKING:
    import subprocess

    from trainjob.api.optimization import OptimizationJob
    from trainjob.workspace.pack import Snapshot

START_GRACE = 30.0  # seconds a stored job may wait for its first supervisor

# Supervisors this process started: kept so that they are reaped (no zombies, no warnings).
_STARTED: list[subprocess.Popen[bytes]] = []


def sweep_dir(home: Path, namespace: str, name: str) -> Path:
    """``home/sweeps/NS/NAME``: the sweep supervisor's log."""
    return home / "sweeps" / homes.component(namespace, "namespace") / homes.component(name, "name")


class LocalSweepExecutor(SweepExecutor):
    """OptimizationJobs of one ``home`` (``$TRAINJOB_HOME``, else ``~/.trainjob``); ``runner``:
    how their trials' pods run (``""``: processes; a container backend's settings)."""

    backend = "local"
    poll_interval = 0.1

    def __init__(self, home: Path | None = None, runner: str = "") -> None:
        self._trials = LocalExecutor(home, runner)
        self.home = self._trials.home
        self.store = self._trials.store
        self.runner = runner

    @property
    def trials(self) -> LocalExecutor:
        return self._trials

    def create(
        self, job: OptimizationJob, *, cwd: str | None = None, workspace: Snapshot | None = None
    ) -> OptimizationJob:
        """Check, store and start ``job``; the job as stored. InvalidError (its fields, or its
        first trial's), NotFoundError (the trials' runtime), ConfigError, AlreadyExistsError."""
        from trainjob.api.optimization import parse_optimization_job
        from trainjob.api.optimization_validation import sample_values
        from trainjob.local.client.admission import new_uid
        from trainjob.optimizer import template

        job = parse_optimization_job(job.to_dict())  # validated as a created object is
        meta = job.metadata
        meta.namespace = meta.namespace or DEFAULT_NAMESPACE
        meta.name = meta.name or _generated(meta.generate_name)
        sweep_dir(self.home, meta.namespace, meta.name)  # a name that is a path component
        meta.uid = new_uid()
        meta.creation_timestamp = times.now()
        meta.generation = meta.generation or 1
        job.status = None
        run_dir = os.path.abspath(cwd or os.getcwd())
        if workspace is not None:  # one copy for every trial, kept while the job is stored
            from trainjob.local.client import workspaces

            workspaces.stage(self.home, workspace, self.store)
        first = template.render_trial(job, 0, sample_values(job.spec.parameters))
        self._trials.check(first, cwd=run_dir)
        row = SweepRow(
            namespace=meta.namespace,
            name=meta.name,
            uid=meta.uid,
            created=meta.creation_timestamp,
            created_ts=time.time(),
            job=json.dumps(job.to_dict()),
            status="{}",
            phase=sweeps.CREATED,
            cwd=run_dir,
            runner=self.runner,
        )
        sweep_store.insert(self.store, row)
        try:
            self._start(row)
        except (OSError, ConfigError) as e:
            sweep_store.delete(self.store, row.namespace, row.name, row.uid)
            raise ConfigError(f"cannot start the local sweep supervisor: {e}") from e
        # The first pass here, while the supervisor loads: the first trials start now (a pass
        # is level-triggered: the supervisor's next one finds them made).
        from trainjob.local.client.sweep_supervisor import sync_and_write
        from trainjob.optimizer.driver import Driver

        sync_and_write(self.store, Driver(self._trials, cwd=run_dir), job, {})
        return self.get(meta.name, meta.namespace)

    def _row(self, name: str, namespace: str) -> SweepRow:
        row = sweep_store.get(self.store, namespace, name)
        if row is None:
            raise NotFoundError(f'{sweeps.PLURAL}.{c.GROUP} "{name}" not found')
        return self._check_alive(row)

    def _check_alive(self, row: SweepRow) -> SweepRow:
        """Start a new supervisor for a live job whose supervisor is gone (it picks up where
        the old one was); the current row."""
        _reap()
        if row.phase in sweeps.FINISHED or row.deleting:
            return row
        if row.supervisor_pid is None:
            if time.time() - row.created_ts < START_GRACE:
                return row
        elif procs.alive(row.supervisor_pid, row.supervisor_start):
            return row
        try:
            self._start(row)
        except (OSError, ConfigError):
            return row  # the next read tries again
        return sweep_store.get(self.store, row.namespace, row.name) or row

    def _start(self, row: SweepRow) -> None:
        """Start a supervisor for ``row`` and record it, unless another client recorded one
        first (then the new one sees it is not the job's and exits)."""
        import subprocess

        d = files.private_dirs(self.home, sweep_dir(self.home, row.namespace, row.name))
        argv = [
            sys.executable, "-m", "trainjob.local.client.sweep_supervisor", "--home", str(self.home),
            "--namespace", row.namespace, "--name", row.name, "--uid", row.uid,
        ]  # fmt: skip
        out = files.open_private(d / "supervisor.log")
        with os.fdopen(out, "ab") as log:
            proc = subprocess.Popen(
                argv,
                cwd=row.cwd if os.path.isdir(row.cwd) else None,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        _STARTED.append(proc)
        sweep_store.update(
            self.store, row.namespace, row.name, row.uid,
            expect=(("supervisor_pid", row.supervisor_pid),
                    ("supervisor_start", row.supervisor_start)),
            supervisor_pid=proc.pid, supervisor_start=procs.start_time(proc.pid),
        )  # fmt: skip

    def get(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> OptimizationJob:
        from trainjob.api.optimization import parse_optimization_job

        return parse_optimization_job(self._row(name, namespace).object())

    def list(self, namespace: str | None = None) -> list[OptimizationJob]:
        from trainjob.api.optimization import parse_optimization_job

        return [
            parse_optimization_job(self._check_alive(r).object())
            for r in sweep_store.listed(self.store, namespace)
        ]

    def events(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> builtins.list[Event]:
        row = self._row(name, namespace)
        return [
            Event(
                str(e.get("type", "Normal")),
                str(e.get("reason", "")),
                str(e.get("message", "")),
                str(e.get("timestamp", "")),
                str(e.get("involvedKind", sweeps.KIND)),
                str(e.get("involvedName", name)),
            )
            for e in row.event_list()
        ]

    def delete(self, name: str, namespace: str = DEFAULT_NAMESPACE, *, purge: bool = False) -> None:
        """Stop the supervisor, delete every trial (outputs kept unless ``purge``), the job."""
        row = sweep_store.get(self.store, namespace, name)
        if row is None:
            raise NotFoundError(f'{sweeps.PLURAL}.{c.GROUP} "{name}" not found')
        sweep_store.update(self.store, namespace, name, row.uid, deleting=1)
        pid, token = row.supervisor_pid, row.supervisor_start
        if pid and not procs.wait_gone(pid, token, timeout=3.0):  # it exits within a tick
            procs.kill_group(pid)
            procs.wait_gone(pid, token, timeout=5.0)
        for trial in trial_names(self._trials, name, namespace, row.uid):
            with contextlib.suppress(NotFoundError):
                self._trials.delete(trial, namespace, purge=purge)
        files.remove_tree(self.home, sweep_dir(self.home, namespace, name))
        sweep_store.delete(self.store, namespace, name, row.uid)


def trial_names(trials: LocalExecutor, name: str, namespace: str, uid: str) -> list[str]:
    """The TrainJobs that are trials of the job ``name`` of ``uid``."""
    out = []
    for s in trials.states(namespace, pods=False):
        meta = s.trainjob.get("metadata") or {}
        if (meta.get("labels") or {}).get(c.LABEL_OPTIMIZATION_JOB) != name:
            continue
        owners = meta.get("ownerReferences") or ()
        if owners and not any(o.get("uid") == uid for o in owners):
            continue
        out.append(s.name)
    return out


def _generated(prefix: str | None) -> str:
    """A name from ``generateName`` (5 random characters after it, as the apiserver's)."""
    import secrets

    if not prefix:
        raise InvalidError(
            [FieldError.required("metadata.name", "name or generateName is required")],
            f"{sweeps.KIND}.{c.GROUP}",
        )
    return prefix + "".join(secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))


def _reap() -> None:
    _STARTED[:] = [p for p in _STARTED if p.poll() is None]
