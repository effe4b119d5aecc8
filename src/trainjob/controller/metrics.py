"""Prometheus metrics of the controller, named as controller-runtime names its own.

* ``controller_runtime_reconcile_total{controller, result}`` - result ``success``, ``error`` (the
  key is retried with backoff) or ``requeue_after`` (a deadline check later);
* ``controller_runtime_reconcile_errors_total{controller}``;
* ``controller_runtime_reconcile_time_seconds{controller}`` - histogram of reconcile latency;
* ``workqueue_depth{name}``, ``workqueue_adds_total{name}``, ``controller_runtime_active_workers``;
* ``leader_election_master_status{name}`` - 1 while this replica leads;
* ``trainjob_trainjobs{state}`` - TrainJobs by state (Pending, Running, Suspended, Complete, Failed,
  RuntimeNotFound), counted from the informer cache at scrape time; TrainJobs ``spec.managedBy``
  another controller (MultiKueue) are not counted, and a standby replica counts none.

Each :class:`Metrics` has its own registry, so tests can run several controllers in one process.
Served by ``trainjob.kube.http``; updated by ``trainjob.controller.manager``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Gauge, Histogram, generate_latest
from prometheus_client import Counter as PCounter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

CONTROLLER = "trainjob"
STATES = ("Pending", "Running", "Suspended", "Complete", "Failed", "RuntimeNotFound")
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class _StateCollector(Collector):
    def __init__(self, states: Callable[[], list[str]]) -> None:
        self._states = states

    def collect(self) -> Iterator[GaugeMetricFamily]:
        counts = Counter(self._states())
        family = GaugeMetricFamily(
            "trainjob_trainjobs", "TrainJobs known to the controller, by state", labels=["state"]
        )
        for state in sorted(set(STATES) | set(counts)):
            family.add_metric([state], counts.get(state, 0))
        yield family


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.reconciles = PCounter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=self.registry,
        )
        self.errors = PCounter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ["controller"],
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "workqueue_depth", "Current depth of workqueue", ["name"], registry=self.registry
        )
        self.queue_adds = Gauge(
            "workqueue_adds_total",
            "Total number of adds handled by workqueue",
            ["name"],
            registry=self.registry,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
            "1 indicates master",
            ["name"],
            registry=self.registry,
        )

    def observe(self, result: str, seconds: float) -> None:
        self.reconciles.labels(CONTROLLER, result).inc()
        if result == "error":
            self.errors.labels(CONTROLLER).inc()
        self.latency.labels(CONTROLLER).observe(seconds)

    def track_states(self, states: Callable[[], list[str]]) -> None:
        self.registry.register(_StateCollector(states))

    def render(self) -> bytes:
        return generate_latest(self.registry)
