"""The OptimizationJob reconciler: the sweep loop of :mod:`trainjob.optimizer.driver`, run by the
controller over its informer caches.

A pass is the driver's (:meth:`~trainjob.optimizer.driver.Driver.sync`): the trials (TrainJobs
labelled ``trainer.kubeflow.org/optimization-job=<name>`` and owned by the job) -> the pure
engine's decision -> trial TrainJobs created (an ownerReference to the OptimizationJob, so
deleting it collects them), early-stopped ones annotated and suspended -> one status write. The
driver reads the trials through :class:`CachedTrials`, the :class:`~trainjob.optimizer.driver.
Trials` view of the TrainJob and JobSet informers: no list call per pass, and each write the
pass makes goes back into the cache at once, so the next pass never counts a trial it made as
missing (a stale read could at worst re-create a trial of the same name: an AlreadyExists).

Early stopping needs each trial's intermediate objective values; a cluster's TrainJob keeps only
the latest report (``status.trainerStatus``, as upstream). :class:`ReportHistory` keeps, in
memory, the reports the TrainJob informer sees (every report the status server accepts is a
status write the informer delivers), :data:`MAX_REPORTS` per trial, for trials of a sweep only,
dropped with the TrainJob. A restarted controller starts with each trial's latest report only:
the completed trials' final values (in their status) survive, their curves do not.

Keys are ``namespace/name`` on a queue of their own (:class:`~trainjob.kube.queue.WorkQueue`):
an OptimizationJob event adds its key; a trial's event adds its job's (its label).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from trainjob.api import constants as c
from trainjob.api.optimization import OptimizationJob, OptimizationJobStatus, parse_optimization_job
from trainjob.api.trainer import TrainJob
from trainjob.core import conditions as cond
from trainjob.core import times
from trainjob.errors import InvalidError, NotFoundError
from trainjob.executor import model as st
from trainjob.executor.sweeps import FINISHED, phase
from trainjob.kube import resources as r
from trainjob.kube.client import Client
from trainjob.kube.errors import Forbidden, Invalid, NotFound
from trainjob.kube.events import EventRecorder
from trainjob.kube.informer import Informer
from trainjob.optimizer import driver as drv

log = logging.getLogger(__name__)

Obj = dict[str, Any]

MAX_REPORTS = 1000
"""Reports kept per trial for early stopping (the newest; a median rule reads a step's value)."""

REASON_INVALID = "InvalidOptimizationJob"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def sweep_of(trainjob: Mapping[str, Any]) -> str | None:
    """The OptimizationJob key (``namespace/name``) a TrainJob is a trial of, None if none."""
    m = _meta(trainjob)
    name = (m.get("labels") or {}).get(c.LABEL_OPTIMIZATION_JOB)
    return f"{m.get('namespace', '')}/{name}" if name else None


def trial_state(trainjob: Mapping[str, Any], jobset: Mapping[str, Any] | None) -> st.JobState:
    """A trial's TrainJob (and its JobSet, None before it exists) as the job model: Complete or
    Failed from its condition, Suspended while ``spec.suspend``, Running once its JobSet exists,
    else Created. (The cluster client's fuller :func:`trainjob.cluster.state.job_state` reads
    pods, which the controller does not cache.)"""
    m, spec = _meta(trainjob), trainjob.get("spec") or {}
    phase_, reason, message, completed = st.CREATED, "", "", None
    for k in (trainjob.get("status") or {}).get("conditions") or ():
        if k.get("status") == "True" and k.get("type") in (st.COMPLETE, st.FAILED):
            phase_, completed = k["type"], k.get("lastTransitionTime")
            reason, message = k.get("reason") or "", k.get("message") or ""
            break
    else:
        if spec.get("suspend"):
            phase_ = st.SUSPENDED
        elif jobset is not None:
            phase_ = st.RUNNING
    return st.JobState(
        name=m.get("name", ""),
        namespace=m.get("namespace", ""),
        phase=phase_,
        created=m.get("creationTimestamp") or "",
        completed=completed,
        reason=reason,
        message=message,
        trainjob=trainjob,
    )


class Refused(InvalidError):
    """The apiserver (or the TrainJob webhook) refused a trial: its message as it said it."""

    def __init__(self, message: str) -> None:
        self.text = message
        super().__init__([])

    def _message(self) -> str:
        return self.text


class ReportHistory:
    """The reports of each trial the TrainJob informer has seen (see the module docstring)."""

    def __init__(self, max_reports: int = MAX_REPORTS) -> None:
        self.max_reports = max_reports
        self._lock = threading.Lock()
        self._samples: dict[str, deque[st.MetricSample]] = {}

    def __len__(self) -> int:
        with self._lock:
            return sum(len(d) for d in self._samples.values())

    def observe(self, etype: str, trainjob: Mapping[str, Any]) -> None:
        """Keep the trial's latest report if it is new; forget a deleted trial."""
        if sweep_of(trainjob) is None:
            return
        key = r.TRAINJOBS.key(dict(trainjob))
        if etype == "DELETED":
            with self._lock:
                self._samples.pop(key, None)
            return
        sample = st.trainer_status_sample(trainjob)
        if sample is None:
            return
        with self._lock:
            seen = self._samples.setdefault(key, deque(maxlen=self.max_reports))
            if not seen or seen[-1].time != sample.time:
                seen.append(sample)

    def samples(self, name: str, namespace: str) -> list[st.MetricSample]:
        with self._lock:
            return list(self._samples.get(f"{namespace}/{name}", ()))


class CachedTrials:
    """The driver's :class:`~trainjob.optimizer.driver.Trials` over the controller's caches:
    reads from the TrainJob and JobSet informers, writes to the apiserver (and the result back
    into the TrainJob cache). A written-through object's watch event calls no handler
    (:meth:`~trainjob.kube.informer.Informer.update_if_newer`), so ``written`` is told of each
    write: the manager puts the trial on the TrainJob queue (a new trial needs its JobSet, a
    stopped one its JobSet suspended)."""

    keeps_metric_history = True

    def __init__(
        self,
        client: Client,
        trainjobs: Informer,
        jobsets: Informer,
        history: ReportHistory,
        written: Callable[[Obj], None] = lambda _obj: None,
    ) -> None:
        self.client = client
        self.trainjobs = trainjobs
        self.jobsets = jobsets
        self.history = history
        self.written = written

    def states(self, namespace: str | None = None, *, pods: bool = True) -> list[st.JobState]:
        out = []
        for tj in self.trainjobs.list():
            if sweep_of(tj) is None:
                continue
            if namespace is not None and _meta(tj).get("namespace") != namespace:
                continue
            out.append(trial_state(tj, self.jobsets.get(r.TRAINJOBS.key(tj))))
        return out

    def state(self, name: str, namespace: str) -> st.JobState:
        tj = self.trainjobs.get(f"{namespace}/{name}")
        if tj is None:
            raise NotFoundError(f'trainjobs.{c.GROUP} "{name}" not found')
        return trial_state(tj, self.jobsets.get(f"{namespace}/{name}"))

    def logs(
        self,
        name: str,
        namespace: str,
        job: str = "node",
        index: int = 0,
        follow: bool = False,
        *,
        job_index: int = 0,
        tail: int | None = None,
        previous: bool = False,
        timestamps: bool = False,
    ) -> Iterator[str]:
        """None: the controller reads no pod logs (no Katib stdout collector on a cluster; a
        trial reports its objective to the status endpoint)."""
        raise NotFoundError(f"the controller reads no log of trial {namespace}/{name}")

    def metric_history(self, name: str, namespace: str, *, since: int = 0) -> list[st.MetricSample]:
        return self.history.samples(name, namespace)[since:]

    def submit(self, trainjob: TrainJob, *, cwd: str | None = None) -> TrainJob:
        """Create the trial; the apiserver's or a webhook's refusal is :class:`Refused` (an
        InvalidError: the driver fails the job, as a template no trial can be made of)."""
        ns = trainjob.metadata.namespace or "default"
        try:
            created = self.client.create(r.TRAINJOBS, trainjob.to_dict(), ns)
        except (Invalid, Forbidden) as e:
            if isinstance(e, Forbidden) and "admission webhook" not in str(e):
                raise  # RBAC: the controller's install, not the job
            raise Refused(str(e)) from e
        self.trainjobs.update_if_newer(created)
        self.written(created)
        return trainjob

    def suspend(self, name: str, namespace: str) -> TrainJob:
        return self._patch(name, namespace, {"spec": {"suspend": True}})

    def annotate(
        self, name: str, namespace: str, annotations: Mapping[str, str | None]
    ) -> TrainJob:
        return self._patch(name, namespace, {"metadata": {"annotations": dict(annotations)}})

    def _patch(self, name: str, namespace: str, patch: Obj) -> TrainJob:
        patched = self.client.patch(r.TRAINJOBS, name, patch, namespace)
        self.trainjobs.update_if_newer(patched)
        self.written(patched)
        return TrainJob.model_validate(patched)


class OptimizationJobReconciler:
    """One pass per key (see the module docstring); a :class:`~trainjob.optimizer.driver.Driver`
    per OptimizationJob (a new one for a new uid), which caches its finished trials' curves."""

    def __init__(
        self,
        client: Client,
        jobs: Informer,
        trials: CachedTrials,
        recorder: EventRecorder,
    ) -> None:
        self.client = client
        self.jobs = jobs
        self.trials = trials
        self.recorder = recorder
        self._drivers: dict[str, tuple[str, drv.Driver]] = {}
        self._lock = threading.Lock()

    def reconcile(self, key: str) -> bool:
        """One pass of the job ``key``; whether to retry it (with backoff)."""
        obj = self.jobs.get(key)
        if obj is None or _meta(obj).get("deletionTimestamp"):
            self._forget(key)
            return False  # its trials go with it: owner references
        try:
            job = parse_optimization_job(obj)
        except InvalidError as e:
            self._invalid(obj, str(e))
            return False
        if phase(obj.get("status") or None) in FINISHED and not self._live_trials(job):
            return False
        uid = job.metadata.uid or ""
        with self._lock:
            known = self._drivers.get(key)
            if known is None or known[0] != uid:  # a new job of that name starts afresh
                known = self._drivers[key] = (uid, drv.Driver(self.trials))
            driver = known[1]
        before = phase(obj.get("status"))
        result = driver.sync(job, lambda status: self._write_status(obj, status))
        for action in result.actions:
            self.recorder.event(obj, action.type, action.reason, "Reconcile", action.message)
        after = phase(result.status.to_dict())
        if after in FINISHED and before not in FINISHED:
            condition = result.decision.condition
            message = condition[2] if condition else after
            kind = "Warning" if after == "Failed" else "Normal"
            reason = condition[1] if condition else after
            self.recorder.event(obj, kind, reason, "Reconcile", message)
        return any(a.type == "Warning" for a in result.actions)

    def _live_trials(self, job: OptimizationJob) -> bool:
        ns = job.metadata.namespace or "default"
        return any(
            not s.finished and not s.spec.get("suspend")
            for s in self.trials.states(ns)
            if (_meta(s.trainjob).get("labels") or {}).get(c.LABEL_OPTIMIZATION_JOB)
            == job.metadata.name
        )

    def _forget(self, key: str) -> None:
        with self._lock:
            self._drivers.pop(key, None)

    def _write_status(self, obj: Obj, status: OptimizationJobStatus) -> None:
        """The status subresource, once per pass, only when it changes."""
        new = status.to_dict()
        if new == (obj.get("status") or {}):
            return
        m = _meta(obj)
        try:
            written = self.client.patch(
                r.OPTIMIZATION_JOBS,
                m.get("name", ""),
                {"status": {**{k: None for k in obj.get("status") or {}}, **new}},
                m.get("namespace"),
                subresource="status",
            )
        except NotFound:
            return
        self.jobs.update_if_newer(written)

    def _invalid(self, obj: Obj, message: str) -> None:
        """A job the apiserver took but trainjob's rules refuse (no webhook installed): Failed."""
        conds = list((obj.get("status") or {}).get("conditions") or [])
        if cond.is_true(conds, "Failed"):
            return
        cond.set_condition(conds, "Failed", cond.TRUE, REASON_INVALID, message, now=times.now())
        m = _meta(obj)
        try:
            written = self.client.patch(
                r.OPTIMIZATION_JOBS,
                m.get("name", ""),
                {"status": {"conditions": conds}},
                m.get("namespace"),
                subresource="status",
            )
        except NotFound:
            return
        self.jobs.update_if_newer(written)
        self.recorder.event(obj, "Warning", REASON_INVALID, "Reconcile", message)
