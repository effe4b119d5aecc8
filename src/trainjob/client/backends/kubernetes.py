"""The ``kubernetes`` backend: TrainerClient over a cluster's apiserver, with :mod:`trainjob.kube`.

Requests, all under the configured namespace:

    POST   /apis/trainer.kubeflow.org/v1alpha1/namespaces/NS/trainjobs          train
    GET    /apis/trainer.kubeflow.org/v1alpha1/namespaces/NS/trainjobs[/NAME]   list_jobs, get_job
    DELETE /apis/trainer.kubeflow.org/v1alpha1/namespaces/NS/trainjobs/NAME     delete_job
    GET    /apis/trainer.kubeflow.org/v1alpha1/[namespaces/NS/]trainingruntimes, clustertrainingruntimes
    GET    /api/v1/namespaces/NS/pods?labelSelector=...                         steps
    GET    /api/v1/namespaces/NS/pods/POD/log?container=C[&follow=true]         get_job_logs
    GET    /api/v1/namespaces/NS/events                                         get_job_events

No ``kubernetes`` package is needed. Errors are upstream's: ``TimeoutError`` when the apiserver
does not answer in time, ``RuntimeError`` (with the apiserver's message) for anything else.
"""

from __future__ import annotations

import copy
import http
import logging
import os
import re
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from trainjob.client import builder, runtimes, status, types
from trainjob.client import constants as c
from trainjob.client.backends.base import NODE_STEP, RuntimeBackend, print_packages
from trainjob.client.config import KubernetesBackendConfig, kubeconfig_paths
from trainjob.client.status import parse_time
from trainjob.core import jobset as js
from trainjob.errors import ConfigError
from trainjob.kube import Client
from trainjob.kube import config as kconfig
from trainjob.kube import errors as kerrors
from trainjob.kube import resources as r

logger = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")

_STEP_JOBS = (c.DATASET_INITIALIZER, c.MODEL_INITIALIZER, c.LAUNCHER, c.NODE)


