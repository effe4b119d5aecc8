"""The job commands on a Kubernetes cluster: what they read and change, over the cluster's API.

:class:`ClusterJobs` has the methods of :class:`trainjob.local.LocalExecutor` that
:mod:`trainjob.cli.jobs` calls (``submit``, ``get``, ``list``, ``state``, ``states``, ``events``,
``logs``, ``suspend``, ``resume``, ``delete``, ``list_runtimes``), so every command prints the same
tables for both backends. The TrainJob, its JobSet and its pods become the same
:class:`~trainjob.local.state.JobState` the local store gives (:func:`job_state`, pure), events
are the cluster's core events about the TrainJob (the SDK's rule), and logs are the pods' logs.
``run -f`` checks each TrainJob against its runtime with the admission webhook's rules, then
server-side applies the runtimes given in the same files (as ``kubectl apply`` would) and creates
the TrainJobs; what the cluster still refuses comes back as kubectl prints it.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType

    from trainjob.kube import Client

from trainjob.api import constants as c
from trainjob.api.load import parse
from trainjob.api.trainer import ClusterTrainingRuntime, Runtime, TrainingRuntime, TrainJob
from trainjob.core import jobset as js
from trainjob.errors import InvalidError, NotFoundError, TrainJobError
from trainjob.local import state as st

FIELD_MANAGER = "trainjob-cli"
POLL = 1.0
"""Seconds between two looks at a pending pod before following its log."""

Obj = dict[str, Any]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def pod_state(pod: Mapping[str, Any]) -> st.PodState:
    """One pod of a JobSet as the local backend reports a pod."""
    meta, status = _meta(pod), pod.get("status") or {}
    labels, notes = meta.get("labels") or {}, meta.get("annotations") or {}
    terminated = [
        (cs.get("state") or {}).get("terminated") or {}
        for cs in status.get("containerStatuses") or ()
    ]
    ended = [t for t in terminated if t]
    failed = next((t for t in ended if t.get("exitCode")), None)
    last = failed or (ended[0] if ended else None)
    ready = any(
        k.get("type") == "Ready" and k.get("status") == "True"
        for k in status.get("conditions") or ()
    )
    message = status.get("message") or ""
    if not message and failed:
        message = failed.get("message") or failed.get("reason") or ""
    return st.PodState(
        job=labels.get(js.LABEL_REPLICATED_JOB_NAME, ""),
        index=_int(labels.get(js.LABEL_COMPLETION_INDEX, notes.get(js.LABEL_COMPLETION_INDEX))),
        name=meta.get("name", ""),
        phase=status.get("phase") or st.POD_PENDING,
        exit_code=None if last is None else _int(last.get("exitCode")),
        started=status.get("startTime"),
        finished=last.get("finishedAt") if last and len(ended) == len(terminated) else None,
        restarts=_int(labels.get(js.LABEL_RESTART_ATTEMPT)),
        job_index=_int(labels.get(js.LABEL_JOB_INDEX)),
        message=message,
        ready=ready,
    )


def job_state(
    trainjob: Mapping[str, Any], jobset: Mapping[str, Any] | None, pods: Sequence[Mapping[str, Any]]
) -> st.JobState:
    """A TrainJob, its JobSet (None before it exists) and its pods -> the local backend's view.

    Phase: Complete or Failed from the TrainJob's condition, Suspended while ``spec.suspend``,
    Running once a pod runs (or has run), else Created. Started: the first pod's start; completed:
    when the Complete/Failed condition turned True; restarts: the JobSet's.
    """
    meta, spec = _meta(trainjob), trainjob.get("spec") or {}
    conditions = (trainjob.get("status") or {}).get("conditions") or []
    order = [
        rj.get("name") for rj in ((jobset or {}).get("spec") or {}).get("replicatedJobs") or ()
    ]
    states = sorted(
        (pod_state(p) for p in pods),
        key=lambda p: (order.index(p.job) if p.job in order else len(order), p.job_index, p.index),
    )
    phase, reason, message, completed = st.CREATED, "", "", None
    for cond in conditions:
        if cond.get("status") == "True" and cond.get("type") in (st.COMPLETE, st.FAILED):
            phase, completed = cond["type"], cond.get("lastTransitionTime")
            reason, message = cond.get("reason") or "", cond.get("message") or ""
            break
    else:
        if spec.get("suspend"):
            phase = st.SUSPENDED
        elif any(p.phase != st.POD_PENDING for p in states):
            phase = st.RUNNING
    starts = sorted(p.started for p in states if p.started)
    return st.JobState(
        name=meta.get("name", ""),
        namespace=meta.get("namespace", ""),
        phase=phase,
        created=meta.get("creationTimestamp") or "",
        started=starts[0] if starts else None,
        completed=completed,
        restarts=_int(((jobset or {}).get("status") or {}).get("restarts")),
        reason=reason,
        message=message,
        pods=tuple(states),
    )


class ClusterJobs:
    """The job commands' backend on a cluster (see the module docstring)."""

    def __init__(
        self, kubeconfig: str | None = None, context: str | None = None, *, kube: Any = None
    ) -> None:
        # imported here: the local commands do not pay for the HTTP client
        from trainjob.kube import Client
        from trainjob.kube import resources as r

        self.r: ModuleType = r
        self.kube: Client = kube if kube is not None else Client.from_config(kubeconfig, context)

    @property
    def default_namespace(self) -> str:
        """The kubeconfig context's namespace, as kubectl uses it."""
        return self.kube.namespace or "default"

    def exists(self, name: str, namespace: str) -> bool:
        return self.kube.get_or_none(self.r.TRAINJOBS, name, namespace) is not None

    def submit(self, trainjob: TrainJob, runtimes: Sequence[Runtime] = ()) -> TrainJob:
        """Check as the admission webhook would, apply the given runtimes, create the TrainJob."""
        self.check(trainjob, runtimes)
        for rt in runtimes:
            obj = rt.to_dict()
            if isinstance(rt, TrainingRuntime):
                obj.setdefault("metadata", {}).setdefault(
                    "namespace", trainjob.metadata.namespace or self.default_namespace
                )
            self.kube.apply(obj, field_manager=FIELD_MANAGER)
        ns = trainjob.metadata.namespace or self.default_namespace
        created = self.kube.create(self.r.TRAINJOBS, trainjob.to_dict(), ns)
        return _trainjob(created)

    def check(self, trainjob: TrainJob, runtimes: Sequence[Runtime] = ()) -> None:
        """Field errors before anything is sent: the same rules as trainjob's admission webhook,
        against the runtime from the files or the cluster (when neither has it, the cluster
        says so), so a cluster without trainjob's webhook refuses nothing silently."""
        from trainjob.runtime import validate

        ns = trainjob.metadata.namespace or self.default_namespace
        ref = trainjob.spec.runtime_ref
        kind = ref.kind or c.CLUSTER_TRAINING_RUNTIME_KIND
        runtime: Runtime | None = next(
            (rt for rt in runtimes if rt.kind == kind and rt.metadata.name == ref.name), None
        )
        if runtime is None:
            cluster = kind == c.CLUSTER_TRAINING_RUNTIME_KIND
            res = self.r.CLUSTER_TRAINING_RUNTIMES if cluster else self.r.TRAINING_RUNTIMES
            found = self.kube.get_or_none(res, ref.name, None if cluster else ns)
            parsed = parse(found) if found is not None else None
            if isinstance(parsed, ClusterTrainingRuntime | TrainingRuntime):
                runtime = parsed
        errors = validate(trainjob, runtime)
        if errors:
            raise InvalidError(errors, f"{c.TRAINJOB_KIND}.{c.GROUP}", trainjob.metadata.name or "")

    def get(self, name: str, namespace: str) -> TrainJob:
        return _trainjob(self.kube.get(self.r.TRAINJOBS, name, namespace))

    def list(self, namespace: str | None = None) -> builtins.list[TrainJob]:
        return [_trainjob(o) for o in self._trainjobs(namespace)]

    def _trainjobs(self, namespace: str | None) -> builtins.list[Obj]:
        if namespace is None:
            found = self.kube.request("GET", self.r.TRAINJOBS.path(None))
        else:
            found = self.kube.list(self.r.TRAINJOBS, namespace)
        return sorted(
            found.get("items") or [],
            key=lambda o: (_meta(o).get("namespace", ""), _meta(o).get("name", "")),
        )

    def _pods(self, name: str, namespace: str) -> builtins.list[Obj]:
        found = self.kube.list(
            self.r.PODS, namespace, label_selector=f"{js.LABEL_JOBSET_NAME}={name}"
        )
        return list(found.get("items") or [])

    def state(self, name: str, namespace: str) -> st.JobState:
        trainjob = self.kube.get(self.r.TRAINJOBS, name, namespace)
        jobset = self.kube.get_or_none(self.r.JOBSETS, name, namespace)
        return job_state(trainjob, jobset, self._pods(name, namespace))

    def states(self, namespace: str | None = None) -> builtins.list[st.JobState]:
        """Every TrainJob's state from three list calls (TrainJobs, JobSets, their pods), not
        three calls a job: ``get jobs`` stays one round of requests on a busy cluster."""
        trainjobs = self._trainjobs(namespace)
        jobsets: dict[tuple[str, str], Obj] = {
            _key(o): o for o in self._all(self.r.JOBSETS, namespace, optional=True)
        }
        pods: dict[tuple[str, str], builtins.list[Obj]] = {}
        for p in self._all(self.r.PODS, namespace, label_selector=js.LABEL_JOBSET_NAME):
            owner = (
                _meta(p).get("namespace", ""),
                (_meta(p).get("labels") or {})[js.LABEL_JOBSET_NAME],
            )
            pods.setdefault(owner, []).append(p)
        return [job_state(o, jobsets.get(_key(o)), pods.get(_key(o), [])) for o in trainjobs]

    def _all(
        self,
        res: Any,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        optional: bool = False,
    ) -> builtins.list[Obj]:
        """Every object of ``res`` in ``namespace`` (None: all); [] for a type the cluster does not
        serve when ``optional`` (no JobSet CRD yet)."""
        from trainjob.kube.errors import NotFound

        params = {"labelSelector": label_selector} if label_selector else None
        try:
            found = self.kube.request("GET", res.path(namespace), params=params)
        except NotFound:
            if optional:
                return []
            raise
        return list(found.get("items") or [])

    def events(self, name: str, namespace: str) -> builtins.list[st.Event]:
        from trainjob.client.backends.kubernetes import about_trainjob

        pods = {_meta(p).get("name", "") for p in self._pods(name, namespace)}
        found = self.kube.list(self.r.CORE_EVENTS, namespace).get("items") or []
        out = []
        for ev in found:
            if not about_trainjob(ev, name, pods):
                continue
            obj = ev.get("involvedObject") or {}
            when = (
                ev.get("lastTimestamp")
                or ev.get("eventTime")
                or ev.get("firstTimestamp")
                or _meta(ev).get("creationTimestamp")
                or ""
            )
            out.append(
                st.Event(
                    type=ev.get("type") or "Normal",
                    reason=ev.get("reason") or "",
                    message=ev.get("message") or "",
                    timestamp=str(when)[:19] + "Z" if when else "",
                    involved_kind=obj.get("kind", ""),
                    involved_name=obj.get("name", ""),
                )
            )
        out.sort(key=lambda e: e.timestamp)
        return out

    def logs(
        self,
        name: str,
        namespace: str,
        job: str = c.JOB_NODE,
        index: int = 0,
        follow: bool = False,
        *,
        job_index: int = 0,
    ) -> Iterator[str]:
        """One pod's log; with ``follow``, waits for the pod to leave Pending, then streams it,
        and goes on with the pod that takes over the step (:meth:`_successor`)."""
        while True:
            pods = self._pods(name, namespace)
            found = [
                p
                for p in pods
                if (s := pod_state(p)).job == job and s.index == index and s.job_index == job_index
            ]
            if not found:
                if not pods:
                    self.kube.get(self.r.TRAINJOBS, name, namespace)  # NotFound when the job is not
                    raise NotFoundError(
                        f'TrainJob "{name}" has no pods yet: its JobSet has not started them '
                        "(trainjob describe job NAME shows why)"
                    )
                steps = ", ".join(sorted({_step(pod_state(p)) for p in pods}))
                raise NotFoundError(
                    f'pod {job}-{index} of TrainJob "{name}" not found (pods: {steps})'
                )
            pod = max(found, key=lambda p: _meta(p).get("creationTimestamp", ""))
            if not follow or pod_state(pod).phase != st.POD_PENDING:
                break
            if self.state(name, namespace).finished:  # a pod that never started: say why now
                follow = False
                break
            time.sleep(POLL)
        if not follow:
            return self.kube.logs(_meta(pod)["name"], namespace, container=_container(pod, job))
        return self._follow(name, namespace, (job, index, job_index), pod)

    def _follow(
        self, name: str, namespace: str, step: tuple[str, int, int], pod: Obj
    ) -> Iterator[str]:
        """Stream ``pod``'s log, then the log of each pod that takes over the step."""
        followed: set[str] = set()
        current: Obj | None = pod
        while current is not None:
            followed.add(_meta(current)["name"])
            yield from self.kube.logs(
                _meta(current)["name"],
                namespace,
                container=_container(current, step[0]),
                follow=True,
            )
            current = self._successor(name, namespace, step, _meta(current)["name"], followed)

    def _successor(
        self, name: str, namespace: str, step: tuple[str, int, int], ended: str, followed: set[str]
    ) -> Obj | None:
        """After a followed log ended: the pod that takes over the step, once it runs (a Job's
        retry of a failed pod, or the new pods of a JobSet restart, which deletes the old ones);
        None when the step is over (the pod succeeded, or its stream closed while it still runs,
        where kubectl stops too) or the job has finished."""
        while True:
            pod = self.kube.get_or_none(self.r.PODS, ended, namespace)
            replaced = pod is None or bool(_meta(pod).get("deletionTimestamp"))
            if not replaced and pod_state(pod or {}).phase != st.POD_FAILED:
                return None
            newer = [
                p
                for p in self._pods(name, namespace)
                if _step_of(pod_state(p)) == step
                and _meta(p).get("name") not in followed
                and pod_state(p).phase != st.POD_PENDING
                and not _meta(p).get("deletionTimestamp")
            ]
            if newer:
                return max(newer, key=lambda p: _meta(p).get("creationTimestamp", ""))
            if self.state(name, namespace).finished:
                return None
            time.sleep(POLL)

    def suspend(self, name: str, namespace: str) -> TrainJob:
        return self._set_suspend(name, namespace, True)

    def resume(self, name: str, namespace: str) -> TrainJob:
        return self._set_suspend(name, namespace, False)

    def _set_suspend(self, name: str, namespace: str, value: bool) -> TrainJob:
        patched = self.kube.patch(self.r.TRAINJOBS, name, {"spec": {"suspend": value}}, namespace)
        return _trainjob(patched)

    def delete(self, name: str, namespace: str) -> None:
        self.kube.delete(self.r.TRAINJOBS, name, namespace)

    def list_runtimes(self) -> builtins.list[Runtime]:
        found: builtins.list[Runtime] = []
        for res in (self.r.CLUSTER_TRAINING_RUNTIMES, self.r.TRAINING_RUNTIMES):
            path = res.path(None)
            for obj in self.kube.request("GET", path).get("items") or []:
                rt = parse(obj)
                if isinstance(rt, ClusterTrainingRuntime | TrainingRuntime):
                    found.append(rt)
        return found


def _container(pod: Mapping[str, Any], job: str) -> str | None:
    """The container whose log a step shows: the one named like the step's job, else the first."""
    names = [ctr.get("name") for ctr in (pod.get("spec") or {}).get("containers") or ()]
    return job if job in names else (str(names[0]) if names else None)


def _step_of(p: st.PodState) -> tuple[str, int, int]:
    return p.job, p.index, p.job_index


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    return _meta(obj).get("namespace", ""), _meta(obj).get("name", "")


def _step(p: st.PodState) -> str:
    return f"{p.job}-{p.job_index}-{p.index}" if p.job_index else f"{p.job}-{p.index}"


def _trainjob(obj: Obj) -> TrainJob:
    tj = parse(obj)
    if not isinstance(tj, TrainJob):  # pragma: no cover - the API serves TrainJobs here
        raise TrainJobError(f"expected a TrainJob, got {obj.get('kind')}")
    return tj
