"""``LocalExecutor``: run TrainJobs on this machine, the API the SDK and the CLI call.

Submitting validates and compiles the TrainJob with the one compiler (field errors before anything
starts, :mod:`trainjob.local.client.admission`), checks that every command can run here, stores the job in
the SQLite store under ``$TRAINJOB_HOME`` (default ``~/.trainjob``) and starts a detached
supervisor process (:mod:`trainjob.local.client.launch`, :mod:`trainjob.local.job.supervisor`) that runs the
Plan's JobSet as local processes and writes status, events and logs. Every other method reads or
changes the store (rows as the job model: :mod:`trainjob.local.client.views`); a supervisor that died is
noticed here (its pid and start time no longer match a live process) and its job is marked Failed
with reason ``SupervisorDied`` and its processes stopped (:mod:`trainjob.local.client.liveness`), so a
job never stays Running forever. Logs are followed by :mod:`trainjob.local.client.follow`, jobs deleted by
:mod:`trainjob.local.client.deletion`, runtimes kept by :mod:`trainjob.local.client.runtimes`.

Callers: ``trainjob.client`` (the local backend of TrainerClient) and ``trainjob.cli.jobs``.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainjob.api import constants as c
from trainjob.core import lifetime, times
from trainjob.errors import ConfigError, NotFoundError
from trainjob.executor import model as st
from trainjob.executor.base import Executor
from trainjob.executor.model import Event, JobState, MetricSample, PodState
from trainjob.local.client import liveness, views
from trainjob.local.state import home as homes
from trainjob.local.state import logfiles, status
from trainjob.local.state.home import DEFAULT_NAMESPACE
from trainjob.local.state.rows import StoredObject, listing_summary
from trainjob.local.state.store import JobRow, Store

if TYPE_CHECKING:  # the models (pydantic) and the compiler load when a job is submitted
    import logging

    from trainjob.api.trainer import Runtime, TrainJob
    from trainjob.workspace.pack import Snapshot

__all__ = ["DEFAULT_NAMESPACE", "LocalExecutor"]


def _log() -> logging.Logger:
    """This module's logger; logging loads on the first message (a listing seldom has one)."""
    import logging

    return logging.getLogger(__name__)


_LIVE = liveness.LIVE


