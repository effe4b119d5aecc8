"""The per-job supervisor: runs one TrainJob's JobSet as local processes until it finishes.

Started detached (own session) by :meth:`LocalExecutor.submit` as
``python -m trainjob.local.supervisor --home H --namespace NS --name N --uid UID``, it outlives the
client. Each tick it reads what the user wants from the store (suspend, resume, delete), then
plays the JobSet and Job controllers on this host, in their order:

1. reap finished pods (a Job fails once its pods failed more than ``backoffLimit`` times);
2. a failed Job -> the JobSet failure policy (fail, or restart every pod under ``maxRestarts``);
3. the success policy (``All``/``Any`` of the target replicatedJobs) -> Complete;
4. run the pods' probes (:mod:`trainjob.local.probes`): readiness, and liveness/startup kills;
5. start the pods whose ``dependsOn`` is met (``Ready``: every pod of that job runs and passes its
   readiness probes, or has succeeded; ``Complete``: every pod has succeeded), and with
   ``startupPolicyOrder: InOrder`` once the replicatedJobs before theirs are Ready;
6. ``activeDeadlineSeconds`` -> Failed/DeadlineExceeded;

and writes the TrainJob status (conditions, jobsStatus, the trainerStatus last reported), the
pods, events and reported metric values in one go when they changed. It serves the job's status
endpoint on loopback (:mod:`trainjob.local.statusserver`) and gives the trainer pods its env. It exits when the job is finished, deleted, or its row is gone; on SIGTERM it stops the
pods and marks the job Failed.

The supervisor is the child subreaper of its pods (:mod:`trainjob.local.ptree`): whatever a pod
starts, in any session, stays in its process tree; it is looked up every :data:`TRACK_EVERY`
seconds, orphans are reaped, and when the supervisor ends, every process still below it ends too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import signal
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from trainjob.api import constants as c
from trainjob.api import phases
from trainjob.core import jobset as js
from trainjob.core import lifetime, times
from trainjob.errors import ConfigError
from trainjob.executor import model as st
from trainjob.executor import triage
from trainjob.executor.steps import step_name
from trainjob.local import (
    files,
    logfiles,
    mpi,
    outputs,
    pods,
    procs,
    ptree,
    status,
    statusserver,
    volumes,
)
from trainjob.local import home as homes
from trainjob.local import runner as runners
from trainjob.local.podrun import PodRun, describe_exit, log_says, stop_all
from trainjob.local.store import EventRow, PodRow, ReportRow, Store
from trainjob.runtime.plan import Plan

TICK = 0.05
TRACK_EVERY = 0.5  # seconds between looks at the pods' process trees
Key = tuple[str, int, int]  # (replicatedJob, job index, completion index)
MAX_REPORTS = 10_000  # progress reports kept of a job (the newest)


class Stop(Exception):
    """The supervisor was told to stop (SIGTERM)."""


class Supervisor:
    def __init__(self, home: Path, namespace: str, name: str, uid: str) -> None:
        self.home, self.namespace, self.name, self.uid = home, namespace, name, uid
        self.store = Store(homes.db_path(home))
        row = self.store.job(namespace, name)
        if row is None or row.uid != uid:
            raise SystemExit(0)
        self.row = row
        self.plan = Plan(tuple(json.loads(row.plan)))
        self.runtime: dict[str, Any] = json.loads(row.runtime)
        self.status: dict[str, Any] = row.status_dict()
        self.restarts = row.restarts
        self.started = row.started
        self.phase = row.phase
        self.suspended = False
        self.clock_start = row.created_ts
        self._recorded: ptree.Procs = {}  # the processes last written to the processes file
        # the TrainJob's, else its runtime's spec.runPolicy's (KEP-2899)
        trainjob = row.trainjob_dict()
        self.deadline = lifetime.active_deadline(trainjob, self.runtime)
        self.queue = ((trainjob.get("metadata") or {}).get("labels") or {}).get(
            phases.KUEUE_QUEUE_LABEL
        )
        self.base_env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINJOB_SUP")}
        self.templates: list[pods.PodTemplate] = []
        self.runs: dict[Key, PodRun] = {}
        self.rows: dict[Key, PodRow] = {}
        self.failures: dict[tuple[str, int], int] = {}
        self.virtual: set[Key] = set()
        self.first_failure = ""  # "node-1 (rank 1): container ... failed: ..." of this attempt
        self.events: list[EventRow] = []
        self.dirty = True
        js_spec = self.plan.jobset.get("spec") or {}
        self.rjob_names = [r["name"] for r in js_spec.get("replicatedJobs") or ()]
        self.success_policy = js_spec.get("successPolicy") or {}
        self.failure_policy = js_spec.get("failurePolicy")
        startup = js_spec.get("startupPolicy") or {}
        self.in_order = startup.get("startupPolicyOrder") == "InOrder"
        self.jobset_name = self.plan.jobset["metadata"]["name"]
        self.kept = outputs.kept(self.plan, home, namespace, name, row.created, uid)
        # How pods run: processes here, or containers (trainjob.local.runner); the rest of the
        # supervisor is the same for both.
        self.runner = runners.runner_for(row.runner, (namespace, name, uid), self._runner_event)
        self.local_mpi = mpi.adapt(self.plan, self.runtime) if not row.runner else None
        if self.local_mpi:
            self.base_env.update(self.local_mpi.env)
        self._probe_pool: ThreadPoolExecutor | None = None
        self._next_track = 0.0
        # the status endpoint: updates arrive on the server's threads, are taken each tick
        self.trainer_jobs = {
            r["name"]
            for r in js_spec.get("replicatedJobs") or ()
            if ((r.get("template") or {}).get("metadata") or {})
            .get("labels", {})
            .get(c.LABEL_ANCESTOR)
            == c.ANCESTOR_TRAINER
        }
        self.status_server: statusserver.StatusServer | None = None
        self.status_env: dict[str, str] = {}
        self.status_updates: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self.reports: list[ReportRow] = []
        self.report_count = 0

    @property
    def probe_pool(self) -> ThreadPoolExecutor:
        if self._probe_pool is None:
            self._probe_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="probe")
        return self._probe_pool

    # -- bookkeeping --------------------------------------------------------------------------

    def event(
        self, type_: str, reason: str, message: str, kind: str = "TrainJob", obj: str = ""
    ) -> None:
        self.events.append(
            EventRow(
                self.namespace,
                self.name,
                self.uid,
                type_,
                reason,
                message,
                times.now(),
                kind,
                obj or self.name,
            )
        )
        self.dirty = True

    def _runner_event(self, type_: str, reason: str, message: str, kind: str, obj: str) -> None:
        self.event(type_, reason, message, kind, obj)

    def set_pod(self, key: Key, **values: Any) -> None:
        self.rows[key] = replace(self.rows[key], **values)
        self.dirty = True

    def flush(self) -> None:
        # a report posted before a pod exited is queued before that exit is reaped: kept with it
        self.take_status_updates()
        if not self.dirty:
            return
        self.status["jobsStatus"] = self.jobs_status()
        self.phase_condition()
        ok = self.store.write_status(
            self.namespace,
            self.name,
            self.uid,
            pods=list(self.rows.values()),
            events=self.events,
            phase=self.phase,
            status=json.dumps(self.status),
            started=self.started,
            restarts=self.restarts,
            reason=self.row.reason,
            message=self.row.message,
            completed=self.row.completed,
            reports=self.reports,
        )
        self.events = []
        self.dirty = False
        self._trim_reports()
        if not ok:  # the job was deleted (or replaced) under us
            self.kill_all()
            raise SystemExit(0)

    def phase_condition(self) -> None:
        """trainjob's phase condition from the jobsStatus just counted, as the controller sets
        it from the JobSet's (:mod:`trainjob.api.phases`)."""
        ph = phases.phase(
            self.status.get("conditions") or [],
            self.plan.jobset,
            self.status["jobsStatus"],
            suspended=self.suspended,
            queue=self.queue,
            restarts=self.restarts,
        )
        phases.set_phase(self.status.setdefault("conditions", []), ph, times.now())

    # -- progress -------------------------------------------------------------------------------

    def start_status_server(self) -> None:
        """Serve the job's status endpoint; without it (no free port, no disk) the job runs, and
        says that its progress is not reported."""
        try:
            creds = statusserver.credentials(homes.job_dir(self.home, self.namespace, self.name))
            server = statusserver.StatusServer(
                self.namespace, self.name, creds, self.status_updates.put
            )
        except OSError as e:
            self.event("Warning", "StatusServerFailed", f"progress will not be reported: {e}")
            return
        self.status_server = server
        self.status_env = statusserver.pod_env(server.url, creds)

    def take_status_updates(self) -> None:
        """Keep what the training reported since the last tick: the latest as the TrainJob's
        ``status.trainerStatus`` (a report replaces the one before, as upstream's apply does),
        every report in the job's history (``LocalExecutor.metric_history``)."""
        while True:
            try:
                update = self.status_updates.get_nowait()
            except queue.Empty:
                return
            self.status["trainerStatus"] = update
            metrics = {m["name"]: m["value"] for m in update.get("metrics") or ()}
            self.reports.append(
                ReportRow(
                    self.namespace,
                    self.name,
                    self.uid,
                    update["lastUpdatedTime"],
                    update.get("progressPercentage"),
                    update.get("estimatedRemainingSeconds"),
                    json.dumps(metrics),
                )
            )
            self.report_count += 1
            self.dirty = True

    def _trim_reports(self) -> None:
        self.reports = []
        if self.report_count > MAX_REPORTS + MAX_REPORTS // 10:
            self.store.trim_reports(self.namespace, self.name, self.uid, MAX_REPORTS)
            self.report_count = MAX_REPORTS

    def jobs_status(self) -> list[dict[str, int | str]]:
        """``jobsStatus`` as JobSet's replicatedJobsStatus counts it: Jobs, not pods."""
        out: list[dict[str, int | str]] = []
        for rname in self.rjob_names:
            n = {"ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
            for j in sorted({t.job_index for t in self.templates if t.job == rname}):
                rows = [r for k, r in self.rows.items() if k[0] == rname and k[1] == j]
                state = self.job_state(rname, j)
                if state == "Complete":
                    n["succeeded"] += 1
                    continue
                if state == "Failed":
                    n["failed"] += 1
                    continue
                running = sum(r.phase == st.POD_RUNNING for r in rows)
                ready = sum(r.phase == st.POD_RUNNING and r.ready for r in rows)
                succeeded = sum(r.phase == st.POD_SUCCEEDED for r in rows)
                n["suspended"] += int(self.suspended)
                n["active"] += int(running > 0)
                n["ready"] += int(bool(rows) and ready + succeeded >= len(rows))
            out.append({"name": rname, **n})
        return out

    # -- pods -----------------------------------------------------------------------------------

    def new_attempt(self) -> None:
        """Create the pods of a (re)started JobSet, all Pending."""
        self.first_failure = ""
        self.templates = pods.pod_templates(self.plan, self.uid, self.restarts)
        self.runs = {}
        self.failures = {}
        self.virtual = set()
        self.rows = {}
        for t in self.templates:
            key = (t.job, t.job_index, t.index)
            message = ""
            if self.local_mpi and self.local_mpi.skips(t):
                self.virtual.add(key)
                message = mpi.SKIPPED_MESSAGE
            self.rows[key] = PodRow(
                self.namespace,
                self.name,
                self.uid,
                t.job,
                t.job_index,
                t.index,
                t.name,
                st.POD_PENDING,
                restarts=self.restarts,
                message=message,
            )
        self.dirty = True
        try:
            self.runner.new_attempt(self.plan, self.templates)  # new endpoints for the pods
        except pods.PodConfigError as e:
            self.fail(status.REASON_POD_CONFIG_ERROR, str(e))

    def job_state(self, rname: str, j: int) -> str:
        keys = [k for k in self.rows if k[0] == rname and k[1] == j]
        if self.failures.get((rname, j), 0) > self._backoff(rname):
            return "Failed"
        if keys and all(self.rows[k].phase == st.POD_SUCCEEDED for k in keys):
            return "Complete"
        return "Active"

    def _backoff(self, rname: str) -> int:
        for t in self.templates:
            if t.job == rname:
                return t.backoff_limit
        return 0

    def _ready(self, rname: str) -> bool:
        """Every pod of replicatedJob ``rname`` is Ready or has succeeded."""
        return all(
            r.phase == st.POD_SUCCEEDED or (r.phase == st.POD_RUNNING and r.ready)
            for k, r in self.rows.items()
            if k[0] == rname
        )

    def deps_met(self, t: pods.PodTemplate) -> bool:
        if self.in_order:
            # startupPolicyOrder InOrder: each replicatedJob waits for the ones before it to be
            # ready, as JobSet creates them.
            for rname in self.rjob_names[: self.rjob_names.index(t.job)]:
                if not self._ready(rname):
                    return False
        for dep, want in t.depends_on:
            rows = [r for k, r in self.rows.items() if k[0] == dep]
            if want == "Complete" and not all(r.phase == st.POD_SUCCEEDED for r in rows):
                return False
            if want == "Ready" and not self._ready(dep):
                return False
        return True

    def start_pods(self) -> None:
        vols = homes.volumes_dir(self.home, self.namespace, self.name)
        for t in self.templates:
            key = (t.job, t.job_index, t.index)
            row = self.rows[key]
            if row.phase != st.POD_PENDING or key in self.runs or not self.deps_met(t):
                continue
            if key in self.virtual:
                self.set_pod(key, phase=st.POD_RUNNING, started=times.now(), ready=True)
                self._mark_started()
                continue
            env = self.base_env
            if t.job in self.trainer_jobs:  # the status endpoint, as upstream's plugin
                env = {**env, **self.status_env}
            try:
                kept = self.kept.dirs(t)
                volumes.materialize(t, self.plan, vols, kept)
                files.private_dirs(self.home, self.kept.checkpoint_dir)
                local = self.runner.build(
                    t,
                    self.plan,
                    vols,
                    self.row.cwd,
                    self.namespace,
                    env,
                    kept=kept,
                    extra_env=self.kept.env(self.restarts),
                )
            except (pods.PodConfigError, OSError, ConfigError) as e:  # ConfigError: a planted link
                self.fail(status.REASON_POD_CONFIG_ERROR, f"pod {t.name}: {e}")
                return
            log = homes.log_path(self.home, self.namespace, self.name, t.job, t.index, t.job_index)
            try:
                run = self.runner.start(local, log, self.probe_pool)
            except (OSError, ConfigError) as e:
                self.fail(status.REASON_POD_CONFIG_ERROR, f"pod {t.name}: {e}")
                return
            self.runs[key] = run
            leader = run.leader
            pid = leader.pid if leader else None
            self.set_pod(
                key,
                phase=st.POD_RUNNING,
                started=times.now(),
                pid=pid,
                pid_start=procs.start_time(pid) if pid else None,
                ready=run.ready,
            )
            self.event(
                "Normal",
                "SuccessfulCreate",
                f"Created pod: {t.name}",
                "Job",
                f"{self.jobset_name}-{t.job}-{t.job_index}",
            )
            self._mark_started()

    def _mark_started(self) -> None:
        if self.phase in (st.CREATED, st.SUSPENDED):
            self.phase = st.RUNNING
        if self.started is None:
            self.started = times.now()
        self.status.setdefault("startTime", times.now())  # again after a resume, as a Job's
        self.dirty = True

    def probe(self) -> None:
        """Run due probes of running pods; record readiness changes and probe events."""
        for key, run in self.runs.items():
            out = run.tick_probes()
            for type_, reason, message in out.events if out else ():
                self.event(type_, reason, message, "Pod", self.rows[key].pod_name)
            ready = run.ready
            if self.rows[key].ready != ready:
                self.set_pod(key, ready=ready)

    def reap(self) -> None:
        for key, run in list(self.runs.items()):
            if not run.poll():
                continue
            code = run.exit_code
            assert code is not None
            t = next(t for t in self.templates if (t.job, t.job_index, t.index) == key)
            if code == 0:
                self.set_pod(
                    key,
                    phase=st.POD_SUCCEEDED,
                    exit_code=0,
                    finished=times.now(),
                    pid=None,
                    ready=False,
                )
            else:
                what = f'container "{run.failed_container}" failed: {describe_exit(code)}'
                if run.failed_container in run.killed_why:
                    what += f" ({run.killed_why[run.failed_container]})"
                said = log_says(run.log, code)
                what += (f"; its log says: {said}" if said else "") + homes.disk_full_note(
                    run.log.parent
                )
                self.set_pod(
                    key,
                    phase=st.POD_FAILED,
                    exit_code=code,
                    finished=times.now(),
                    pid=None,
                    message=what,
                    ready=False,
                )
                self.event("Warning", "Failed", what, "Pod", t.name)
                if not self.first_failure:  # the one the job's Failed message names
                    who = step_name(t.job, t.index, t.job_index)
                    rank = f" (rank {t.index})" if t.job == "node" else ""
                    self.first_failure = f"{who}{rank}: {what}"
                jk = (key[0], key[1])
                self.failures[jk] = self.failures.get(jk, 0) + 1
                if self.failures[jk] <= t.backoff_limit:
                    # The Job controller replaces a failed pod while under backoffLimit.
                    self._rotate_log(t)
                    self.set_pod(
                        key, phase=st.POD_PENDING, exit_code=None, started=None, finished=None
                    )
                else:
                    job_name = f"{self.jobset_name}-{t.job}-{t.job_index}"
                    self.event(
                        "Warning",
                        js.REASON_BACKOFF_LIMIT_EXCEEDED,
                        js.MESSAGE_BACKOFF_LIMIT_EXCEEDED,
                        "Job",
                        job_name,
                    )
            del self.runs[key]

    def _rotate_log(self, t: pods.PodTemplate) -> None:
        log = homes.log_path(self.home, self.namespace, self.name, t.job, t.index, t.job_index)
        if log.exists():
            n = 1
            while log.with_name(f"{log.name}.{n}").exists():
                n += 1
            log.rename(log.with_name(f"{log.name}.{n}"))
            times = logfiles.times_path(log)
            if times.exists():
                times.rename(logfiles.times_path(log.with_name(f"{log.name}.{n}")))

    def kill_all(self) -> None:
        stop_all(self.runs.values())
        self.runs = {}

    def track(self) -> None:
        """Note every pod's processes and reap the orphans the subreaper inherited."""
        now_ = time.monotonic()
        if now_ < self._next_track:
            return
        self._next_track = now_ + TRACK_EVERY
        tab = ptree.table()
        known = ptree.descendants([os.getpid()], tab)  # the pods and the orphans it inherited
        for run in self.runs.values():
            run.track(tab)
            known.update(run.seen)
        ptree.reap_orphans([p.pid for run in self.runs.values() for p in run.procs], tab)
        if known != self._recorded:  # for a reader that finds this supervisor dead
            with contextlib.suppress(OSError, ConfigError):
                ptree.record(known, homes.processes_file(self.home, self.namespace, self.name))
                self._recorded = known

    def end_everything(self) -> None:
        """The job is over: no process below the supervisor may outlive it (orphans that left
        their pod, whatever a pod started and did not stop)."""
        left = ptree.descendants([os.getpid()])
        ptree.end(left, grace=0)
        ptree.reap_orphans(())

    def stop_pods(self, phase_for_running: str, message: str) -> None:
        """Kill every process; Pending/Running pods take ``phase_for_running``."""
        self.kill_all()
        for key, row in self.rows.items():
            if row.phase in (st.POD_PENDING, st.POD_RUNNING):
                phase = phase_for_running
                if key in self.virtual and phase == st.POD_FAILED:
                    phase = st.POD_SUCCEEDED  # sshd-only pods did not fail; they were not needed
                fields: dict[str, Any] = {
                    "phase": phase,
                    "pid": None,
                    "message": message or row.message,
                    "ready": False,
                }
                if row.phase == st.POD_RUNNING:
                    fields["finished"] = times.now()
                self.set_pod(key, **fields)

    # -- policies -------------------------------------------------------------------------------

    def failed_jobs(self) -> list[tuple[str, int]]:
        return [
            (t.job, t.job_index)
            for t in self.templates
            if t.index == 0 and self.job_state(t.job, t.job_index) == "Failed"
        ]

    def apply_failure_policy(self, failed: list[tuple[str, int]]) -> None:
        rname, j = failed[0]
        first = f"{self.jobset_name}-{rname}-{j}"
        policy = self.failure_policy
        if policy is None:
            self.fail(
                js.REASON_FAILED_JOBS,
                js.with_first_failed_job(js.MESSAGE_FAILED_JOBS, first),
            )
            return
        action = "RestartJobSet"
        for rule in policy.get("rules") or ():
            targets = rule.get("targetReplicatedJobs") or []
            reasons = rule.get("onJobFailureReasons") or []
            if (not targets or rname in targets) and (
                not reasons or js.REASON_BACKOFF_LIMIT_EXCEEDED in reasons
            ):
                action = rule.get("action", action)
                break
        if action == "FailJobSet":
            self.fail(
                js.REASON_FAIL_JOBSET_ACTION,
                js.with_first_failed_job(js.MESSAGE_FAIL_JOBSET_ACTION, first),
            )
            return
        counted = action == "RestartJobSet"
        if counted and self.restarts >= int(policy.get("maxRestarts") or 0):
            self.fail(
                js.REASON_REACHED_MAX_RESTARTS,
                js.with_first_failed_job(js.MESSAGE_REACHED_MAX_RESTARTS, first),
            )
            return
        self.kill_all()
        self.restarts += 1
        for t in self.templates:
            self._rotate_log(t)
        self.event(
            "Warning",
            js.REASON_RESTARTING,
            f"restarting jobset, attempt {self.restarts}"
            + (f" (first failed: {self.first_failure})" if self.first_failure else ""),
            "JobSet",
            self.jobset_name,
        )
        self.new_attempt()

    def check_success(self) -> bool:
        operator = self.success_policy.get("operator", "All")
        targets = self.success_policy.get("targetReplicatedJobs") or self.rjob_names
        jobs = {(t.job, t.job_index) for t in self.templates if t.job in targets}
        states = [self.job_state(r, j) == "Complete" for r, j in sorted(jobs)]
        return bool(states) and (any(states) if operator == "Any" else all(states))

    def fail(self, reason: str, message: str) -> None:
        if self.first_failure:  # which step and rank failed first, how (control chars escaped)
            message = f"{message}{triage.FIRST_FAILED}{self.first_failure}"
        self.stop_pods(st.POD_FAILED, "")
        ts = times.now()
        status.failed(self.status, reason, message, ts)
        self.phase = st.FAILED
        self.row = replace(self.row, reason=reason, message=message, completed=ts)
        self.event("Warning", reason, message, "TrainJob", self.name)

    def succeed(self) -> None:
        self.stop_pods(st.POD_SUCCEEDED, "")
        ts = times.now()
        status.complete(self.status, ts)
        self.status["completionTime"] = ts  # on Complete only, as a Job's
        self.phase = st.COMPLETE
        self.row = replace(
            self.row,
            reason=js.REASON_ALL_JOBS_COMPLETED,
            message=js.MESSAGE_ALL_JOBS_COMPLETED,
            completed=ts,
        )
        self.event(
            "Normal",
            js.REASON_ALL_JOBS_COMPLETED,
            js.MESSAGE_ALL_JOBS_COMPLETED,
            "JobSet",
            self.jobset_name,
        )

    # -- the loop -------------------------------------------------------------------------------

    def sync_desired(self) -> bool:
        """Read suspend/delete from the store; False when the supervisor must exit."""
        row = self.store.job(self.namespace, self.name)
        if row is None or row.uid != self.uid or row.deleting or row.phase in st.FINISHED:
            return False
        want_suspend = bool(row.suspend)
        if want_suspend and not self.suspended:
            self.suspended = True
            self.stop_pods(st.POD_PENDING, "")
            for key in self.rows:
                self.set_pod(key, started=None, finished=None, exit_code=None)
            status.suspended(self.status, times.now())
            self.phase = st.SUSPENDED
            self.event("Normal", c.REASON_SUSPENDED, c.MESSAGE_SUSPENDED)
        elif not want_suspend and self.suspended:
            self.suspended = False
            status.resumed(self.status, times.now())
            self.status.pop("startTime", None)  # set again when the pods start
            self.clock_start = time.time()
            self.phase = st.RUNNING if self.started else st.CREATED
            self.event("Normal", c.REASON_RESUMED, c.MESSAGE_RESUMED)
            for t in self.templates:
                self._rotate_log(t)  # new pods, new logs (as on a cluster)
            self.new_attempt()
        return True

    def check_deadline(self) -> None:
        ads = self.deadline
        if ads and ads > 0 and time.time() - self.clock_start >= ads:
            self.fail(c.REASON_DEADLINE_EXCEEDED, c.MESSAGE_DEADLINE_EXCEEDED)

    def tick(self) -> bool:
        if not self.sync_desired():
            return False
        if not self.suspended:
            self.track()
            self.reap()
            self.probe()
            failed = self.failed_jobs()
            if failed:
                self.apply_failure_policy(failed)
            elif self.check_success():
                self.succeed()
            if self.phase not in st.FINISHED:
                self.start_pods()
            if self.phase not in st.FINISHED:
                self.check_deadline()
        for run in self.runs.values():
            run.note_log_growth()
        self.flush()
        return self.phase not in st.FINISHED

    def run(self) -> None:
        self.store.update_job(
            self.namespace,
            self.name,
            self.uid,
            supervisor_pid=os.getpid(),
            supervisor_start=procs.start_time(os.getpid()),
        )
        if bool(self.row.suspend):
            self.suspended = True
            status.suspended(self.status, times.now())
            self.phase = st.SUSPENDED
        self.start_status_server()
        self.new_attempt()
        try:
            while self.tick():
                time.sleep(TICK)
        except Stop:
            self.fail(status.REASON_SUPERVISOR_ERROR, "the local supervisor was terminated")
            self.flush()
        finally:
            self.kill_all()
            if self.status_server is not None:
                self.status_server.stop()
            self.runner.close()
            if self._probe_pool is not None:
                self._probe_pool.shutdown(wait=False, cancel_futures=True)
            self.end_everything()


def _on_term(_signum: int, _frame: object) -> None:
    raise Stop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainjob.local.supervisor")
    parser.add_argument("--home", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--uid", required=True)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_term)
    ptree.become_subreaper()
    sup = Supervisor(Path(args.home), args.namespace, args.name, args.uid)
    try:
        sup.run()
    except SystemExit:
        raise
    except BaseException as e:  # a bug: record it on the job, never leave it Running
        traceback.print_exc()
        sup.kill_all()
        try:
            sup.fail(status.REASON_SUPERVISOR_ERROR, f"the local supervisor failed: {e!r}")
            sup.flush()
        except BaseException:
            traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
