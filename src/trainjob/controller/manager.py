"""The controller process: informers, work queue, workers, leader election, probes, metrics, webhooks.

:class:`Manager` wires the pieces the way controller-runtime's manager does:

* always: ``/healthz`` and ``/readyz`` (health port), ``/metrics`` (metrics port), the admission
  webhooks (when configured), so a standby replica still answers admission requests, the TrainJob
  status endpoint (:mod:`trainjob.controller.statusserver`, unless turned off), and the
  informers of TrainingRuntimes and ClusterTrainingRuntimes (whole objects: few and small), which
  reconciles and webhooks read before asking the apiserver;
* once leading (or at once with ``leader_elect=False``): informers for TrainJobs, OptimizationJobs
  (reconciled by :mod:`trainjob.controller.optimizationjob` on a queue of their own) and for each kind
  a Plan can hold, whole or metadata only as its plugin declares (:mod:`trainjob.runtime.kinds`:
  JobSets whole; ConfigMaps, Secrets and PodGroups metadata only); then
  ``workers`` threads that take keys from the queue and reconcile them (one at a time while the
  webhooks are answering reviews: :mod:`trainjob.controller.priority`). Secrets are listed and
  watched as ``PartialObjectMetadata`` only: the controller never receives a Secret's data, and a
  deleted MPI Secret brings its TrainJob back to the queue, which creates it again.

Events map to keys: a TrainJob to itself; an owned object to the TrainJob of its controller
ownerReference; a runtime that appears to the TrainJobs still waiting for it (``RuntimeNotFound``).
Losing the lease stops the process with exit code 1, as client-go does, so a fresh replica starts
clean. Started by ``trainjob controller`` (``trainjob.cli.controller``).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from trainjob.api import conditions as tc
from trainjob.api import constants as c
from trainjob.controller import cache, priority, statusserver
from trainjob.controller import optimizationjob as sweeps
from trainjob.controller import status as st
from trainjob.controller.metrics import CONTROLLER, Metrics
from trainjob.controller.reconcile import Caches, Reconciler
from trainjob.controller.webhooks import serving
from trainjob.core import conditions as cond
from trainjob.kube import http
from trainjob.kube import resources as r
from trainjob.kube.client import Client
from trainjob.kube.errors import ApiError
from trainjob.kube.events import EventRecorder
from trainjob.kube.informer import Informer
from trainjob.kube.leader import LeaderElector
from trainjob.kube.queue import RateLimiter, WorkQueue
from trainjob.runtime import kinds, registry
from trainjob.runtime.plugins import trainjobstatus

log = logging.getLogger(__name__)

Obj = dict[str, Any]
SYNC_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class Options:
    """Settings of one controller process (the ``trainjob controller`` flags)."""

    namespace: str | None = None
    workers: int = 5
    sweep_workers: int = 2
    """Threads reconciling OptimizationJobs (a queue of their own)."""
    bind_host: str = "0.0.0.0"
    metrics_port: int | None = 8080
    health_port: int | None = 8081
    leader_elect: bool = True
    leader_election_namespace: str = "default"
    leader_election_id: str = "trainjob-controller.trainer.kubeflow.org"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    webhooks: serving.Options | None = None
    status_server: statusserver.Options | None = field(default_factory=statusserver.Options)
    """The TrainJob status endpoint (KEP-2779); None: off (``--no-status-server``)."""
    backoff_base: float = 0.05
    backoff_cap: float = 300.0
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}")


class Manager:
    def __init__(self, client: Client, options: Options) -> None:
        self.client = client
        self.options = options
        self.metrics = Metrics()
        self.queue = WorkQueue(RateLimiter(options.backoff_base, options.backoff_cap))
        ns = options.namespace
        # What each cache keeps: trainjob.controller.cache (no managedFields; of a JobSet only
        # what reconcile reads, and nothing of JobSets no TrainJob controls).
        slim = cache.without_managed_fields
        self.trainjobs = Informer(client, r.TRAINJOBS, namespace=ns, transform=slim)
        # One informer per kind a Plan can hold, as its plugin declares it (runtime/kinds.py).
        owned = {
            key: Informer(
                client,
                kind.resource,
                namespace=ns,
                metadata_only=kind.watch is kinds.Watch.METADATA,
                transform=cache.jobset_view if kind is kinds.JOBSET else slim,
            )
            for key, kind in registry.kinds().items()
        }
        # Runtimes are few and small: cached whole, so a first build needs no GET.
        self.runtime_informers = [
            Informer(client, r.TRAINING_RUNTIMES, namespace=ns, transform=slim),
            Informer(client, r.CLUSTER_TRAINING_RUNTIMES, transform=slim),
        ]
        self.optimizationjobs = Informer(client, r.OPTIMIZATION_JOBS, namespace=ns, transform=slim)
        self.informers = [self.trainjobs, self.optimizationjobs, *owned.values()]
        self.caches = Caches(
            trainjobs=self.trainjobs,
            owned=owned,
            runtimes={i.resource.plural: i for i in self.runtime_informers},
        )
        self.jobsets = self.caches.jobsets
        self.configmaps = self.caches.configmaps
        self.secrets = self.caches.secrets
        self.recorder = EventRecorder(client, c.CONTROLLER_NAME, options.identity)
        self.reconciler = Reconciler(client, self.caches, self.recorder)
        # OptimizationJobs: a queue and workers of their own, over the same caches.
        self.sweep_queue = WorkQueue(RateLimiter(options.backoff_base, options.backoff_cap))
        self.sweep_history = sweeps.ReportHistory()
        self.sweeps = sweeps.OptimizationJobReconciler(
            client,
            self.optimizationjobs,
            sweeps.CachedTrials(
                client,
                self.trainjobs,
                self.jobsets,
                self.sweep_history,
                written=lambda obj: self.queue.add(r.TRAINJOBS.key(obj)),
            ),
            self.recorder,
        )
        self.admission_first = priority.AdmissionFirst()
        self.webhooks = (
            serving.WebhookServer(
                client, options.webhooks, self.cached_runtime, self.admission_first.served
            )
            if options.webhooks
            else None
        )
        self.status_server = (
            statusserver.StatusServer(client, options.status_server, self._webhook_tls)
            if options.status_server is not None
            else None
        )
        self.reconciler.status_server = self._status_server_for_plans
        self.elector = (
            LeaderElector(
                client,
                options.leader_election_namespace,
                options.leader_election_id,
                options.identity,
                lease_duration=options.lease_duration,
                renew_deadline=options.renew_deadline,
                retry_period=options.retry_period,
            )
            if options.leader_elect
            else None
        )
        self.stop_event = threading.Event()
        self.exit_code = 0
        self.controllers_started = threading.Event()
        self._workers: list[threading.Thread] = []
        self._servers: list[http.Server] = []
        self._elector_thread: threading.Thread | None = None
        self._wire()

    # -- event handlers ----------------------------------------------------------------------------
    def _wire(self) -> None:
        self.trainjobs.add_handler(lambda _t, obj, _old: self.queue.add(r.TRAINJOBS.key(obj)))
        self.trainjobs.add_handler(self._enqueue_sweep)
        self.optimizationjobs.add_handler(
            lambda _t, obj, _old: self.sweep_queue.add(r.OPTIMIZATION_JOBS.key(obj))
        )
        for informer in self.caches.owned.values():
            informer.add_handler(self._enqueue_owner)
        for informer in self.runtime_informers:
            informer.add_handler(self._enqueue_waiting)
        self.metrics.queue_depth.labels(CONTROLLER).set_function(lambda: len(self.queue))
        self.metrics.queue_adds.labels(CONTROLLER).set_function(lambda: self.queue.adds)
        self.metrics.track_states(self._states)

    def _enqueue_owner(self, _etype: str, obj: Obj, _old: Obj | None) -> None:
        meta = obj.get("metadata") or {}
        for ref in meta.get("ownerReferences") or ():
            if (
                ref.get("controller")
                and ref.get("kind") == c.TRAINJOB_KIND
                and str(ref.get("apiVersion", "")).startswith(c.GROUP + "/")
            ):
                self.queue.add(f"{meta.get('namespace', '')}/{ref.get('name', '')}")

    def _enqueue_sweep(self, etype: str, obj: Obj, _old: Obj | None) -> None:
        """A trial's change: keep its report (early stopping), look at its OptimizationJob."""
        key = sweeps.sweep_of(obj)
        if key is not None:
            self.sweep_history.observe(etype, obj)
            self.sweep_queue.add(key)

    def _enqueue_waiting(self, etype: str, obj: Obj, _old: Obj | None) -> None:
        if etype == "DELETED":
            return
        meta = obj.get("metadata") or {}
        kind = c.TRAINING_RUNTIME_KIND if meta.get("namespace") else c.CLUSTER_TRAINING_RUNTIME_KIND
        for tj in self.trainjobs.list():
            conditions = (tj.get("status") or {}).get("conditions") or []
            if not cond.is_true(conditions, tc.CONDITION_RUNTIME_NOT_FOUND):
                continue
            ref = (tj.get("spec") or {}).get("runtimeRef") or {}
            tj_meta = tj.get("metadata") or {}
            if (
                ref.get("name") != meta.get("name")
                or (ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME_KIND) != kind
            ):
                continue
            if kind == c.TRAINING_RUNTIME_KIND and tj_meta.get("namespace") != meta.get(
                "namespace"
            ):
                continue
            self.queue.add(r.TRAINJOBS.key(tj))

    def _webhook_tls(self) -> tuple[Any, bytes] | None:
        """The webhook server's TLS context and CA, which the status server shares (upstream's
        one certificate for the controller's Service)."""
        hooks = self.webhooks
        if hooks is None or hooks.server is None or not hooks.ca_bundle:
            return None
        return hooks.server.ssl_context, hooks.ca_bundle

    def _status_server_for_plans(self) -> trainjobstatus.StatusServer | None:
        """Where the status endpoint is, for the TrainJobStatus plugin (None: off, or not
        serving yet)."""
        server = self.status_server
        if server is None or server.server is None:
            return None
        server.refresh_tls()
        return trainjobstatus.StatusServer(server.base_url, server.ca_bundle.decode())

    def cached_runtime(self, resource: r.Resource, namespace: str, name: str) -> Obj | None:
        for informer in self.runtime_informers:
            if informer.resource is resource:
                return informer.get(f"{namespace}/{name}" if resource.namespaced else name)
        return None

    def _states(self) -> list[str]:
        """States of the TrainJobs this controller manages (not those ``spec.managedBy`` others)."""
        return [
            st.state(tj, self.jobsets.get(r.TRAINJOBS.key(tj)) is not None)
            for tj in self.trainjobs.list()
            if (tj.get("spec") or {}).get("managedBy") in (None, "", c.MANAGED_BY_TRAINER)
        ]

    # -- probes ------------------------------------------------------------------------------------
    def healthy(self) -> bool:
        return not self.stop_event.is_set()

    def ready(self) -> bool:
        if self.stop_event.is_set():
            return False
        if self.webhooks is not None and self.webhooks.server is None:
            return False
        if self.elector is not None and not self.elector.leading.is_set():
            return True  # a standby replica is ready: it serves webhooks
        return self.controllers_started.is_set()

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Start servers and (through leader election) the controllers; returns at once."""
        o = self.options
        if o.health_port is not None:
            self._servers.append(
                http.serve(
                    o.bind_host,
                    o.health_port,
                    {
                        ("GET", "/healthz"): _probe(self.healthy),
                        ("GET", "/readyz"): _probe(self.ready),
                    },
                    "health",
                )
            )
        if o.metrics_port is not None:
            self._servers.append(
                http.serve(
                    o.bind_host,
                    o.metrics_port,
                    {
                        ("GET", "/metrics"): lambda _b: (
                            200,
                            "text/plain; version=0.0.4",
                            self.metrics.render(),
                        )
                    },
                    "metrics",
                )
            )
        for informer in self.runtime_informers:
            informer.start()
        if self.webhooks is not None:
            self.webhooks.start()
        if self.status_server is not None:
            self.status_server.start()  # on every replica (upstream: no leader election)
        if self.elector is None:
            self._start_controllers()
        else:
            self._elector_thread = threading.Thread(
                target=self._lead, name="leader-election", daemon=True
            )
            self._elector_thread.start()

    def _lead(self) -> None:
        assert self.elector is not None
        leader_gauge = self.metrics.leader.labels(self.options.leader_election_id)

        def started() -> None:
            leader_gauge.set(1)
            self._start_controllers()

        def stopped() -> None:
            leader_gauge.set(0)
            if not self.stop_event.is_set():
                log.error("leader election lost; exiting")
                self.exit_code = 1
                self.stop_event.set()

        try:
            self.elector.run(self.stop_event, started, stopped)
        except Exception:
            # Never a replica that silently stopped competing: exit, and be started afresh.
            log.exception("leader election failed; exiting")
            leader_gauge.set(0)
            self.exit_code = 1
            self.stop_event.set()

    def _start_controllers(self) -> None:
        for informer in self.informers:
            informer.start()
        deadline = time.monotonic() + SYNC_TIMEOUT_SECONDS
        for informer in [*self.informers, *self.runtime_informers]:
            if not informer.synced.wait(max(0.0, deadline - time.monotonic())):
                log.warning(
                    "cache of %s not synced after %.0fs", informer.name, SYNC_TIMEOUT_SECONDS
                )
        if self.stop_event.is_set():
            return
        if self.jobsets.missing:
            log.error("JobSet CRDs must be installed in advance")
        for i in range(max(1, self.options.workers)):
            t = threading.Thread(target=self._worker, name=f"worker-{i}", daemon=True)
            t.start()
            self._workers.append(t)
        if self.optimizationjobs.missing:
            log.warning("the OptimizationJob CRD is not installed: sweeps are off")
        for i in range(max(1, self.options.sweep_workers)):
            t = threading.Thread(target=self._sweep_worker, name=f"sweep-worker-{i}", daemon=True)
            t.start()
            self._workers.append(t)
        self.controllers_started.set()
        log.info(
            "controller started: %d workers, %d TrainJobs cached",
            len(self._workers),
            len(self.trainjobs),
        )

    def _worker(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            with self.admission_first.turn():  # while webhooks serve, reconciles take turns
                self._process(key)

    def _sweep_worker(self) -> None:
        while True:
            key = self.sweep_queue.get()
            if key is None:
                return
            with self.admission_first.turn():
                self._process_sweep(key)

    def _process_sweep(self, key: str) -> None:
        try:
            retry = self.sweeps.reconcile(key)
        except ApiError as e:
            log.warning("reconciling OptimizationJob %s: %s", key, e)
            retry = True
        except Exception:
            log.exception("reconciling OptimizationJob %s", key)
            retry = True
        try:
            if retry:
                self.sweep_queue.add_rate_limited(key)
            else:
                self.sweep_queue.forget(key)
        finally:
            self.sweep_queue.done(key)

    def _process(self, key: str) -> None:
        active = self.metrics.active_workers.labels(CONTROLLER)
        started = time.perf_counter()
        active.inc()
        outcome = "success"
        try:
            result = self.reconciler.reconcile(key)
        except ApiError as e:
            outcome = "error"
            log.warning("reconciling TrainJob %s: %s", key, e)
            self.queue.add_rate_limited(key)
        except Exception:
            outcome = "error"
            log.exception("reconciling TrainJob %s", key)
            self.queue.add_rate_limited(key)
        else:
            if result.retry:
                outcome = "error"
                self.queue.add_rate_limited(key)
            elif result.requeue_after is not None:
                outcome = "requeue_after"
                self.queue.forget(key)
                self.queue.add_after(key, result.requeue_after)
            else:
                self.queue.forget(key)
        finally:
            active.dec()
            self.queue.done(key)
            self.metrics.observe(outcome, time.perf_counter() - started)
            # The reconcile's own status write (Complete, Failed) reaches no handler (the cache
            # has it already): a trial's sweep looks again after each reconcile of the trial.
            tj = self.trainjobs.get(key)
            if tj is not None:
                self._enqueue_sweep("MODIFIED", tj, None)

    def stop(self) -> None:
        self.stop_event.set()
        for informer in [*self.informers, *self.runtime_informers]:
            informer.stop()
        self.queue.shut_down()
        self.sweep_queue.shut_down()
        for t in self._workers:
            t.join(timeout=10)
        if self._elector_thread is not None:
            self._elector_thread.join(timeout=5)  # releases the lease
        if self.webhooks is not None:
            self.webhooks.stop()
        if self.status_server is not None:
            self.status_server.stop()
        for server in self._servers:
            server.stop()

    def run(self) -> int:
        """Start, block until :attr:`stop_event` is set (a signal, a lost lease), stop; exit code.

        What started is stopped also when starting fails (a port in use, no certificate)."""
        try:
            self.start()
            while not self.stop_event.wait(1.0):
                pass
        finally:
            self.stop()
        return self.exit_code

    @property
    def ports(self) -> dict[str, int]:
        """Bound ports by server name (useful with port 0)."""
        out = {s.name: s.port for s in self._servers}
        if self.webhooks is not None and self.webhooks.server is not None:
            out["webhooks"] = self.webhooks.port
        if self.status_server is not None and self.status_server.server is not None:
            out["status"] = self.status_server.port
        return out


def _probe(check: Any) -> http.Route:
    def route(_body: bytes) -> http.Response:
        if check():
            return 200, "text/plain", b"ok\n"
        return 503, "text/plain", b"not ready\n"

    return route


def default_leader_election_namespace(client: Client) -> str:
    """The controller's own namespace in a cluster (POD_NAMESPACE or the service account's)."""
    return os.environ.get("POD_NAMESPACE") or client.namespace or "default"
