"""The per-job supervisor: runs one TrainJob's JobSet as local processes until it finishes.

Started detached (own session) by :meth:`LocalExecutor.submit` as
``python -m trainjob.local.job.queueing --home H --namespace NS --name N --uid UID``, which waits
Queued for the job's share of this machine's CPUs and memory (:mod:`trainjob.local.job.capacity`)
and then becomes this supervisor (``python -m trainjob.local.job.supervisor`` with the same
flags skips the light wait: its loop takes the share before any pod starts). It outlives the
client. Each tick it reads what the user wants from the store (suspend, resume, delete), then
plays the JobSet and Job controllers on this host (the pods' part, the Job controller's and a
kubelet's, is :mod:`trainjob.local.job.attempt`; the JobSet's rules :mod:`trainjob.local.job.jobset_rules`),
in their order:

1. reap finished pods (a Job fails once its pods failed more than ``backoffLimit`` times);
2. a failed Job -> the JobSet failure policy (fail, or restart every pod under ``maxRestarts``);
3. the success policy (``All``/``Any`` of the target replicatedJobs) -> Complete;
4. run the pods' probes (:mod:`trainjob.local.job.probes`): readiness, and liveness/startup kills;
5. start the pods whose ``dependsOn`` is met (``Ready``: every pod of that job runs and passes its
   readiness probes, or has succeeded; ``Complete``: every pod has succeeded), and with
   ``startupPolicyOrder: InOrder`` once the replicatedJobs before theirs are Ready;
6. ``activeDeadlineSeconds`` -> Failed/DeadlineExceeded;

and writes the TrainJob status (conditions, jobsStatus, the trainerStatus last reported), the
pods, events and reported metric values in one go when they changed. It serves the job's status
endpoint on loopback (:mod:`trainjob.local.job.reports`) and gives the trainer pods its env. It
exits when the job is finished, deleted, or its row is gone; on SIGTERM it stops the pods and
marks the job Failed. A job's end (Complete, Failed) is written only once everything it started
is gone (:meth:`Supervisor.teardown`): its processes, containers, network and status endpoint.

The supervisor is the child subreaper of its pods (:mod:`trainjob.local.state.ptree`): whatever a pod
starts, in any session, stays in its process tree; it is looked up every
:data:`trainjob.local.job.tracking.TRACK_EVERY` seconds, orphans are reaped, and when the supervisor
ends, every process still below it ends too.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainjob.api import constants as c
from trainjob.api import phases
from trainjob.core import jobset as js
from trainjob.core import lifetime, times
from trainjob.executor import model as st
from trainjob.executor import triage
from trainjob.local.job import capacity, elastic, jobset_rules, tracking
from trainjob.local.job.attempt import Attempt
from trainjob.local.job.reports import Reports
from trainjob.local.state import home as homes
from trainjob.local.state import procs, ptree, status
from trainjob.local.state.store import Store
from trainjob.runtime.plan import Plan

TICK = 0.05
QUEUED_TICK = 0.25  # a job waiting for this machine's capacity looks less often
# How long removing what the job started may take before its end is written anyway, with a
# CleanupFailed event naming what is left (a loaded container engine takes seconds a call).
TEARDOWN_TIMEOUT = 60.0
# Another bound, in seconds, read from the supervisor's environment (it inherits the one of the
# process that submitted the job): for tests of what happens when the bound is reached, which
# need not wait a minute. TRAINJOB_SUP* names are the supervisor's own: pods never see them.
ENV_TEARDOWN_TIMEOUT = "TRAINJOB_SUPERVISOR_TEARDOWN_TIMEOUT"
REASON_CLEANUP_FAILED = "CleanupFailed"
REASON_INVALID_SETTING = "InvalidSetting"


def teardown_timeout(environ: Mapping[str, str]) -> tuple[float, str]:
    """The teardown bound :data:`ENV_TEARDOWN_TIMEOUT` sets (:data:`TEARDOWN_TIMEOUT` when
    unset), and what is wrong with a value that is not a number of seconds > 0 (then the
    default is used: a bad setting must not leave a job's end unwritten)."""
    raw = environ.get(ENV_TEARDOWN_TIMEOUT, "").strip()
    if not raw:
        return TEARDOWN_TIMEOUT, ""
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        return TEARDOWN_TIMEOUT, (
            f"{ENV_TEARDOWN_TIMEOUT}={raw!r} is not a number of seconds greater than 0; "
            f"the clean-up was bounded by {TEARDOWN_TIMEOUT:g}s instead"
        )
    return value, ""


class Stop(Exception):
    """The supervisor was told to stop (SIGTERM)."""


class Supervisor(Attempt):
    """The JobSet controller and the TrainJob's status for one job, over its pods
    (:class:`trainjob.local.job.attempt.Attempt`); the loop."""

    def __init__(
        self, home: Path, namespace: str, name: str, uid: str, share: capacity.Share | None = None
    ) -> None:
        """``share``: the job's share of this machine, taken before (the queue's,
        :mod:`trainjob.local.job.queueing`); None: it is taken before any pod starts."""
        self.home, self.namespace, self.name, self.uid = home, namespace, name, uid
        self.store = Store(homes.db_path(home))
        row = self.store.job(namespace, name)
        if row is None or row.uid != uid:
            raise SystemExit(0)
        self.plan = Plan(tuple(json.loads(row.plan)))
        self.runtime: dict[str, Any] = json.loads(row.runtime)
        self.status: dict[str, Any] = row.status_dict()
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
        # the status endpoint: updates arrive on the server's threads, are taken each tick
        reports = Reports(self.store, namespace, name, uid)
        super().__init__(home, namespace, name, uid, row, self.plan, self.runtime, reports)
        self.torn_down = False
        self.generation, _ = elastic.desired(trainjob)  # a new one: `trainjob scale` (elastic)
        # this machine's CPUs and memory, shared with the home's other jobs: none of its pods
        # starts before it holds its share (trainjob.local.job.capacity)
        self.bound = capacity.limit(os.environ)
        self.share = share or capacity.Share(
            home, row.created_ts, uid, capacity.need(self.plan), self.bound
        )
        self.waiting = ""  # why it waits Queued for its share ("": it does not)
        held = phases.current(self.status.get("conditions"))
        if held is not None and held.reason == phases.REASON_WAITING_FOR_RESOURCES:
            self.clock_start = time.time()  # it waited Queued: its deadline counts from now

    # -- bookkeeping --------------------------------------------------------------------------

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
        it from the JobSet's (:mod:`trainjob.api.phases`); Queued while it waits for this
        machine's capacity."""
        if self.waiting and not self.suspended:
            queued = phases.Phase(
                phases.CONDITION_QUEUED, phases.REASON_WAITING_FOR_RESOURCES, self.waiting
            )
            phases.set_phase(self.status.setdefault("conditions", []), queued, times.now())
            return
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
        """Serve the job's status endpoint (:mod:`trainjob.local.job.reports`); without it (no free
        port, no disk) the job runs, and says that its progress is not reported."""
        problem = self.reports.start(self.home)
        if problem is not None:
            self.event("Warning", "StatusServerFailed", f"progress will not be reported: {problem}")

    def _mark_started(self) -> None:
        if self.phase in (st.CREATED, st.SUSPENDED):
            self.phase = st.RUNNING
        if self.started is None:
            self.started = times.now()
        self.status.setdefault("startTime", times.now())  # again after a resume, as a Job's
        self.dirty = True

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
        self.row = self.row._replace(reason=reason, message=message, completed=ts)
        self.event("Warning", reason, message, "TrainJob", self.name)

    def succeed(self) -> None:
        self.stop_pods(st.POD_SUCCEEDED, "")
        ts = times.now()
        status.complete(self.status, ts)
        self.status["completionTime"] = ts  # on Complete only, as a Job's
        self.phase = st.COMPLETE
        self.row = self.row._replace(
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

    # -- the end --------------------------------------------------------------------------------

    def teardown(self) -> None:
        """Stop and remove everything the job started, and see it gone, before its end is
        written (a user who sees Complete or Failed finds nothing of the job left): its pods,
        every process below this supervisor or carrying the job's mark, the runner's containers
        and network, the status endpoint. Bounded (:data:`TEARDOWN_TIMEOUT`, or :data:`ENV_TEARDOWN_TIMEOUT`): what is still there
        then is named in a CleanupFailed event, and the job's end is written all the same. Each
        step may run again (a SIGTERM part-way): a second call after a whole one does nothing."""
        if self.torn_down:
            return
        self.kill_all()
        self.share.release()
        if self._probe_pool is not None:
            self._probe_pool.shutdown(wait=False, cancel_futures=True)
            self._probe_pool = None
        bound, problem = teardown_timeout(os.environ)
        if problem:
            self.event("Warning", REASON_INVALID_SETTING, problem)
        left = self.runner.close(bound)
        left += tracking.end_everything(self.uid)  # the engine's calls too, once they are done
        self.reports.stop()  # updates it accepted stay queued for the last flush
        if not left:  # nothing of the job runs that could still write there
            self.kept.drop_empty()
        self.torn_down = True
        if left:
            self.event(
                "Warning",
                REASON_CLEANUP_FAILED,
                f"not everything the job started could be removed within {bound:g}s: "
                + "; ".join(left),
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
            self.share.release()  # a resume waits for its share again
            self.waiting = ""
            bound, _ = teardown_timeout(os.environ)  # a bad value: the teardown's event says so
            left = self.runner.remove_pods(bound)  # gone before Suspended is written
            if left:
                self.event(
                    "Warning",
                    REASON_CLEANUP_FAILED,
                    f"the suspended job's pods could not all be removed: {'; '.join(left)}",
                )
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
        if self.elastic is not None and not self.suspended:
            generation, count = elastic.desired(row.trainjob_dict())
            if generation != self.generation:
                self.generation = generation
                if count is not None:
                    self.scale_to(count)
        return True

    def check_deadline(self) -> None:
        ads = self.deadline
        if ads and ads > 0 and time.time() - self.clock_start >= ads:
            self.fail(c.REASON_DEADLINE_EXCEEDED, c.MESSAGE_DEADLINE_EXCEEDED)

    def admitted(self) -> bool:
        """Whether the job holds its share of this machine (:mod:`.capacity`); while it waits,
        it is Queued. Once it holds it after waiting, its pods get fresh endpoints and its
        ``activeDeadlineSeconds`` counts from then (as from a resume)."""
        why = self.share.take()
        if why is not None:
            if why != self.waiting:
                self.waiting, self.dirty = why, True
            return False
        if self.waiting:
            self.waiting = ""
            self.clock_start = time.time()
            self.new_attempt()
        return True

    def tick(self) -> bool:
        if not self.sync_desired():
            return False
        if not self.suspended and not self.admitted():
            self.flush()
            return True
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
        if self.phase in st.FINISHED:
            self.teardown()  # nothing of the job is left once its end can be seen
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
        for problem in self.bound.problems:
            self.event("Warning", REASON_INVALID_SETTING, problem)
        self.start_status_server()
        self.new_attempt()
        try:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # the queue's, held
            while self.tick():
                time.sleep(QUEUED_TICK if self.waiting else TICK)
        except Stop:
            if self.phase not in st.FINISHED:  # a SIGTERM while tearing a finished job down
                self.fail(status.REASON_SUPERVISOR_ERROR, "the local supervisor was terminated")
            self.teardown()
            self.flush()
        finally:
            self.teardown()  # deleted, or gone from the store: no end to write, nothing left


def _on_term(_signum: int, _frame: object) -> None:
    raise Stop


def main(argv: list[str] | None = None, share: capacity.Share | None = None) -> int:
    """The supervisor of one job (``share``: its share of this machine, when the queue took it:
    :mod:`trainjob.local.job.queueing`)."""
    parser = argparse.ArgumentParser(prog="python -m trainjob.local.job.supervisor")
    parser.add_argument("--home", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--uid", required=True)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_term)
    ptree.become_subreaper()
    sup = Supervisor(Path(args.home), args.namespace, args.name, args.uid, share)
    try:
        sup.run()
    except SystemExit:
        raise
    except BaseException as e:  # a bug: record it on the job, never leave it Running
        traceback.print_exc()
        sup.kill_all()
        try:
            if not sup.torn_down:  # run() tears down on its way out; a failed teardown: again
                sup.teardown()
            sup.fail(status.REASON_SUPERVISOR_ERROR, f"the local supervisor failed: {e!r}")
            sup.flush()
        except BaseException:
            traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
