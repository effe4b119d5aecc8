"""``KubernetesSweepExecutor``: OptimizationJobs on a cluster, as the OptimizationJob CR.

The sweep runs in the cluster's trainjob controller (:mod:`trainjob.controller.optimizationjob`),
which makes the trials, stops them and writes the job's status; this side only creates, reads,
lists and deletes the CR and reads its Events, so the SDK's ``OptimizerClient`` and the CLI's
sweep verbs act on a cluster as they do locally. ``create`` checks the job as the controller's
webhook does (:func:`trainjob.api.optimization.parse_optimization_job`) and its first trial as
the TrainJob webhook would (the trials' :class:`~trainjob.cluster.executor.KubernetesExecutor`),
so a cluster without trainjob's webhooks refuses nothing silently. ``delete`` deletes the job and
then its trials itself (the garbage collector would take them by their owner reference; doing it
here also reaches a trial's outputs with ``purge``, and a cluster without a collector).
"""

from __future__ import annotations

import builtins
import contextlib
import time
from typing import TYPE_CHECKING, Any

from trainjob.api import constants as c
from trainjob.api.optimization import OptimizationJob, parse_optimization_job
from trainjob.cluster import state as cs
from trainjob.cluster.executor import KubernetesExecutor
from trainjob.errors import ConfigError, NotFoundError
from trainjob.executor import sweeps
from trainjob.executor.model import Event
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from trainjob.api.trainer import TrainJob
    from trainjob.workspace.pack import Snapshot

Obj = dict[str, Any]


class KubernetesSweepExecutor(sweeps.SweepExecutor):
    """OptimizationJobs of the cluster the trials' executor talks to."""

    backend = "kubernetes"
    poll_interval = 1.0

    def __init__(self, trials: KubernetesExecutor | None = None) -> None:
        self._trials = trials if trials is not None else KubernetesExecutor()
        self.kube = self._trials.kube

    @property
    def trials(self) -> KubernetesExecutor:
        return self._trials

    def create(
        self, job: OptimizationJob, *, cwd: str | None = None, workspace: Snapshot | None = None
    ) -> OptimizationJob:
        """Check ``job`` and its first trial, create the CR; the job as the apiserver stored it.
        ``workspace`` (``run --workdir``): stored once where every trial finds it, an ``s3://``
        object (:func:`_store_workspace`)."""
        from trainjob.api.optimization_validation import sample_values
        from trainjob.optimizer import template

        job = parse_optimization_job(job.to_dict())
        ns = job.metadata.namespace or self.default_namespace
        job.metadata.namespace = ns
        job.status = None
        first = template.render_trial(job, 0, sample_values(job.spec.parameters))
        self._trials.check(first)
        ref = first.spec.runtime_ref
        kind = ref.kind or c.CLUSTER_TRAINING_RUNTIME_KIND
        cluster = kind == c.CLUSTER_TRAINING_RUNTIME_KIND
        res = r.CLUSTER_TRAINING_RUNTIMES if cluster else r.TRAINING_RUNTIMES
        if self.kube.get_or_none(res, ref.name, None if cluster else ns) is None:
            raise NotFoundError(
                f'{kind}.{c.GROUP} "{ref.name}" not found: the trials\' runtime '
                f"(spec.trainJobTemplate.spec.runtimeRef) must be created before the "
                f"OptimizationJob"
            )
        body = job.to_dict()
        if workspace is not None:
            self._store_workspace(body, first, workspace)
        return _job(self.kube.create(r.OPTIMIZATION_JOBS, body, ns, field_manager=None))

    def _store_workspace(self, body: Obj, first: TrainJob, workspace: Snapshot) -> None:
        """The snapshot in S3: at the template's URI annotation, else under the trials'
        runtime's prefix (the annotation set to it). A TrainJob's ConfigMap is owned by that
        TrainJob, which the controller makes later, so a sweep's snapshot needs an S3 place;
        without one, ConfigError with the fix, before anything is created."""
        from trainjob.cluster import workspaces
        from trainjob.workspace import names, s3

        template = body["spec"]["trainJobTemplate"]
        notes = template.setdefault("metadata", {}).setdefault("annotations", {})
        if not notes.get(names.URI):
            prefix = workspaces.runtime_uri(self._trials._runtime(first, ()))
            if not prefix:
                raise ConfigError(
                    f"workspace {workspace.source}: an OptimizationJob's trials on a cluster find "
                    "their snapshot in S3 only (a ConfigMap is one TrainJob's): give it an "
                    "s3:// place (--workdir-uri s3://bucket/prefix, Workspace(storage_uri=...))"
                )
            notes[names.URI] = s3.object_uri(prefix, workspace.digest)
        workspaces.before_create(template, workspace)

    def get(self, name: str, namespace: str) -> OptimizationJob:
        return _job(self.kube.get(r.OPTIMIZATION_JOBS, name, namespace))

    def list(self, namespace: str | None = None) -> builtins.list[OptimizationJob]:
        items, _ = self.kube.list_all(r.OPTIMIZATION_JOBS, namespace)
        items.sort(
            key=lambda o: (
                str(cs.meta(o).get("creationTimestamp", "")),
                cs.meta(o).get("namespace", ""),
                cs.meta(o).get("name", ""),
            )
        )
        return [_job(o) for o in items]

    def delete(self, name: str, namespace: str, *, purge: bool = False) -> None:
        """Delete the job, then its trials (their PVCs too with ``purge``): the job first, so
        the controller makes no trial in place of one deleted; a trial a pass in flight made
        meanwhile is taken by a second look."""
        job = self.kube.get(r.OPTIMIZATION_JOBS, name, namespace)
        uid = str(cs.meta(job).get("uid") or "")
        self.kube.delete(r.OPTIMIZATION_JOBS, name, namespace)
        for look in range(2):
            if look:
                time.sleep(self.poll_interval)
            for trial in self._trial_names(name, namespace, uid):
                with contextlib.suppress(NotFoundError):
                    self._trials.delete(trial, namespace, purge=purge)

    def _trial_names(self, name: str, namespace: str, uid: str) -> builtins.list[str]:
        """The TrainJobs that are trials of the job ``name`` of ``uid``."""
        items, _ = self.kube.list_all(
            r.TRAINJOBS, namespace, label_selector=f"{c.LABEL_OPTIMIZATION_JOB}={name}"
        )
        return [
            str(cs.meta(tj).get("name", ""))
            for tj in items
            if not cs.meta(tj).get("ownerReferences")
            or any(o.get("uid") == uid for o in cs.meta(tj).get("ownerReferences") or ())
        ]

    def events(self, name: str, namespace: str) -> builtins.list[Event]:
        items, _ = self.kube.list_all(r.CORE_EVENTS, namespace)
        out = [
            cs.event(ev)
            for ev in items
            if (ev.get("involvedObject") or {}).get("kind") == c.OPTIMIZATION_JOB_KIND
            and (ev.get("involvedObject") or {}).get("name") == name
        ]
        out.sort(key=lambda e: e.timestamp)
        return out


def _job(obj: Obj) -> OptimizationJob:
    """The stored CR as the model (validated as created: the webhook took it)."""
    from trainjob.api.load import parse

    job = parse(obj)
    if not isinstance(job, OptimizationJob):  # pragma: no cover - the resource is the kind
        raise NotFoundError(f"not an OptimizationJob: {obj.get('kind')}")
    return job
