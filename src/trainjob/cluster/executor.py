"""``KubernetesExecutor``: TrainJobs on a cluster, through its API (trainjob's or upstream's
controller and JobSet run them there).

The Kubernetes implementation of :class:`trainjob.executor.base.Executor`: the CLI's
``--backend kubernetes`` and the SDK's kubernetes backend both act through it, so they read and
change a job the same way. The TrainJob, its JobSet and its pods become the same job model the
local store gives (:mod:`trainjob.cluster.state`), events are the cluster's core events about the
TrainJob, and logs are the pods' logs, followed across a Job's retries and a JobSet's restarts.
``submit`` checks each TrainJob against its runtime with the admission webhook's rules first, then
server-side applies the runtimes given with it (as ``kubectl apply`` would) and creates the
TrainJob; what the cluster still refuses comes back as the apiserver's error
(:mod:`trainjob.kube.errors`). Requests, in the TrainJob's namespace:

    POST/GET/PATCH/DELETE  .../trainer.kubeflow.org/v1alpha1/namespaces/NS/trainjobs[/NAME]
    GET  .../jobset.x-k8s.io/v1alpha2/namespaces/NS/jobsets[/NAME]
    GET  /api/v1/namespaces/NS/pods?labelSelector=jobset.sigs.k8s.io/jobset-name[=NAME]
    GET  /api/v1/namespaces/NS/pods/POD/log?container=C[&follow=true]
    GET  /api/v1/namespaces/NS/events
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trainjob.api import constants as c
from trainjob.api.load import parse
from trainjob.api.trainer import ClusterTrainingRuntime, Runtime, TrainingRuntime, TrainJob
from trainjob.cluster import state as cs
from trainjob.core import jobset as js
from trainjob.errors import InvalidError, NotFoundError, TrainJobError
from trainjob.executor import model as st
from trainjob.executor.base import Executor
from trainjob.executor.steps import step_name
from trainjob.kube import resources as r
from trainjob.kube.errors import Forbidden, NotFound

if TYPE_CHECKING:
    from trainjob.kube import Client
    from trainjob.workspace.pack import Snapshot

FIELD_MANAGER = "trainjob-cli"
log = logging.getLogger(__name__)

Obj = dict[str, Any]


class KubernetesExecutor(Executor):
    """TrainJobs of the cluster a kubeconfig (and context) names, or of a given ``kube`` client."""

    backend = "kubernetes"
    poll_interval = 1.0

    def __init__(
        self, kubeconfig: str | None = None, context: str | None = None, *, kube: Any = None
    ) -> None:
        if kube is None:
            from trainjob.kube import Client

            kube = Client.from_config(kubeconfig, context)
        self.kube: Client = kube

    @property
    def default_namespace(self) -> str:
        """The kubeconfig context's namespace, as kubectl uses it."""
        return self.kube.namespace or "default"

    def close(self) -> None:
        self.kube.close()

    # -- jobs -----------------------------------------------------------------------------------

    def exists(self, name: str, namespace: str) -> bool:
        return self.kube.get_or_none(r.TRAINJOBS, name, namespace) is not None

    def submit(
        self,
        trainjob: TrainJob,
        runtimes: Sequence[Runtime] = (),
        *,
        cwd: str | None = None,
        workspace: Snapshot | None = None,
    ) -> TrainJob:
        """Check as the admission webhook would, apply the given runtimes, create the TrainJob
        (and store its workspace: :mod:`trainjob.cluster.workspaces`)."""
        self.check(trainjob, runtimes)
        body = trainjob.to_dict()
        if workspace is not None or trainjob.metadata.annotations:
            from trainjob.cluster import workspaces

            if workspace is not None:  # the runtime may say where a large archive goes
                where = functools.partial(self._workspace_prefix, trainjob, runtimes)
                workspaces.before_create(body, workspace, where)
            else:  # a rerun of a TrainJob that names a snapshot: it must still be stored
                ns = trainjob.metadata.namespace or self.default_namespace
                workspaces.check_rerun(self.kube, body, ns)
        for rt in runtimes:
            obj = rt.to_dict()
            if isinstance(rt, TrainingRuntime):
                obj.setdefault("metadata", {}).setdefault(
                    "namespace", trainjob.metadata.namespace or self.default_namespace
                )
            self.kube.apply(obj, field_manager=FIELD_MANAGER)
        ns = trainjob.metadata.namespace or self.default_namespace
        return self.create(body, ns, workspace=workspace, checked=True)

    def create(
        self,
        trainjob: Obj,
        namespace: str,
        *,
        workspace: Snapshot | None = None,
        checked: bool = False,
    ) -> TrainJob:
        """Create a TrainJob object as given (the SDK builds it and lets the cluster check it),
        with its ``workspace`` stored (``checked``: :func:`workspaces.before_create` ran)."""
        if workspace is not None:
            from trainjob.cluster import workspaces

            if not checked:
                where = functools.partial(self._workspace_prefix, _trainjob(trainjob), ())
                workspaces.before_create(trainjob, workspace, where)
        created = self.kube.create(r.TRAINJOBS, trainjob, namespace, field_manager=None)
        if workspace is not None:
            workspaces.after_create(self.kube, created, workspace)
        return _trainjob(created)

    def check(
        self, trainjob: TrainJob, runtimes: Sequence[Runtime] = (), *, cwd: str | None = None
    ) -> None:
        """Field errors before anything is sent: the same rules as trainjob's admission webhook,
        against the runtime from the files or the cluster (when neither has it, the cluster
        says so), so a cluster without trainjob's webhook refuses nothing silently."""
        from trainjob.runtime import validate

        errors = validate(trainjob, self._runtime(trainjob, runtimes))
        if errors:
            raise InvalidError(errors, f"{c.TRAINJOB_KIND}.{c.GROUP}", trainjob.metadata.name or "")

    def _runtime(self, trainjob: TrainJob, runtimes: Sequence[Runtime]) -> Runtime | None:
        """The TrainJob's runtime: from ``runtimes``, else the cluster's (None: neither has it)."""
        ns = trainjob.metadata.namespace or self.default_namespace
        ref = trainjob.spec.runtime_ref
        kind = ref.kind or c.CLUSTER_TRAINING_RUNTIME_KIND
        runtime: Runtime | None = next(
            (rt for rt in runtimes if rt.kind == kind and rt.metadata.name == ref.name), None
        )
        if runtime is None:
            cluster = kind == c.CLUSTER_TRAINING_RUNTIME_KIND
            res = r.CLUSTER_TRAINING_RUNTIMES if cluster else r.TRAINING_RUNTIMES
            found = self.kube.get_or_none(res, ref.name, None if cluster else ns)
            parsed = parse(found) if found is not None else None
            if isinstance(parsed, ClusterTrainingRuntime | TrainingRuntime):
                runtime = parsed
        return runtime

    def _workspace_prefix(self, trainjob: TrainJob, runtimes: Sequence[Runtime]) -> str | None:
        """Where the TrainJob's runtime puts workspace archives too large for a ConfigMap."""
        from trainjob.cluster import workspaces

        return workspaces.runtime_uri(self._runtime(trainjob, runtimes))

    def get(self, name: str, namespace: str) -> TrainJob:
        return _trainjob(self.kube.get(r.TRAINJOBS, name, namespace))

    def _trainjobs(self, namespace: str | None) -> list[Obj]:
        items, _ = self.kube.list_all(r.TRAINJOBS, namespace)
        return sorted(
            items,
            key=lambda o: (
                str(cs.meta(o).get("creationTimestamp", "")),
                cs.meta(o).get("namespace", ""),
                cs.meta(o).get("name", ""),
            ),
        )

    def _pods(self, name: str, namespace: str) -> list[Obj]:
        found = self.kube.list(r.PODS, namespace, label_selector=f"{js.LABEL_JOBSET_NAME}={name}")
        return list(found.get("items") or [])

    def state(self, name: str, namespace: str) -> st.JobState:
        trainjob = self.kube.get(r.TRAINJOBS, name, namespace)
        jobset = self.kube.get_or_none(r.JOBSETS, name, namespace)
        return cs.job_state(trainjob, jobset, self._pods(name, namespace))

    def states(self, namespace: str | None = None, *, pods: bool = True) -> list[st.JobState]:
        """Every TrainJob's state from three list calls (TrainJobs, JobSets, their pods), not three
        calls a job: one round of requests on a busy cluster. Pods are read even without
        ``pods``: a job is Running once its pods run."""
        trainjobs = self._trainjobs(namespace)
        if not trainjobs:
            return []
        jobsets: dict[tuple[str, str], Obj] = {
            _key(o): o for o in self._all(r.JOBSETS, namespace, optional=True)
        }
        by_job: dict[tuple[str, str], list[Obj]] = {}
        for p in self._all(r.PODS, namespace, label_selector=js.LABEL_JOBSET_NAME):
            labels = cs.meta(p).get("labels") or {}
            owner = (
                cs.meta(p).get("namespace") or namespace or "",
                labels[js.LABEL_JOBSET_NAME],
            )
            by_job.setdefault(owner, []).append(p)
        return [cs.job_state(o, jobsets.get(_key(o)), by_job.get(_key(o), [])) for o in trainjobs]

    def _all(
        self,
        res: r.Resource,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        optional: bool = False,
    ) -> list[Obj]:
        """Every object of ``res`` in ``namespace`` (None: all); [] for a type the cluster does not
        serve when ``optional`` (no JobSet CRD yet)."""
        try:
            items, _ = self.kube.list_all(res, namespace, label_selector=label_selector)
        except NotFound:
            if optional:
                return []
            raise
        return items

    def events(self, name: str, namespace: str) -> list[st.Event]:
        pods = {cs.meta(p).get("name", "") for p in self._pods(name, namespace)}
        items, _ = self.kube.list_all(r.CORE_EVENTS, namespace)
        out = [cs.event(ev) for ev in items if cs.about_trainjob(ev, name, pods)]
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
        tail: int | None = None,
        previous: bool = False,
        timestamps: bool = False,
    ) -> Iterator[str]:
        """One pod's log; with ``follow``, waits for the pod to leave Pending, then streams it,
        and goes on with the pod that takes over the step (:meth:`_successor`). ``tail``,
        ``previous`` and ``timestamps`` are the pod log API's ``tailLines``, ``previous`` (the
        container's previous instance) and ``timestamps``."""
        step = (job, index, job_index)
        if previous:
            follow = False
        while True:
            pods = self._pods(name, namespace)
            found = [p for p in pods if cs.pod_state(p).step == step]
            if not found:
                if not pods:
                    self.kube.get(r.TRAINJOBS, name, namespace)  # NotFound when the job is not
                    if follow and not self.state(name, namespace).finished:
                        time.sleep(self.poll_interval)  # its JobSet has not made the pods yet
                        continue
                    raise NotFoundError(
                        f'TrainJob "{name}" has no pods yet: its JobSet has not started them '
                        "(trainjob describe job NAME shows why)"
                    )
                steps = ", ".join(sorted({step_name(*cs.pod_state(p).step) for p in pods}))
                raise NotFoundError(
                    f'pod {job}-{index} of TrainJob "{name}" not found (pods: {steps})'
                )
            pod = max(found, key=lambda p: cs.meta(p).get("creationTimestamp", ""))
            if not follow or cs.pod_state(pod).phase != st.POD_PENDING:
                break
            if self.state(name, namespace).finished:  # a pod that never started: say why now
                follow = False
                break
            time.sleep(self.poll_interval)
        if not follow:
            return self.kube.logs(
                cs.meta(pod)["name"],
                namespace,
                container=_container(pod, job),
                tail_lines=tail,
                previous=previous,
                timestamps=timestamps,
            )
        return self._follow(name, namespace, step, pod, tail, timestamps)

    def _follow(
        self,
        name: str,
        namespace: str,
        step: tuple[str, int, int],
        pod: Obj,
        tail: int | None = None,
        timestamps: bool = False,
    ) -> Iterator[str]:
        """Stream ``pod``'s log (its last ``tail`` lines first), then the log of each pod that
        takes over the step (whole)."""
        followed: set[str] = set()
        current: Obj | None = pod
        while current is not None:
            followed.add(cs.meta(current)["name"])
            yield from self.kube.logs(
                cs.meta(current)["name"],
                namespace,
                container=_container(current, step[0]),
                follow=True,
                tail_lines=tail,
                timestamps=timestamps,
            )
            tail = None
            current = self._successor(name, namespace, step, cs.meta(current)["name"], followed)

    def _successor(
        self, name: str, namespace: str, step: tuple[str, int, int], ended: str, followed: set[str]
    ) -> Obj | None:
        """After a followed log ended: the pod that takes over the step, once it runs (a Job's
        retry of a failed pod, or the new pods of a JobSet restart, which deletes the old ones);
        None when the step is over (the pod succeeded, or its stream closed while it still runs,
        where kubectl stops too) or the job has finished."""
        while True:
            pod = self.kube.get_or_none(r.PODS, ended, namespace)
            replaced = pod is None or bool(cs.meta(pod).get("deletionTimestamp"))
            if not replaced and cs.pod_state(pod or {}).phase != st.POD_FAILED:
                return None
            newer = [
                p
                for p in self._pods(name, namespace)
                if cs.pod_state(p).step == step
                and cs.meta(p).get("name") not in followed
                and cs.pod_state(p).phase != st.POD_PENDING
                and not cs.meta(p).get("deletionTimestamp")
            ]
            if newer:
                return max(newer, key=lambda p: cs.meta(p).get("creationTimestamp", ""))
            if self.state(name, namespace).finished:
                return None
            time.sleep(self.poll_interval)

    def suspend(self, name: str, namespace: str) -> TrainJob:
        return self._set_suspend(name, namespace, True)

    def resume(self, name: str, namespace: str) -> TrainJob:
        return self._set_suspend(name, namespace, False)

    def annotate(
        self, name: str, namespace: str, annotations: Mapping[str, str | None]
    ) -> TrainJob:
        """A merge patch of the TrainJob's annotations (None removes one)."""
        patch = {"metadata": {"annotations": dict(annotations)}}
        return _trainjob(self.kube.patch(r.TRAINJOBS, name, patch, namespace))

    def _set_suspend(self, name: str, namespace: str, value: bool) -> TrainJob:
        patched = self.kube.patch(r.TRAINJOBS, name, {"spec": {"suspend": value}}, namespace)
        return _trainjob(patched)

    def delete(self, name: str, namespace: str, *, purge: bool = False) -> None:
        """Delete the TrainJob (its JobSet and pods follow by owner); the PVCs its JobSet's
        volumeClaimPolicies made stay (JobSet's Retain) unless ``purge``."""
        kept = self.outputs(name, namespace) if purge else ()
        self.kube.delete(r.TRAINJOBS, name, namespace)
        for out in kept:
            with contextlib.suppress(NotFound):
                self.kube.delete(r.PERSISTENT_VOLUME_CLAIMS, out.name, namespace)

    def outputs(self, name: str, namespace: str) -> tuple[st.Output, ...]:
        """The PVCs JobSet made for the job's JobSet (label ``jobset.sigs.k8s.io/jobset-name``):
        they outlive it, as JobSet's ``retentionPolicy.whenDeleted`` Retain has them."""
        try:
            items, _ = self.kube.list_all(
                r.PERSISTENT_VOLUME_CLAIMS,
                namespace,
                label_selector=f"{js.LABEL_JOBSET_NAME}={name}",
            )
        except (Forbidden, NotFound) as e:  # not allowed to list PVCs: nothing known
            log.debug("PVCs of %s/%s not listed: %s", namespace, name, e)
            return ()
        return tuple(
            st.Output(
                str(obj["metadata"]["name"]),
                f"persistentvolumeclaim/{obj['metadata']['name']}",
                f"PVC of JobSet {name}",
            )
            for obj in sorted(items, key=lambda o: str(o["metadata"]["name"]))
        )

    # -- runtimes -------------------------------------------------------------------------------

    def list_runtimes(self, namespace: str | None = None) -> list[Runtime]:
        """TrainingRuntimes (of ``namespace``, else of every namespace), then
        ClusterTrainingRuntimes; a cluster without the TrainingRuntime CRD has only the latter.
        A 403 is an error, as upstream's SDK has it (namespaced runtimes take precedence)."""
        found: list[Runtime] = []
        for res in (r.TRAINING_RUNTIMES, r.CLUSTER_TRAINING_RUNTIMES):
            try:
                items, _ = self.kube.list_all(res, namespace if res.namespaced else None)
            except NotFound as e:
                if not res.namespaced:
                    raise
                log.debug("TrainingRuntimes not listed: %s", e)
                continue
            for obj in items:
                obj.setdefault("kind", res.kind)
                obj.setdefault("apiVersion", res.api_version)
                rt = parse(obj)
                if isinstance(rt, ClusterTrainingRuntime | TrainingRuntime):
                    found.append(rt)
        return found

    def get_runtime(self, name: str, kind: str, namespace: str | None = None) -> Runtime:
        cluster = kind == c.CLUSTER_TRAINING_RUNTIME_KIND
        res = r.CLUSTER_TRAINING_RUNTIMES if cluster else r.TRAINING_RUNTIMES
        obj = self.kube.get(res, name, None if cluster else namespace or self.default_namespace)
        obj.setdefault("kind", res.kind)
        obj.setdefault("apiVersion", res.api_version)
        rt = parse(obj)
        if not isinstance(rt, ClusterTrainingRuntime | TrainingRuntime):  # pragma: no cover
            raise TrainJobError(f"expected a {kind}, got {obj.get('kind')}")
        return rt


def _container(pod: Obj, job: str) -> str | None:
    ctr = cs.step_container(pod, job)
    return str(ctr.get("name")) if ctr else None


def _key(obj: Obj) -> tuple[str, str]:
    return cs.meta(obj).get("namespace", ""), cs.meta(obj).get("name", "")


def _trainjob(obj: Obj) -> TrainJob:
    tj = parse(obj)
    if not isinstance(tj, TrainJob):  # pragma: no cover - the API serves TrainJobs here
        raise TrainJobError(f"expected a TrainJob, got {obj.get('kind')}")
    return tj
