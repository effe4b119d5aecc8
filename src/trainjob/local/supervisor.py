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
starts, in any session, stays in its process tree; it is looked up every
:data:`trainjob.local.tracking.TRACK_EVERY` seconds, orphans are reaped, and when the supervisor ends, every process still below it ends too.
"""

from __future__ import annotations

import argparse
import json
import os
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
    jobset_rules,
    logfiles,
    mpi,
    outputs,
    pods,
    procs,
    ptree,
    status,
    tracking,
    volumes,
)
from trainjob.local import home as homes
from trainjob.local import runner as runners
from trainjob.local.jobset_rules import Key
from trainjob.local.podrun import PodRun, failure_message, stop_all
from trainjob.local.reports import Reports
from trainjob.local.store import EventRow, PodRow, Store
from trainjob.runtime.plan import Plan

TICK = 0.05


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
        self.tracker = tracking.Tracker(home, namespace, name)
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
        self.jobset = jobset_rules.spec_of(self.plan.jobset)
        self.jobset_name = self.jobset.name
        self.kept = outputs.kept(self.plan, home, namespace, name, row.created, uid)
        # How pods run: processes here, or containers (trainjob.local.runner); the rest of the
        # supervisor is the same for both.
        self.runner = runners.runner_for(row.runner, (namespace, name, uid), self._runner_event)
        self.local_mpi = mpi.adapt(self.plan, self.runtime) if not row.runner else None
        if self.local_mpi:
            self.base_env.update(self.local_mpi.env)
        self._probe_pool: ThreadPoolExecutor | None = None
        # the status endpoint: updates arrive on the server's threads, are taken each tick
        self.reports = Reports(self.store, namespace, name, uid)

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
        if self.reports.take(self.status):
            self.dirty = True
        if not self.dirty:
            return
        self.status["jobsStatus"] = jobset_rules.jobs_status(
            self.jobset.rjob_names, self.templates, self.rows, self.failures, self.suspended
        )
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
            reports=self.reports.pending,
        )
        self.events = []
        self.dirty = False
        self.reports.written()
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
        """Serve the job's status endpoint (:mod:`trainjob.local.reports`); without it (no free
        port, no disk) the job runs, and says that its progress is not reported."""
        problem = self.reports.start(self.home)
        if problem is not None:
            self.event("Warning", "StatusServerFailed", f"progress will not be reported: {problem}")

    # -- pods -----------------------------------------------------------------------------------

    def new_attempt(self) -> None:
        """Create the pods of a (re)started JobSet, all Pending."""
        self.first_failure = ""
        self.templates = pods.pod_templates(self.plan, self.uid, self.restarts)
        self.runs = {}
        self.failures = {}
        self.rows, self.virtual = jobset_rules.pending_rows(
            self.templates, self.namespace, self.name, self.uid, self.restarts, self.local_mpi
        )
        self.dirty = True
        try:
            self.runner.new_attempt(self.plan, self.templates)  # new endpoints for the pods
        except pods.PodConfigError as e:
            self.fail(status.REASON_POD_CONFIG_ERROR, str(e))

    def job_state(self, rname: str, j: int) -> str:
        return jobset_rules.job_state(self.templates, self.rows, self.failures, rname, j)

    def deps_met(self, t: pods.PodTemplate) -> bool:
        return jobset_rules.deps_met(t, self.rows, self.jobset.rjob_names, self.jobset.in_order)

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
            if t.job in self.jobset.trainer_jobs:  # the status endpoint, as upstream's plugin
                env = {**env, **self.reports.env}
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
                what = failure_message(run, code)
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
        logfiles.rotate(
            homes.log_path(self.home, self.namespace, self.name, t.job, t.index, t.job_index)
        )

    def kill_all(self) -> None:
        stop_all(self.runs.values())
        self.runs = {}

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
        return jobset_rules.failed_jobs(self.templates, self.rows, self.failures)

    def apply_failure_policy(self, failed: list[tuple[str, int]]) -> None:
        rname, j = failed[0]
        first = f"{self.jobset_name}-{rname}-{j}"
        verdict = jobset_rules.failure_verdict(
            self.jobset.failure_policy, rname, first, self.restarts
        )
        if verdict is not None:
            self.fail(*verdict)
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
        return jobset_rules.succeeded(
            self.jobset.success_policy,
            self.jobset.rjob_names,
            self.templates,
            self.rows,
            self.failures,
        )

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
            self.tracker.track(self.runs.values())
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
            self.reports.stop()
            self.runner.close()
            if self._probe_pool is not None:
                self._probe_pool.shutdown(wait=False, cancel_futures=True)
            tracking.end_everything()


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
