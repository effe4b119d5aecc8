"""``LocalExecutor``: run TrainJobs on this machine, the API the SDK and the CLI call.

Submitting validates and compiles the TrainJob with the one compiler (field errors before anything
starts), checks that every command can run here, stores the job in the SQLite store under
``$TRAINJOB_HOME`` (default ``~/.trainjob``) and starts a detached supervisor process
(:mod:`trainjob.local.supervisor`) that runs the Plan's JobSet as local processes and writes status,
events and logs. Every other method reads or changes the store; a supervisor that died is noticed
here (its pid and start time no longer match a live process) and its job is marked Failed with
reason ``SupervisorDied`` and its processes stopped, so a job never stays Running forever.

Callers: ``trainjob.client`` (the local backend of TrainerClient) and ``trainjob.cli.jobs``.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import logging
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from trainjob import catalog
from trainjob.api import constants as c
from trainjob.api import validation
from trainjob.api.base import to_dict
from trainjob.api.load import parse
from trainjob.api.trainer import ClusterTrainingRuntime, Runtime, TrainingRuntime, TrainJob
from trainjob.core import lifetime, times
from trainjob.errors import ConfigError, FieldError, InvalidError, NotFoundError
from trainjob.executor import model as st
from trainjob.executor.base import Executor
from trainjob.executor.model import Event, JobState, MetricSample, PodState
from trainjob.local import (
    files,
    limits,
    logfiles,
    mpi,
    outputs,
    podrun,
    pods,
    procs,
    ptree,
    status,
)
from trainjob.local import home as homes
from trainjob.local import runner as runners
from trainjob.local.rows import StoredObject, listing_summary
from trainjob.local.store import EventRow, JobRow, PodRow, Store, StoreFullError
from trainjob.runtime import CompileOptions, compile, kinds
from trainjob.runtime.plan import Plan

log = logging.getLogger(__name__)
DEFAULT_NAMESPACE = "default"
_LIVE = (st.CREATED, st.RUNNING, st.SUSPENDED)
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_CHUNK = 1 << 16  # bytes a follower reads at a time
_START_GRACE = 60.0  # seconds a stored job may wait for its supervisor to record its pid
# Supervisors this process started: kept so that they are reaped (no zombies, no warnings).
_STARTED: list[subprocess.Popen[bytes]] = []


def _reap() -> None:
    _STARTED[:] = [p for p in _STARTED if p.poll() is None]


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
        (:func:`trainjob.local.runner.runner_for`): ``""`` as processes, else a container
        backend's settings (``ContainerSettings.to_json()``). Every other verb acts on any job
        of the home, however it runs."""
        self.home = Path(home) if home is not None else homes.default_home()
        self.store = Store(homes.db_path(self.home))
        self.runner = runner
        self._skipped: set[tuple[str, str, str]] = set()  # damaged rows reported already
        # Pods and event of a job found dead that the store could not record (a full disk).
        self._unwritten: dict[str, tuple[list[PodRow], EventRow]] = {}
        self._runtime_ttl: dict[str, int | None] = {}  # uid -> its runtime's runPolicy TTL

    @property
    def default_namespace(self) -> str:
        return DEFAULT_NAMESPACE

    # -- jobs ---------------------------------------------------------------------------------

    def submit(
        self, trainjob: TrainJob, runtimes: Sequence[Runtime] = (), *, cwd: str | None = None
    ) -> TrainJob:
        """Validate, compile, store and start ``trainjob``; return it as stored.

        ``runtimes`` are looked up before the stored and built-in ones. ``cwd`` is where the
        containers' commands run (default: this process's working directory). Raises
        InvalidError / NotFoundError (bad spec or runtime, unknown runtime, more than this
        machine runs), ConfigError (a command that cannot run here) and AlreadyExistsError
        before anything starts.
        """
        tj, runtime_dict, plan, run_dir, first_pods = self._prepare(trainjob, runtimes, cwd)
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
            self._start_supervisor(row)
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
        self._prepare(trainjob, runtimes, cwd)

    def _prepare(
        self, trainjob: TrainJob, runtimes: Sequence[Runtime], cwd: str | None
    ) -> tuple[TrainJob, dict[str, object], Plan, str, list[PodRow]]:
        """The TrainJob to store (named, with a uid), its runtime as a dict, its Plan, its working
        directory and its first pod rows, once it passes every check (:func:`catalog.admit`:
        the same rules as ``trainjob plan`` and the webhooks; this machine's limits; commands)."""
        tj = trainjob.model_copy(deep=True)
        meta = tj.metadata
        meta.namespace = meta.namespace or DEFAULT_NAMESPACE
        if not meta.name:
            if not meta.generate_name:
                raise InvalidError(
                    [FieldError.required("metadata.name", "name or generateName is required")],
                    f"{c.TRAINJOB_KIND}.{c.GROUP}",
                )
            meta.name = meta.generate_name + "".join(secrets.choice(_NAME_CHARS) for _ in range(5))
        # Also checks the namespace, which names a directory under $TRAINJOB_HOME ("../.." never
        # passes).
        runtime = catalog.admit(tj, [*runtimes, *self._stored_runtimes()])
        options = CompileOptions()
        policy = runtime.spec.ml_policy
        if policy is not None and policy.mpi is not None:
            from trainjob import keys

            private, public = keys.generate_ssh_key_pair()
            options = CompileOptions(ssh_private_key=private, ssh_public_key=public)
        plan = _local_plan(compile(tj, runtime, options))
        limits.check(plan, tj)
        run_dir = os.path.abspath(cwd or os.getcwd())
        runtime_dict = to_dict(runtime)
        meta.uid = _uid()
        first_pods = self._preflight(
            plan, runtime_dict, meta.namespace, meta.name, meta.uid, run_dir
        )
        return tj, runtime_dict, plan, run_dir, first_pods

    def _preflight(
        self, plan: Plan, runtime: dict[str, object], ns: str, name: str, uid: str, cwd: str
    ) -> list[PodRow]:
        """Check that every pod that will run can run here (its command exists; on the
        container backend, its image can be had); its Pending rows."""
        problems = runners.runner_for(self.runner, (ns, name, uid)).check(
            plan, runtime, self.home, ns, cwd
        )
        if problems:
            raise ConfigError("; ".join(problems))
        plan = Plan(tuple(copy.deepcopy(list(plan.objects))))
        local_mpi = mpi.adapt(plan, runtime) if not self.runner else None
        templates = pods.pod_templates(plan, uid)
        rows: list[PodRow] = []
        for t in templates:
            skipped = bool(local_mpi and local_mpi.skips(t))
            rows.append(
                PodRow(
                    ns,
                    name,
                    uid,
                    t.job,
                    t.job_index,
                    t.index,
                    t.name,
                    st.POD_PENDING,
                    message=mpi.SKIPPED_MESSAGE if skipped else "",
                )
            )
        return rows

    def _start_supervisor(self, row: JobRow) -> None:
        jdir = homes.job_dir(self.home, row.namespace, row.name)
        files.remove_tree(self.home, jdir)  # a previous job's files (never through a link)
        files.private_dirs(self.home, jdir / "logs")
        argv = [
            sys.executable, "-m", "trainjob.local.supervisor",
            "--home", str(self.home), "--namespace", row.namespace,
            "--name", row.name, "--uid", row.uid,
        ]  # fmt: skip
        out = files.open_private(homes.supervisor_log(self.home, row.namespace, row.name))
        with os.fdopen(out, "ab") as sup_log:
            proc = subprocess.Popen(
                argv,
                cwd=row.cwd,
                stdin=subprocess.DEVNULL,
                stdout=sup_log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        _reap()
        _STARTED.append(proc)
        token = procs.start_time(proc.pid)
        self.store.update_job(
            row.namespace, row.name, row.uid, supervisor_pid=proc.pid, supervisor_start=token
        )

    def _row(self, name: str, namespace: str) -> JobRow:
        row = self.store.job(namespace, name)
        if row is None:
            raise NotFoundError(f'trainjobs.{c.GROUP} "{name}" not found')
        problem = _problem(row)
        if problem:
            raise ConfigError(self._unreadable(row, problem))
        if row.phase in st.FINISHED and self._expired(
            namespace, name, row.uid, _object(row.trainjob, row.status)
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
        log.info(
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
            log.warning("warning: skipping %s", self._unreadable(row, problem))

    def _check_alive(self, row: JobRow) -> JobRow:
        """Fail a live-phase job whose supervisor is gone; return the current row."""
        _reap()
        if row.phase not in _LIVE:
            return row
        if row.supervisor_pid is None:
            # Submitted, and its supervisor not started yet, or never (the client died between
            # storing the job and starting it): a supervisor records its pid within a second.
            if time.time() - row.created_ts < _START_GRACE:
                return row
        elif procs.alive(row.supervisor_pid, row.supervisor_start):
            return row
        failed = self._fail_dead(row)
        cur = self.store.job(row.namespace, row.name)
        if cur is None or (cur.uid == row.uid and cur.phase in _LIVE):
            return failed  # deleted meanwhile, or the store could not be written
        return cur

    def _fail_dead(self, row: JobRow) -> JobRow:
        """Stop a dead supervisor's processes and record the job Failed; the Failed row.

        When the store cannot be written (a full disk) the row is returned unwritten, so that
        readers still see the job Failed; the next reader records it once there is room.
        """
        for p in self.store.pods(row.namespace, row.name):
            if p.pid and procs.alive(p.pid, p.pid_start):
                procs.kill_group(p.pid)
        ptree.end(self._job_processes(row), grace=0)  # every process of the job, any session
        runners.clean_up(row.runner, row.namespace, row.name, row.uid)
        ts = times.now()
        log = homes.supervisor_log(self.home, row.namespace, row.name)
        if row.supervisor_pid is None:
            message = (
                "the local supervisor never started (the client that submitted the job exited "
                "first); submit it again"
            )
        else:
            message = (
                f"the local supervisor (pid {row.supervisor_pid}) exited while the job was "
                f"{row.phase}; its processes were stopped (see {log})"
            )
        message += homes.disk_full_note(self.home)
        job_status = row.status_dict()
        status.failed(job_status, status.REASON_SUPERVISOR_DIED, message, ts)
        for counts in job_status.get("jobsStatus") or ():
            counts.update(active=0, ready=0)  # its processes are stopped
        pods_now = [
            p.__class__(
                **{
                    **p.__dict__,
                    "phase": st.POD_FAILED,
                    "pid": None,
                    "finished": ts,
                    "ready": False,
                }
            )
            if p.phase in (st.POD_PENDING, st.POD_RUNNING)
            else p
            for p in self.store.pods(row.namespace, row.name)
        ]
        event = EventRow(
            row.namespace, row.name, row.uid, "Warning", status.REASON_SUPERVISOR_DIED,
            message, ts, "TrainJob", row.name,
        )  # fmt: skip
        failed: dict[str, Any] = {
            "phase": st.FAILED,
            "reason": status.REASON_SUPERVISOR_DIED,
            "message": message,
            "status": json.dumps(job_status),
            "completed": ts,
        }
        try:
            self.store.write_status(
                row.namespace, row.name, row.uid, pods=pods_now, events=[event], **failed
            )
        except StoreFullError:
            self._unwritten[row.uid] = (pods_now, event)
        return dataclasses.replace(row, **failed)

    def _job_processes(self, row: JobRow) -> ptree.Procs:
        """Every process of ``row``'s job still running: those carrying its mark, and those its
        supervisor last recorded (one that cleared its environment and left its session)."""
        found = ptree.owned(f"{row.uid}/")
        with contextlib.suppress(ConfigError):  # a row no valid job dir belongs to
            found.update(ptree.recorded(homes.processes_file(self.home, row.namespace, row.name)))
        return found

    def _trainjob(self, row: JobRow) -> TrainJob:
        text = row.trainjob
        if row.status not in ("{}", ""):
            text = text[: text.rindex("}")] + ', "status": ' + row.status + "}"
        return TrainJob.model_validate_json(text)

    def exists(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> bool:
        """Whether a TrainJob of that name is stored (running or finished, its TTL not run out)."""
        row = self.store.job(namespace, name)
        if row is None:
            return False
        if row.phase in st.FINISHED and not _problem(row):
            return not self._expired(namespace, name, row.uid, _object(row.trainjob, row.status))
        return True

    def get(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> TrainJob:
        """The stored TrainJob with its status (conditions, jobsStatus) as the cluster shows it."""
        return self._trainjob(self._row(name, namespace))

    def state(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> JobState:
        """The job's phase (Created|Running|Complete|Failed|Suspended), times, pods and TrainJob."""
        row = self._row(name, namespace)
        return _state(row, self._pods(row), _object(row.trainjob, row.status))

    def _pods(self, row: JobRow) -> tuple[PodState, ...]:
        rows = self.store.pods(row.namespace, row.name)
        if row.uid in self._unwritten and row.phase == st.FAILED:
            rows = self._unwritten[row.uid][0]
        return tuple(_pod_state(p) for p in rows if p.uid == row.uid)

    def states(self, namespace: str | None = None, *, pods: bool = True) -> list[JobState]:
        """Every job's state (of ``namespace``, or all), oldest first, in one or two queries; each
        with its TrainJob without ``spec.trainer.command``/``args`` (they can be large: a shipped
        function), and with its pods when ``pods``. A damaged row is reported on stderr (once)
        and left out: it never hides the others."""
        by_job: dict[tuple[str, str, str], list[PodState]] = {}
        if pods:
            for p in self.store.pods_in(namespace):
                by_job.setdefault((p.namespace, p.name, p.uid), []).append(_pod_state(p))
        out = []
        for r in self.store.listing(namespace):
            ns, name, uid, created, phase, reason, message, started, completed, restarts = r[:10]
            runtime_ref, nodes, job_ttl, runtime_ttl, finished_at = r[10:15]
            summary = listing_summary(runtime_ref, nodes, *r[15:19])
            text, status, whole = r[19:]
            if not whole or not isinstance(restarts, int):
                damaged = self.store.job(ns, name)
                if damaged is not None:
                    self._skip(damaged, _problem(damaged) or "its TrainJob is not JSON")
                continue
            if phase in st.FINISHED:
                ttl = job_ttl if job_ttl is not None else runtime_ttl
                if self._ttl_ran_out(ns, name, ttl, finished_at):
                    continue
            if phase in _LIVE:
                row = self.store.job(ns, name)
                if row is None or row.uid != uid:
                    continue
                problem = _problem(row)
                if problem:
                    self._skip(row, problem)
                    continue
                row = self._check_alive(row)
                if row.phase != phase:  # its supervisor died: read it again
                    dead = self.state(name, ns)
                    out.append(dead if pods else dataclasses.replace(dead, pods=()))
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
        rows = self.store.events(namespace, name)
        if row.uid in self._unwritten and row.phase == st.FAILED:
            rows.append(self._unwritten[row.uid][1])
        return [
            Event(e.type, e.reason, e.message, e.timestamp, e.involved_kind, e.involved_name)
            for e in rows
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
            return self._follow(row, path, job, index, job_index, start, timestamps)
        return logfiles.read(path, start, timestamps)

    def _follow(
        self,
        row: JobRow,
        path: Path,
        job: str,
        index: int,
        job_index: int,
        start: int = 0,
        timestamps: bool = False,
    ) -> Iterator[str]:
        def pod_done() -> bool:
            cur = self.store.job(row.namespace, row.name)
            if cur is None or cur.uid != row.uid:
                return True
            cur = self._check_alive(cur)
            for p in self.store.pods(row.namespace, row.name):
                if (p.job, p.idx, p.job_index) == (job, index, job_index):
                    if p.phase in (st.POD_SUCCEEDED, st.POD_FAILED):
                        return True
                    if p.phase == st.POD_PENDING and cur.phase in st.FINISHED:
                        return True
            return cur.phase in st.FINISHED and not any(
                p.phase == st.POD_RUNNING for p in self.store.pods(row.namespace, row.name)
            )

        while True:  # one pass per attempt of the pod: a restart rotates its log
            while not path.exists():
                if pod_done():
                    return
                time.sleep(0.05)
            try:
                f = path.open("rb")
            except FileNotFoundError:
                continue
            with f:
                f.seek(start)
                offset, start = start, 0  # a restarted pod's new log is read whole
                stamps = logfiles.Times(path) if timestamps else None

                def out(raw: bytes, end: int) -> str:
                    nonlocal stamps
                    text = raw.decode(errors="replace")
                    if stamps is None:
                        return text
                    if end > (stamps.offsets[-1] if stamps.offsets else 0):
                        stamps = logfiles.Times(path)  # newer records since
                    return f"{stamps.at(end, path)} {text}"

                buf = b""
                while True:
                    chunk = f.read(_CHUNK)
                    if not chunk:
                        done = pod_done()
                        if not done and not _replaced(path, f):
                            time.sleep(0.05)
                            continue
                        chunk = f.read(_CHUNK)  # what it wrote before it ended
                        if not chunk:
                            if buf:
                                yield out(buf, offset + len(buf))
                            if done:
                                return
                            break  # the pod restarted: follow its new log
                    buf += chunk
                    if b"\n" in chunk:  # only the new bytes can end a line
                        *lines, buf = buf.split(b"\n")
                        for line in lines:
                            offset += len(line) + 1
                            yield out(line, offset)
                    # A line with no end (a progress bar redrawn with \r) comes in pieces, as
                    # logfiles.read gives it: memory stays bounded and nothing is scanned twice.
                    while len(buf) >= logfiles.LONGEST_LINE:
                        piece, buf = buf[: logfiles.LONGEST_LINE], buf[logfiles.LONGEST_LINE :]
                        offset += len(piece)
                        yield out(piece, offset)

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

    def _await_phase(self, row: JobRow, suspend: bool, timeout: float = 10.0) -> None:
        """Wait for the supervisor to act on a suspend/resume (so callers see the new phase)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            cur = self._check_alive(self.store.job(row.namespace, row.name) or row)
            if cur.phase in st.FINISHED or (cur.phase == st.SUSPENDED) == suspend:
                return
            time.sleep(0.05)

    def suspend(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> TrainJob:
        """Set ``spec.suspend``: running pods are stopped, the job is Suspended."""
        return self._set_suspend(name, namespace, True)

    def resume(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> TrainJob:
        """Clear ``spec.suspend``: pods start again from scratch (deadline clock restarts)."""
        return self._set_suspend(name, namespace, False)

    def outputs(self, name: str, namespace: str = DEFAULT_NAMESPACE) -> tuple[st.Output, ...]:
        """The job's kept outputs (:mod:`trainjob.local.outputs`): its ``output_dir``, then each
        volume under ``$TRAINJOB_HOME/outputs/NS/NAME/RUN`` or ``claims/NS``."""
        row = self.store.job(namespace, name)
        if row is None:
            raise NotFoundError(f'trainjobs.{c.GROUP} "{name}" not found')
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
        try:
            self.store.update_job(namespace, name, row.uid, deleting=1)
            # the supervisor stops its pods (SIGTERM, their grace period, SIGKILL) and exits
            grace = _longest_grace(row) + 7.0
        except StoreFullError:
            grace = 0.0  # it cannot be told: kill it, and free the disk before the store
        pid, token = row.supervisor_pid, row.supervisor_start
        if pid and not procs.wait_gone(pid, token, timeout=grace):
            procs.kill_group(pid)
            procs.wait_gone(pid, token, timeout=5.0)
        for p in self.store.pods(namespace, name):
            if p.pid and procs.alive(p.pid, p.pid_start):
                procs.kill_group(p.pid)
        # What the supervisor knew and whatever carries the job's mark (it was killed before it
        # could stop them).
        ptree.end(self._job_processes(row), grace=0)
        runners.clean_up(row.runner, namespace, name, row.uid)
        try:
            files.remove_tree(self.home, homes.job_dir(self.home, namespace, name))
        except files.UnsafePathError as e:  # a link planted on the way: its target is left alone
            log.warning("warning: the files of %s/%s were not removed: %s", namespace, name, e)
        except ConfigError:
            pass  # a row no valid job dir belongs to: no files
        if purge:
            with contextlib.suppress(ConfigError):
                run_dir = homes.run_outputs_dir(self.home, namespace, name, row.created, row.uid)
                try:
                    files.remove_tree(self.home, run_dir)
                except files.UnsafePathError as e:  # a link planted on the way: left alone
                    log.warning(
                        "warning: the outputs of %s/%s were not removed: %s", namespace, name, e
                    )
                with contextlib.suppress(OSError):  # the job's folder, once no run is left
                    run_dir.parent.rmdir()
        self.store.delete_job(namespace, name, row.uid)

    # -- runtimes -----------------------------------------------------------------------------

    def _stored_runtimes(self) -> list[Runtime]:
        out: list[Runtime] = []
        for body in self.store.runtimes():
            obj = parse(body)
            if isinstance(obj, TrainingRuntime | ClusterTrainingRuntime):
                out.append(obj)
        return out

    def list_runtimes(self, namespace: str | None = None) -> list[Runtime]:
        """Built-in ClusterTrainingRuntimes, then stored runtimes (a stored one wins by name);
        TrainingRuntimes of ``namespace`` only, when given."""
        stored = [
            r
            for r in self._stored_runtimes()
            if namespace is None
            or not isinstance(r, TrainingRuntime)
            or (r.metadata.namespace or DEFAULT_NAMESPACE) == namespace
        ]
        names = {(r.kind, r.metadata.name) for r in stored}
        builtin: list[Runtime] = [
            r for r in catalog.builtin_runtimes().values() if (r.kind, r.metadata.name) not in names
        ]
        return builtin + stored

    def get_runtime(
        self, name: str, kind: str = c.CLUSTER_TRAINING_RUNTIME_KIND, namespace: str | None = None
    ) -> Runtime:
        """One runtime by name (NotFoundError when absent)."""
        for rt in self.list_runtimes():
            if rt.kind != kind or rt.metadata.name != name:
                continue
            if kind == c.TRAINING_RUNTIME_KIND and (rt.metadata.namespace or DEFAULT_NAMESPACE) != (
                namespace or DEFAULT_NAMESPACE
            ):
                continue
            return rt
        plural = (
            "trainingruntimes" if kind == c.TRAINING_RUNTIME_KIND else "clustertrainingruntimes"
        )
        raise NotFoundError(f'{plural}.{c.GROUP} "{name}" not found')

    def apply_runtime(self, runtime: Runtime) -> Runtime:
        """Store (create or replace) a runtime so later submits can refer to it."""
        if not runtime.metadata.name:
            raise InvalidError(
                [FieldError.required("metadata.name", "name is required")], runtime.kind
            )
        errs = validation.validate_runtime(runtime)
        if errs:  # as the runtime webhooks refuse it on a cluster
            raise InvalidError(errs, f"{runtime.kind}.{c.GROUP}", runtime.metadata.name or "")
        namespace = ""
        if isinstance(runtime, TrainingRuntime):
            namespace = runtime.metadata.namespace or DEFAULT_NAMESPACE
        self.store.put_runtime(runtime.kind, namespace, runtime.metadata.name, to_dict(runtime))
        return runtime


def _uid() -> str:
    import uuid

    return str(uuid.uuid4())


def _problem(row: JobRow) -> str | None:
    """What makes a stored job unreadable (a damaged or hand-edited row), or None."""
    try:
        if not isinstance(json.loads(row.trainjob), dict):
            return "its TrainJob is not a JSON object"
        if not isinstance(json.loads(row.status or "{}"), dict):
            return "its status is not a JSON object"
        float(row.created_ts)
        if not isinstance(row.restarts, int):
            return f"restarts is {row.restarts!r}, not a number"
    except (TypeError, ValueError) as e:
        return f"{type(e).__name__}: {e}"
    return None


def _longest_grace(row: JobRow) -> float:
    """The longest ``terminationGracePeriodSeconds`` of the job's pods (the local default when
    none sets one): how long its supervisor may take to stop them."""
    try:
        plan = Plan(tuple(json.loads(row.plan)))
        graces = [podrun.grace_of(t.spec) for t in pods.pod_templates(plan, row.uid)]
    except (ValueError, TypeError, KeyError, AttributeError):  # a damaged row: delete it anyway
        return podrun.DEFAULT_GRACE
    return max(graces, default=podrun.DEFAULT_GRACE)


def _replaced(path: Path, f: BinaryIO) -> bool:
    """Whether ``path`` is no longer the file ``f`` reads (rotated when its pod restarted)."""
    try:
        return os.stat(path).st_ino != os.fstat(f.fileno()).st_ino
    except FileNotFoundError:
        return True


def _pod_state(p: PodRow) -> PodState:
    return PodState(
        job=p.job,
        index=p.idx,
        name=p.pod_name,
        phase=p.phase,
        exit_code=p.exit_code,
        started=p.started,
        finished=p.finished,
        restarts=p.restarts,
        job_index=p.job_index,
        message=p.message,
        ready=p.ready,
    )


def _object(trainjob: str, status: str) -> dict[str, Any]:
    """The stored TrainJob's JSON object with its status."""
    obj: dict[str, Any] = json.loads(trainjob)
    if status not in ("{}", ""):
        obj["status"] = json.loads(status)
    return obj


def _state(
    row: JobRow, pod_states: tuple[PodState, ...], trainjob: dict[str, Any] | None = None
) -> JobState:
    return JobState(
        name=row.name,
        namespace=row.namespace,
        phase=row.phase,
        created=row.created,
        started=row.started,
        completed=row.completed,
        restarts=row.restarts,
        reason=row.reason,
        message=row.message,
        pods=pod_states,
        trainjob=trainjob or {},
    )


def _local_plan(plan: Plan) -> Plan:
    """The Plan as this machine runs it, each object as its plugin declares
    (:mod:`trainjob.runtime.kinds`): the JobSet runs as processes, ConfigMaps and Secrets are
    mounted as files, PodGroups are left out (one machine needs no gang scheduling). A kind no
    plugin declares is a ConfigError before anything starts."""
    kept = []
    for obj in plan.objects:
        try:
            kind = kinds.of(obj)
        except KeyError:
            raise ConfigError(
                f"the plan holds a {obj.get('apiVersion')}, Kind={obj.get('kind')} that no runtime "
                "plugin declares: the local backend cannot run it (use a cluster)"
            ) from None
        if kind.local is not kinds.Local.SKIP:
            kept.append(obj)
    return Plan(tuple(kept))