class LocalExecutor(Executor):
    """Jobs of one ``home`` directory (``$TRAINJOB_HOME``, else ``~/.trainjob``).

    Any number of executors, in any number of processes, may share a home; one executor's store
    connection stays in the thread that opened it (open one executor per thread).
    """

    backend = "local"
    keeps_metric_history = True
    poll_interval = 0.1

    def __init__(self, home: Path | None = None, runner: str = "") -> None:
        """``runner``: how the jobs submitted through it run their pods, as stored with each job
        (:func:`trainjob.local.job.runner.runner_for`): ``""`` as processes, else a container
        backend's settings (``ContainerSettings.to_json()``). Every other verb acts on any job
        of the home, however it runs."""
        self.home = Path(home) if home is not None else homes.default_home()
        self.store = Store(homes.db_path(self.home))
        self.runner = runner
        self._skipped: set[tuple[str, str, str]] = set()  # damaged rows reported already
        # Pods and event of a job found dead that the store could not record (a full disk).
        self._unwritten: liveness.Unwritten = {}
        self._runtime_ttl: dict[str, int | None] = {}  # uid -> its runtime's runPolicy TTL

    @property
    def default_namespace(self) -> str:
        return DEFAULT_NAMESPACE

    # -- jobs ---------------------------------------------------------------------------------

    def submit(
        self,
        trainjob: TrainJob,
        runtimes: Sequence[Runtime] = (),
        *,
        cwd: str | None = None,
        workspace: Snapshot | None = None,
    ) -> TrainJob:
        """Validate, compile, store and start ``trainjob``; return it as stored.

        ``workspace``: the snapshot the TrainJob's annotations name, unpacked once per digest
        under the home (:mod:`trainjob.local.client.workspaces`) before the job is checked.

        ``runtimes`` are looked up before the stored and built-in ones. ``cwd`` is where the
        containers' commands run (default: this process's working directory). Raises
        InvalidError / NotFoundError (bad spec or runtime, unknown runtime, more than this
        machine runs), ConfigError (a command that cannot run here) and AlreadyExistsError
        before anything starts.
        """
        from trainjob.local.client import admission
        from trainjob.local.client.launch import start_supervisor

        if workspace is not None:
            from trainjob.local.client import workspaces

            workspaces.stage(self.home, workspace, self.store)
        tj, runtime_dict, plan, run_dir, first_pods = admission.prepare(
            self.home, self.store, self.runner, trainjob, runtimes, cwd
        )
        meta = tj.metadata
        ns, name, uid = meta.namespace or DEFAULT_NAMESPACE, meta.name or "", meta.uid or ""
        created = times.now()
        meta.creation_timestamp = created
        meta.generation = meta.generation or 1
        tj.status = None
        suspend = bool(tj.spec.suspend)
        job_status: dict[str, object] = {}
        if suspend:
            status.suspended(job_status, created)
        row = JobRow(
            namespace=ns,
            name=name,
            uid=uid,
            created=created,
            created_ts=time.time(),
            trainjob=json.dumps(tj.to_dict()),
            runtime=json.dumps(runtime_dict),
            plan=json.dumps(list(plan.objects)),
            cwd=run_dir,
            phase=st.SUSPENDED if suspend else st.CREATED,
            status=json.dumps(job_status),
            suspend=int(suspend),
            runner=self.runner,
        )
        self.exists(name, ns)  # a finished job of that name whose TTL ran out goes first
        self.store.insert_job(row)
        self.store.put_pods(first_pods)
        try:
            start_supervisor(self.home, self.store, row)
        except ConfigError:  # its files cannot be made safely (a link planted in the home)
            self.store.delete_job(ns, name, row.uid)
            raise
        except OSError as e:
            self.store.delete_job(ns, name, row.uid)
            raise ConfigError(f"cannot start the local supervisor: {e}") from e
        return self.get(name, ns)

    def check(
        self, trainjob: TrainJob, runtimes: Sequence[Runtime] = (), *, cwd: str | None = None
    ) -> None:
        """Every check :meth:`submit` makes, without storing or starting anything (so that
        ``trainjob run`` with several TrainJobs refuses them all before submitting any)."""
        from trainjob.local.client import admission

        admission.prepare(self.home, self.store, self.runner, trainjob, runtimes, cwd)

    def _row(self, name: str, namespace: str) -> JobRow:
        row = self.store.job(namespace, name)
        if row is None:
            raise NotFoundError(f'trainjobs.{c.GROUP} "{name}" not found')
        problem = views.problem(row)
        if problem:
            raise ConfigError(self._unreadable(row, problem))
        if row.phase in st.FINISHED and self._expired(
            namespace, name, row.uid, views.job_object(row.trainjob, row.status)
        ):
            raise NotFoundError(f'trainjobs.{c.GROUP} "{name}" not found')
        return self._check_alive(row)

    def _expired(self, namespace: str, name: str, uid: str, trainjob: dict[str, Any]) -> bool:
        """Delete a finished job whose TTL ran out (``ttlSecondsAfterFinished``, else its
        runtime's ``runPolicy``'s; counted from its Complete/Failed condition), keeping its
        outputs; True when it was. Checked whenever the job is read, so it holds across
        restarts of anything: the count is the stored status's."""
        ttl = (trainjob.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None:
            if uid not in self._runtime_ttl:
                row = self.store.job(namespace, name)
                runtime = json.loads(row.runtime) if row is not None and row.runtime else None
                self._runtime_ttl[uid] = lifetime.ttl_seconds({}, runtime)
            ttl = self._runtime_ttl[uid]
        ttl = None if ttl is None else int(ttl)
        return self._ttl_ran_out(namespace, name, ttl, lifetime.finished_at(trainjob))

    def _ttl_ran_out(self, namespace: str, name: str, ttl: int | None, done: float | None) -> bool:
        """Delete a job finished at ``done`` whose ``ttl`` (seconds, None: none) ran out."""
        if ttl is None or done is None or done + ttl > time.time():
            return False
        _log().info(
            "deleting TrainJob %s/%s: its ttlSecondsAfterFinished (%ss) ran out",
            namespace,
            name,
            ttl,
        )
        with contextlib.suppress(NotFoundError):
            self.delete(name, namespace)
        return True

    def _unreadable(self, row: JobRow, problem: str) -> str:
        return (
            f"TrainJob {row.namespace}/{row.name} in the job store {self.store.path} is "
            f"unreadable ({problem}): remove it with trainjob delete {row.name} -n {row.namespace}"
        )

    def _skip(self, row: JobRow, problem: str) -> None:
        """A damaged row is reported (once per executor) and left out, never hides the others."""
        key = (row.namespace, row.name, row.uid)
        if key not in self._skipped:
            self._skipped.add(key)
            _log().warning("warning: skipping %s", self._unreadable(row, problem))

    def _check_alive(self, row: JobRow) -> JobRow:
        """Fail a live-phase job whose supervisor is gone (:mod:`trainjob.local.client.liveness`);
        return the current row."""
        return liveness.check_alive(self.store, self.home, row, self._unwritten)

    def exists(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> bool:
        """Whether a TrainJob of that name is stored (running or finished, its TTL not run out)."""
        row = self.store.job(namespace, name)
        if row is None:
            return False
        if row.phase in st.FINISHED and not views.problem(row):
            return not self._expired(
                namespace, name, row.uid, views.job_object(row.trainjob, row.status)
            )
        return True

    def get(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> TrainJob:
        """The stored TrainJob with its status (conditions, jobsStatus) as the cluster shows it."""
        return views.trainjob_of(self._row(name, namespace))

    def state(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> JobState:
        """The job's phase (Created|Running|Complete|Failed|Suspended), times, pods and TrainJob."""
        row = self._row(name, namespace)
        return views.job_state(row, self._pods(row), views.job_object(row.trainjob, row.status))

    def _pods(self, row: JobRow) -> tuple[PodState, ...]:
        pod_rows = self.store.pods(row.namespace, row.name)
        if row.uid in self._unwritten and row.phase == st.FAILED:
            pod_rows = self._unwritten[row.uid][0]
        return tuple(views.pod_state(p) for p in pod_rows if p.uid == row.uid)

    def states(self, namespace: str | None = None, *, pods: bool = True) -> list[JobState]:
        """Every job's state (of ``namespace``, or all), oldest first, in one or two queries; each
        with its TrainJob without ``spec.trainer.command``/``args`` (they can be large: a shipped
        function), and with its pods when ``pods``. A damaged row is reported on stderr (once)
        and left out: it never hides the others."""
        by_job: dict[tuple[str, str, str], list[PodState]] = {}
        if pods:
            for p in self.store.pods_in(namespace):
                by_job.setdefault((p.namespace, p.name, p.uid), []).append(views.pod_state(p))
        out = []
        for r in self.store.listing(namespace):
            ns, name, uid, created, phase, reason, message, started, completed, restarts = r[:10]
            runtime_ref, nodes, job_ttl, runtime_ttl, finished_at = r[10:15]
            summary = listing_summary(runtime_ref, nodes, *r[15:19])
            text, status, whole = r[19:]
            if not whole or not isinstance(restarts, int):
                damaged = self.store.job(ns, name)
                if damaged is not None:
                    self._skip(damaged, views.problem(damaged) or "its TrainJob is not JSON")
                continue
            if phase in st.FINISHED:
                ttl = job_ttl if job_ttl is not None else runtime_ttl
                if self._ttl_ran_out(ns, name, ttl, finished_at):
                    continue
            if phase in _LIVE:
                row = self.store.job(ns, name)
                if row is None or row.uid != uid:
                    continue
                problem = views.problem(row)
                if problem:
                    self._skip(row, problem)
                    continue
                row = self._check_alive(row)
                if row.phase != phase:  # its supervisor died: read it again
                    dead = self.state(name, ns)
                    out.append(dead if pods else dead.replace(pods=()))
                    continue
            state = JobState(
                name=name, namespace=ns, phase=phase, created=created, started=started,
                completed=completed, restarts=restarts, reason=reason, message=message,
                pods=tuple(by_job.get((ns, name, uid), ())), trainjob=StoredObject(text, status),
                summary=summary,
            )  # fmt: skip
            out.append(state)
        return out

    def events(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> list[Event]:
        """The job's events, oldest first."""
        row = self._row(name, namespace)
        event_rows = self.store.events(namespace, name)
        if row.uid in self._unwritten and row.phase == st.FAILED:
            event_rows.append(self._unwritten[row.uid][1])
        return [
            Event(e.type, e.reason, e.message, e.timestamp, e.involved_kind, e.involved_name)
            for e in event_rows
            if e.uid == row.uid
        ]

    def metric_history(
        self, name: str, namespace: str = DEFAULT_NAMESPACE, *, since: int = 0
    ) -> list[MetricSample]:
        """Every progress report the job's training made (``update_trainjob_status``, the
        Kubeflow SDK's helper, transformers' KubeflowCallback), oldest first, without the first
        ``since``: the curves. The newest 10,000 are kept."""
        row = self._row(name, namespace)
        reports = self.store.reports(namespace, name, row.uid)
        if not reports:  # a job stored before reports were kept: its latest, as on a cluster
            return super().metric_history(name, namespace, since=since)
        return [
            MetricSample(r.time, json.loads(r.metrics), r.progress, r.eta)
            for r in reports[max(0, since) :]
        ]

    def log_location(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> str | None:
        """The folder of the job's log files."""
        return str(homes.logs_dir(self.home, namespace, name))

    def log_path(
        self, name: str, namespace: str = DEFAULT_NAMESPACE, job: str = "node", index: int = 0,
        job_index: int = 0,
    ) -> Path:  # fmt: skip
        """Where one pod's log is written."""
        return homes.log_path(self.home, namespace, name, job, index, job_index)

    def logs(
        self,
        name: str,
        namespace: str = DEFAULT_NAMESPACE,
        job: str = "node",
        index: int = 0,
        follow: bool = False,
        *,
        job_index: int = 0,
        tail: int | None = None,
        previous: bool = False,
        timestamps: bool = False,
    ) -> Iterator[str]:
        """Lines (without newline) of one pod's log.

        With ``follow``, waits for a pending pod, yields lines as they are written, goes on with
        the new log when the pod is restarted (backoffLimit, JobSet restart, resume) and ends
        when the pod ends. ``tail``, ``previous`` and ``timestamps``: :mod:`trainjob.local.
        logfiles` (the last lines, the attempt before a restart, when each line was written).
        """
        row = self._row(name, namespace)
        pods = self._pods(row)
        known = {(p.job, p.index, p.job_index) for p in pods}
        if known and (job, index, job_index) not in known:
            steps = ", ".join(sorted(f"{j}-{i}" for j, i, _ in known))
            raise NotFoundError(f'pod {job}-{index} of TrainJob "{name}" not found (pods: {steps})')
        path = self.log_path(name, namespace, job, index, job_index)
        if previous:
            pod = next((p.name for p in pods if (p.job, p.index, p.job_index) == (job, index,
                        job_index)), f"{name}-{job}-{index}")  # fmt: skip
            path = logfiles.previous(path, job, pod)
            follow = False
        start = logfiles.tail_offset(path, tail) if tail is not None else 0
        if follow:
            from trainjob.local.client import follow as followers

            return followers.follow(
                self.store, self._check_alive, row, path, job, index, job_index, start, timestamps
            )
        return logfiles.read(path, start, timestamps)

    def _set_suspend(self, name: str, namespace: str, value: bool) -> TrainJob:
        row = self._row(name, namespace)
        data = row.trainjob_dict()
        data.setdefault("spec", {})["suspend"] = value
        self.store.update_job(
            namespace, name, row.uid, trainjob=json.dumps(data), suspend=int(value)
        )
        if row.phase in _LIVE:
            self._await_phase(row, value)
        return self.get(name, namespace)

    def _await_phase(self, row: JobRow, suspend: bool, timeout: float = 60.0) -> None:
        """Wait for the supervisor to act on a suspend/resume (so callers see the new phase).
        Generous (60 s; 10 s before): pods that ignore SIGTERM get a grace period, then the
        supervisor removes every process and container before it writes Suspended, which a
        loaded machine can make take well over 10 s; it returns as soon as the phase changes,
        the job finishes or its supervisor is found dead."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            cur = self._check_alive(self.store.job(row.namespace, row.name) or row)
            if cur.phase in st.FINISHED or (cur.phase == st.SUSPENDED) == suspend:
                return
            time.sleep(0.05)

    def annotate(
        self, name: str, namespace: str, annotations: Mapping[str, str | None]
    ) -> TrainJob:
        """Set (a None value: remove) annotations of the stored TrainJob."""
        row = self._row(name, namespace)
        data = row.trainjob_dict()
        meta = data.setdefault("metadata", {})
        kept = {**(meta.get("annotations") or {}), **annotations}
        meta["annotations"] = {k: v for k, v in kept.items() if v is not None}
        self.store.update_job(namespace, name, row.uid, trainjob=json.dumps(data))
        return self.get(name, namespace)

    def scale(self, name: str, namespace: str, num_nodes: int) -> TrainJob:
        """Set an elastic job's ``spec.trainer.numNodes`` (and bump its generation): its
        supervisor adds or stops nodes (:mod:`trainjob.local.client.scaling`)."""
        from trainjob.local.client import scaling

        row = self._row(name, namespace)
        data = scaling.scaled(row, num_nodes)
        self.store.update_job(namespace, name, row.uid, trainjob=json.dumps(data))
        return self.get(name, namespace)

    def suspend(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> TrainJob:
        """Set ``spec.suspend``: running pods are stopped, the job is Suspended."""
        return self._set_suspend(name, namespace, True)

    def resume(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> TrainJob:
        """Clear ``spec.suspend``: pods start again from scratch (deadline clock restarts)."""
        return self._set_suspend(name, namespace, False)

    def outputs(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> tuple[st.Output, ...]:
        """The job's kept outputs (:mod:`trainjob.local.job.outputs`): its ``output_dir``, then each
        volume under ``$TRAINJOB_HOME/outputs/NS/NAME/RUN`` or ``claims/NS``."""
        row = self.store.job(namespace, name)
        if row is None:
            raise NotFoundError(f'trainjobs.{c.GROUP} "{name}" not found')
        from trainjob.local.job import outputs, pods
        from trainjob.runtime.plan import Plan

        try:
            plan = Plan(tuple(json.loads(row.plan)))
            keep = outputs.kept(plan, self.home, namespace, name, row.created, row.uid)
            return tuple(outputs.describe(plan, keep, row.uid))
        except (ValueError, TypeError, KeyError, AttributeError, ConfigError, pods.PodConfigError):
            return ()  # an unreadable row (delete removes it) or a claim no directory can have

    def delete(self, name: str, namespace: str = DEFAULT_NAMESPACE, *, purge: bool = False) -> None:
        """Stop the job's processes and remove it, its logs and its scratch volumes. Its outputs
        (a run's directory under ``outputs/``) stay unless ``purge``; a claim's (``claims/``),
        which other jobs may share, always stays."""
        row = self.store.job(namespace, name)
        if row is None:
            raise NotFoundError(f'trainjobs.{c.GROUP} "{name}" not found')
        from trainjob.local.client import deletion

        deletion.delete(self.store, self.home, row, purge=purge)

    # -- runtimes -----------------------------------------------------------------------------

    def list_runtimes(self, namespace: str | None = None) -> list[Runtime]:
        """Built-in ClusterTrainingRuntimes, then stored runtimes (a stored one wins by name);
        TrainingRuntimes of ``namespace`` only, when given."""
        from trainjob.local.client import runtimes as local_runtimes

        return local_runtimes.listed(self.store, namespace)

    def runtime_objects(self, namespace: str | None = None) -> list[Mapping[str, Any]]:
        """:meth:`list_runtimes` as plain objects, without YAML or pydantic: the built-in ones
        from the home's JSON copy of their files (:func:`trainjob.executor.catalog.builtin_documents`),
        the stored ones as stored (validated when applied)."""
        from trainjob.local.client import runtimes as local_runtimes
        from trainjob.local.state import files

        cache = homes.cache_dir(self.home)
        try:
            files.private_dirs(self.home, cache)
        except (OSError, ConfigError):  # a read-only home, a link: read the files each time
            return local_runtimes.listed_objects(self.store, None, namespace)
        return local_runtimes.listed_objects(self.store, cache, namespace)

    def get_runtime(
        self, name: str, kind: str = c.CLUSTER_TRAINING_RUNTIME_KIND, namespace: str | None = None
    ) -> Runtime:
        """One runtime by name (NotFoundError when absent)."""
        from trainjob.local.client import runtimes as local_runtimes

        return local_runtimes.find(self.store, name, kind, namespace)

    def apply_runtime(self, runtime: Runtime) -> Runtime:
        """Store (create or replace) a runtime so later submits can refer to it."""
        from trainjob.local.client import runtimes as local_runtimes

        return local_runtimes.apply(self.store, runtime)