class ApiError(RuntimeError):
    """The apiserver answered with an error status; ``code`` is the HTTP status."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def kube_config(cfg: KubernetesBackendConfig) -> kconfig.Config:
    """The connection a KubernetesBackendConfig describes (rules as upstream's SDK): its
    ``client_configuration``; else a kubeconfig (``config_file``, else ``$KUBECONFIG`` merged,
    else ``~/.kube/config``) unless this process runs in a pod; else the pod's service account."""
    if cfg.client_configuration is not None:
        config = kconfig.from_client_configuration(cfg.client_configuration)
    elif cfg.config_file or not os.environ.get("KUBERNETES_SERVICE_HOST"):
        paths = [Path(cfg.config_file).expanduser()] if cfg.config_file else kubeconfig_paths()
        if not any(p.is_file() for p in paths):
            raise ConfigError(
                "no kubeconfig found (looked at " + ", ".join(str(p) for p in paths) + "); "
                "set KUBECONFIG or use the local backend"
            )
        config = kconfig.from_files(paths, cfg.context)
    else:
        config = kconfig.in_cluster()
    if cfg.namespace:
        config.namespace = cfg.namespace
    return config


@contextmanager
def _errors(what: str) -> Iterator[None]:
    """Raise the SDK's errors for the apiserver's: TimeoutError, else RuntimeError (ApiError)."""
    try:
        yield
    except kerrors.Timeout as e:
        raise TimeoutError(f"Timeout to {what}") from e
    except kerrors.Unreachable as e:
        raise RuntimeError(f"Failed to {what}: {e.__cause__ or e}") from e
    except kerrors.ApiError as e:
        raise ApiError(f"Failed to {what}: {_message(e)}", e.status) from e


class KubernetesBackend(RuntimeBackend):
    """TrainJobs on a cluster. ``client`` replaces the connection (tests pass one whose
    transport is an ``httpx.MockTransport``)."""

    name = "kubernetes"

    def __init__(
        self,
        cfg: KubernetesBackendConfig | None = None,
        *,
        client: Client | None = None,
        poll_interval: float = 1.0,
    ) -> None:
        self.kube = client or Client(
            kube_config(cfg or KubernetesBackendConfig()),
            timeout=c.DEFAULT_TIMEOUT,
            user_agent="trainjob-sdk",
        )
        self.namespace = self.kube.namespace
        self.poll_interval = poll_interval

    def _call(self, what: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        with _errors(what):
            return fn(*args, **kwargs)

    # -- runtimes -----------------------------------------------------------------------------

    def list_runtimes(self) -> list[types.Runtime]:
        items: list[dict[str, Any]] = []
        try:
            found = self._call(
                "list TrainingRuntimes", self.kube.list, r.TRAINING_RUNTIMES, self.namespace
            )
            items += found.get("items") or []
        except ApiError as e:
            # as upstream: only a missing CRD is skipped; a 403 is an error, not a silent
            # fallback (the namespaced runtimes take precedence, so they must be readable)
            if e.code != 404:
                raise
            logger.debug("namespaced TrainingRuntimes not listed: %s", e)
        found = self._call(
            f"list {c.CLUSTER_TRAINING_RUNTIME_KIND}s", self.kube.list, r.CLUSTER_TRAINING_RUNTIMES
        )
        items += found.get("items") or []
        out = []
        for item in items:
            item.setdefault("kind", c.CLUSTER_TRAINING_RUNTIME_KIND)
            labels = (item.get("metadata") or {}).get("labels") or {}
            name = (item.get("metadata") or {}).get("name")
            if c.RUNTIME_FRAMEWORK_LABEL not in labels:
                logger.warning("Runtime %s must have %s label.", name, c.RUNTIME_FRAMEWORK_LABEL)
                continue
            try:
                out.append(runtimes.runtime_from_cr(item))
            except ValueError as e:
                logger.warning("skipping runtime %s: %s", name, e)
        return out

    def _runtime_cr(self, name: str, kind: str | None = None) -> dict[str, Any]:
        if kind in (None, c.TRAINING_RUNTIME_KIND):
            try:
                cr = self._call(
                    f"get {c.TRAINING_RUNTIME_PLURAL}: {self.namespace}/{name}",
                    self.kube.get,
                    r.TRAINING_RUNTIMES,
                    name,
                    self.namespace,
                )
                cr.setdefault("kind", c.TRAINING_RUNTIME_KIND)
                return dict(cr)
            except ApiError as e:
                # upstream's rule: fall back to the ClusterTrainingRuntime only when there is no
                # TrainingRuntime; a 403 is a RuntimeError (which runtime wins is unknown then)
                if e.code != 404 or kind == c.TRAINING_RUNTIME_KIND:
                    raise
        cr = self._call(
            f"get {c.CLUSTER_TRAINING_RUNTIME_PLURAL}: {name}",
            self.kube.get,
            r.CLUSTER_TRAINING_RUNTIMES,
            name,
        )
        cr.setdefault("kind", c.CLUSTER_TRAINING_RUNTIME_KIND)
        return dict(cr)

    def get_runtime(self, name: str) -> types.Runtime:
        cr = self._runtime_cr(name)
        try:
            return runtimes.runtime_from_cr(cr)
        except ValueError as e:
            raise RuntimeError(str(e)) from e

    def _packages_job(self, runtime: types.Runtime) -> tuple[types.Runtime, types.CustomTrainer]:
        """One node, one MPI process, one CPU unless the runtime has GPUs (as upstream)."""
        rt = copy.deepcopy(runtime)
        if rt.trainer.command and rt.trainer.command[0] == "mpirun":
            cmd = list(runtimes.MPI_COMMAND)
            cmd[1:3] = ["-np", "1"]
            rt.trainer.set_command(tuple(cmd))
        trainer = types.CustomTrainer(
            func=print_packages,
            num_nodes=1,
            resources_per_node={"cpu": 1} if rt.trainer.device != "gpu" else None,
        )
        return rt, trainer

    # -- jobs ---------------------------------------------------------------------------------

    def train(
        self,
        runtime: str | types.Runtime | None = None,
        initializer: types.Initializer | None = None,
        trainer: types.AnyTrainer | None = None,
        options: list[Any] | None = None,
    ) -> str:
        rt = self.resolve_runtime(runtime)
        job = builder.build(rt, initializer, trainer, options, backend=self)
        name = builder.job_name(job)
        self._call(
            f"create {c.TRAINJOB_KIND}: {self.namespace}/{name}",
            self.kube.create,
            r.TRAINJOBS,
            job,
            self.namespace,
            field_manager=None,
        )
        logger.debug("%s %s/%s has been created", c.TRAINJOB_KIND, self.namespace, name)
        return name

    def _pods(self, name: str | None = None) -> list[dict[str, Any]]:
        selector = (
            c.POD_LABEL_SELECTOR.format(trainjob_name=name)
            if name
            else f"{js.LABEL_JOBSET_NAME},{js.LABEL_REPLICATED_JOB_NAME} in ({', '.join(_STEP_JOBS)})"
        )
        resp = self._call(
            f"list {c.TRAINJOB_KIND}'s steps: {self.namespace}/{name or '*'}",
            self.kube.list,
            r.PODS,
            self.namespace,
            label_selector=selector,
        )
        return list(resp.get("items") or [])

    def _referenced_runtime(self, name: str, kind: str) -> dict[str, Any] | None:
        try:
            return self._runtime_cr(name, kind)
        except ApiError as e:
            if e.code != 404:
                raise
            return None

    def _to_sdk(
        self, cr: dict[str, Any], pods: list[dict[str, Any]], cache: dict[str, types.Runtime]
    ) -> types.TrainJob:
        meta = cr.get("metadata") or {}
        spec = cr.get("spec") or {}
        rt = self._runtime_of(spec.get("runtimeRef") or {}, cache)
        num_nodes = (spec.get("trainer") or {}).get("numNodes") or rt.trainer.num_nodes
        steps = [s for s in (_step(p, rt) for p in pods) if s is not None]
        steps.sort(key=_step_order)
        conditions = list((cr.get("status") or {}).get("conditions") or [])
        if spec.get("suspend"):
            conditions.append({"type": "Suspended", "status": "True"})
        return types.TrainJob(
            name=str(meta.get("name")),
            runtime=rt,
            steps=steps,
            num_nodes=int(num_nodes),
            creation_timestamp=parse_time(meta.get("creationTimestamp")),
            status=status.job_status(conditions, steps, int(num_nodes)),
        )

    def get_job(self, name: str) -> types.TrainJob:
        cr = self._call(
            f"get {c.TRAINJOB_KIND}: {self.namespace}/{name}",
            self.kube.get,
            r.TRAINJOBS,
            name,
            self.namespace,
        )
        return self._to_sdk(cr, self._pods(name), {})

    def list_jobs(self, runtime: types.Runtime | None = None) -> list[types.TrainJob]:
        found = self._call(
            f"list {c.TRAINJOB_KIND}s in namespace: {self.namespace}",
            self.kube.list,
            r.TRAINJOBS,
            self.namespace,
        )
        items = found.get("items") or []
        if runtime is not None:
            items = [
                i
                for i in items
                if ((i.get("spec") or {}).get("runtimeRef") or {}).get("name") == runtime.name
            ]
        if not items:
            return []
        by_job: dict[str, list[dict[str, Any]]] = {}
        for pod in self._pods():
            labels = (pod.get("metadata") or {}).get("labels") or {}
            by_job.setdefault(labels.get(js.LABEL_JOBSET_NAME, ""), []).append(pod)
        cache: dict[str, types.Runtime] = {}
        return [
            self._to_sdk(i, by_job.get((i.get("metadata") or {}).get("name", ""), []), cache)
            for i in items
        ]

    def get_job_logs(
        self, name: str, follow: bool | None = False, step: str = c.NODE + "-0"
    ) -> Iterator[str]:
        index = self._check_step(step)
        pod_name = self._wait_for_step(name, step, index, bool(follow))
        if pod_name is None:
            return
        container = re.sub(r"-\d+$", "", step)
        with _errors(f"read logs for the pod {self.namespace}/{pod_name}"):
            yield from self.kube.logs(
                pod_name, self.namespace, container=container, follow=bool(follow)
            )

    def _wait_for_step(self, name: str, step: str, index: int | None, follow: bool) -> str | None:
        """The pod of ``step`` once it left Pending; with ``follow``, wait for that. A ``node-N``
        beyond the job's nodes is a ValueError rather than a wait until the job ends."""
        while True:
            job = self.get_job(name)
            command = job.runtime.trainer.command
            # MPI: the launcher is node-0 and the workers node-1..; unknown runtime: allow both
            steps = job.num_nodes + (0 if command and command[0] != "mpirun" else 1)
            if index is not None and index >= steps:
                raise ValueError(
                    f"TrainJob {self.namespace}/{name} has no step {step}: it has "
                    f"{job.num_nodes} nodes (node-0..node-{steps - 1})"
                )
            for s in job.steps:
                if s.name == step and s.status != c.POD_PENDING:
                    return s.pod_name
            if not follow or job.status in (c.TRAINJOB_COMPLETE, c.TRAINJOB_FAILED):
                return None
            time.sleep(self.poll_interval)

    def get_job_events(self, name: str) -> list[types.Event]:
        pods = {(p.get("metadata") or {}).get("name") for p in self._pods(name)}
        found = self._call(
            f"get {c.TRAINJOB_KIND} events: {self.namespace}/{name}",
            self.kube.list,
            r.CORE_EVENTS,
            self.namespace,
        )
        items = found.get("items") or []
        out = []
        for ev in items:
            if not about_trainjob(ev, name, pods):
                continue
            obj = ev.get("involvedObject") or {}
            kind, obj_name = obj.get("kind", ""), obj.get("name", "")
            when = (
                ev.get("eventTime")
                or ev.get("firstTimestamp")
                or ev.get("lastTimestamp")
                or (ev.get("metadata") or {}).get("creationTimestamp")
            )
            out.append(
                types.Event(
                    involved_object_kind=kind,
                    involved_object_name=obj_name,
                    message=ev.get("message") or "",
                    reason=ev.get("reason") or "",
                    event_time=parse_time(when),
                )
            )
        out.sort(key=lambda e: e.event_time)
        return out

    def failure_reason(self, name: str) -> str:
        """The TrainJob's Failed condition (upstream's controller records no event for it), then
        what the events add (the first pod that failed)."""
        cr = self._call(
            f"get {c.TRAINJOB_KIND}: {self.namespace}/{name}",
            self.kube.get,
            r.TRAINJOBS,
            name,
            self.namespace,
        )
        failed = [
            cond
            for cond in (cr.get("status") or {}).get("conditions") or ()
            if cond.get("type") == c.TRAINJOB_FAILED and cond.get("status") == "True"
        ]
        verdict = str(failed[0].get("message") or failed[0].get("reason") or "") if failed else ""
        events = status.failure_from_events(self.get_job_events(name))
        if verdict and verdict not in events:
            return f"{verdict}; {events}" if events else verdict
        return events

    def delete_job(self, name: str) -> None:
        self._call(
            f"delete {c.TRAINJOB_KIND}: {self.namespace}/{name}",
            self.kube.delete,
            r.TRAINJOBS,
            name,
            self.namespace,
        )
        logger.debug("%s %s/%s has been deleted", c.TRAINJOB_KIND, self.namespace, name)

    def close(self) -> None:
        self.kube.close()


def about_trainjob(event: Mapping[str, Any], name: str, pods: Collection[str | None]) -> bool:
    """Whether a core Event is about TrainJob ``name``: the TrainJob, its JobSet and PodGroup, its
    Jobs and PodGroups (``name-...``) or one of its ``pods``. Shared with the CLI."""
    obj = event.get("involvedObject") or {}
    kind, obj_name = obj.get("kind", ""), str(obj.get("name", ""))
    return (
        (kind in (c.TRAINJOB_KIND, "JobSet", "PodGroup") and obj_name == name)
        or (kind == "Pod" and obj_name in pods)
        or (kind in ("Job", "PodGroup") and obj_name.startswith(f"{name}-"))
    )


def _message(e: kerrors.ApiError) -> str:
    """``404 NotFound: trainjobs... not found`` from the apiserver's Status (or its text)."""
    body = e.body
    if isinstance(body, str):
        return f"{e.status} {body.strip()[:200]}"
    if isinstance(body, dict) and body.get("message"):
        return f"{e.status} {body.get('reason') or ''}: {body['message']}".replace(" : ", ": ")
    try:
        return f"{e.status} {http.HTTPStatus(e.status).phrase}"
    except ValueError:
        return str(e.status)


def _step(pod: dict[str, Any], rt: types.Runtime) -> types.Step | None:
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    rjob = labels.get(js.LABEL_REPLICATED_JOB_NAME)
    containers = (pod.get("spec") or {}).get("containers") or []
    phase = (pod.get("status") or {}).get("phase")
    pod_name = str(meta.get("name") or "")
    if rjob in (c.DATASET_INITIALIZER, c.MODEL_INITIALIZER):
        ctr = next((x for x in containers if x.get("name") == rjob), None)
        step = types.Step(name=str(rjob), status=phase, pod_name=pod_name)
    elif rjob in (c.LAUNCHER, c.NODE):
        ctr = next((x for x in containers if x.get("name") == c.NODE), None)
        index = int(
            labels.get(js.LABEL_COMPLETION_INDEX)
            or (meta.get("annotations") or {}).get(js.LABEL_COMPLETION_INDEX)
            or 0
        )
        if rt.trainer.command and rt.trainer.command[0] == "mpirun" and rjob != c.LAUNCHER:
            index += 1
        step = types.Step(name=f"{c.NODE}-{index}", status=phase, pod_name=pod_name)
    else:
        return None
    devices = runtimes.container_devices((ctr or {}).get("resources"))
    if devices:
        step.device, step.device_count = devices
    for env in (ctr or {}).get("env") or ():
        value = str(env.get("value") or "")
        if env.get("name") == c.TORCH_ENV_NUM_PROC_PER_NODE and value.isdigit():
            step.device_count = value
    return step


def _step_order(step: types.Step) -> tuple[int, int]:
    order = {c.DATASET_INITIALIZER: 0, c.MODEL_INITIALIZER: 1}
    m = NODE_STEP.match(step.name)
    return order.get(step.name, 2), int(m.group(1)) if m else -1
