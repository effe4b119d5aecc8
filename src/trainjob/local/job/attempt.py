"""The pods of one attempt of a job's JobSet on this host: the Job controller's and a kubelet's part.

An attempt's pods are created Pending (:meth:`Attempt.new_attempt`), started once their
``dependsOn`` is met, probed, and reaped when they exit: a failed pod is replaced while its Job is
under ``backoffLimit`` (its log rotated), and each exit is an event. How a pod runs, as processes
or as containers, is its runner's (:mod:`trainjob.local.job.runner`). The JobSet-level decisions (the
failure and success policies, suspend, deadlines) and the TrainJob's status are the supervisor's
(:class:`trainjob.local.job.supervisor.Supervisor`, a subclass), which also says what
:meth:`Attempt.fail` and :meth:`Attempt._mark_started` do to the job.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from trainjob.api import constants as c
from trainjob.core import jobset as js
from trainjob.core import times
from trainjob.errors import ConfigError
from trainjob.executor import model as st
from trainjob.executor.steps import step_name
from trainjob.local.job import elastic, jobset_rules, mpi, outputs, pods, volumes
from trainjob.local.job import runner as runners
from trainjob.local.job.jobset_rules import Key
from trainjob.local.job.podrun import PodRun, failure_message, stop_all
from trainjob.local.job.reports import Reports
from trainjob.local.state import files, logfiles, procs, status
from trainjob.local.state import home as homes
from trainjob.local.state.store import EventRow, JobRow, PodRow
from trainjob.runtime.plan import Plan


class Attempt:
    """The pods of the current attempt of one job's JobSet, and the events about them."""

    def __init__(
        self,
        home: Path,
        namespace: str,
        name: str,
        uid: str,
        row: JobRow,
        plan: Plan,
        runtime: dict[str, Any],
        reports: Reports,
    ) -> None:
        self.home, self.namespace, self.name, self.uid = home, namespace, name, uid
        self.row, self.plan, self.reports = row, plan, reports
        self.restarts = row.restarts
        self.base_env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINJOB_SUP")}
        self.templates: list[pods.PodTemplate] = []
        self.runs: dict[Key, PodRun] = {}
        self.rows: dict[Key, PodRow] = {}
        self.failures: dict[tuple[str, int], int] = {}
        self.virtual: set[Key] = set()
        self.first_failure = ""  # "node-1 (rank 1): container ... failed: ..." of this attempt
        self.events: list[EventRow] = []
        self.dirty = True
        self.jobset = jobset_rules.spec_of(plan.jobset)
        self.jobset_name = self.jobset.name
        self.elastic = elastic.bounds(plan)  # KEP-2903: a lost node shrinks the job
        self.kept = outputs.kept(plan, home, namespace, name, row.created, uid)
        # How pods run: processes here, or containers (trainjob.local.job.runner); the rest of the
        # supervisor is the same for both.
        self.runner = runners.runner_for(row.runner, (namespace, name, uid), self._runner_event)
        self.local_mpi = mpi.adapt(plan, runtime) if not row.runner else None
        if self.local_mpi:
            self.base_env.update(self.local_mpi.env)
        self._probe_pool: ThreadPoolExecutor | None = None

    def fail(self, reason: str, message: str) -> None:
        """The job fails (a pod that cannot run here): the supervisor's."""
        raise NotImplementedError

    def _mark_started(self) -> None:
        """A pod started: the job runs (the supervisor's)."""
        raise NotImplementedError

    @property
    def probe_pool(self) -> ThreadPoolExecutor:
        if self._probe_pool is None:
            self._probe_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="probe")
        return self._probe_pool

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
        self.rows[key] = self.rows[key]._replace(**values)
        self.dirty = True

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
                if self.elastic is not None and t.job == c.JOB_NODE:
                    self.runs.pop(key, None)
                    if self._lose_node(t, what):
                        continue
                    return  # the job failed: every pod was stopped
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

    def _lose_node(self, t: pods.PodTemplate, what: str) -> bool:
        """An elastic job's node left (:mod:`trainjob.local.job.elastic`): it leaves the node job;
        False when that leaves fewer than minNodes and the job failed."""
        assert self.elastic is not None
        key = (t.job, t.job_index, t.index)
        self.templates = [x for x in self.templates if x is not t]
        del self.rows[key]
        left = sum(1 for k in self.rows if k[0] == t.job)
        b = self.elastic
        self.event(
            "Warning",
            elastic.REASON_NODE_LOST,
            f"node {t.name} left the elastic job ({what}); "
            f"{left} nodes left (minNodes {b.min_nodes}, maxNodes {b.max_nodes})",
        )
        if left < b.min_nodes:
            self.fail(elastic.REASON_BELOW_MIN_NODES, b.below_min_message(left))
            return False
        return True

    def scale_to(self, count: int) -> None:
        """An elastic job's node count changed (``trainjob scale``): new nodes are created
        Pending (and join at the next rendezvous), or the highest-indexed ones are stopped."""
        assert self.elastic is not None
        b = self.elastic
        nodes = sorted(k for k in self.rows if k[0] == c.JOB_NODE)
        if count > len(nodes):
            used = {k[2] for k in nodes}
            free = [i for i in range(count + len(used)) if i not in used][: count - len(nodes)]
            plan = elastic.scaled_plan(self.plan, max(free) + 1)
            added = [
                t
                for t in pods.pod_templates(plan, self.uid, self.restarts)
                if t.job == c.JOB_NODE and t.index in free
            ]
            try:
                self.runner.add_pods(self.plan, added)
            except pods.PodConfigError as e:
                self.event("Warning", elastic.REASON_SCALE_FAILED, str(e))
                return
            rows, _ = jobset_rules.pending_rows(
                added, self.namespace, self.name, self.uid, self.restarts, None
            )
            self.templates = [*self.templates, *added]
            self.rows.update(rows)
            what = ", ".join(t.name for t in added)
            reason, message = elastic.REASON_NODE_JOINED, f"added {what}"
        elif count < len(nodes):
            gone = nodes[count:]
            stop_all([self.runs.pop(k) for k in gone if k in self.runs])
            names = {self.rows[k].pod_name for k in gone}
            self.templates = [
                t for t in self.templates if (t.job, t.job_index, t.index) not in gone
            ]
            for k in gone:
                del self.rows[k]
            reason, message = elastic.REASON_NODE_REMOVED, f"removed {', '.join(sorted(names))}"
        else:
            return
        self.event(
            "Normal",
            reason,
            f"scaled to {count} nodes (minNodes {b.min_nodes}, maxNodes {b.max_nodes}): {message}",
        )

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
