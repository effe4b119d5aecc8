"""``/metrics`` counts what is on the apiserver: a controller watching one namespace holds one
TrainJob in each state, and ``trainjob_trainjobs{state}`` says exactly that (a MultiKueue-managed
TrainJob is not ours and is not counted); the reconcile counters, error counter and latency
histogram agree with each other. ``/healthz`` and ``/readyz`` answer ``ok``."""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.integration.controller_harness import conditions, start_controller, trainjob, wait_for

from trainjob.controller.webhooks.serving import DEV_NAMESPACE_OPT_OUT
from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration
Obj = dict[str, Any]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def states(text: str) -> dict[str, float]:
    return {
        dict(labels)["state"]: v
        for (name, labels), v in samples(text).items()
        if name == "trainjob_trainjobs"
    }


def finish_jobset(kube: Client, name: str, ns: str, js_type: str, reason: str) -> None:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    cond = {"type": js_type, "status": "True", "reason": reason, "message": reason}
    kube.patch_status(r.JOBSETS, name, ns, {"conditions": [{**cond, "lastTransitionTime": now}]})


def test_jobs_by_state_and_reconcile_metrics_tell_what_is_on_the_apiserver(
    control_plane: ControlPlane, kube: Client, torch_runtime: str, namespace: str
) -> None:
    # Without webhooks here, TrainJobs may name a missing runtime or an unknown kind.
    kube.patch(
        r.NAMESPACES, namespace, {"metadata": {"labels": {DEV_NAMESPACE_OPT_OUT: "disabled"}}}
    )
    ctl = start_controller(control_plane, "--namespace", namespace, webhooks=False)
    try:
        assert ctl.get(ctl.health_port, "/healthz") == (200, "ok\n")
        assert ctl.get(ctl.health_port, "/readyz") == (200, "ok\n")
        specs: dict[str, dict[str, Any]] = {
            "running": {},
            "held": {"suspend": True},
            "done": {},
            "broken": {},
            "orphan": {"runtimeRef": {"name": "nope", "kind": "TrainingRuntime"}},
            "odd": {"runtimeRef": {"name": "x", "apiGroup": "example.com", "kind": "Other"}},
            "elsewhere": {"managedBy": "kueue.x-k8s.io/multikueue"},
        }
        for name, spec in specs.items():
            kube.create(r.TRAINJOBS, trainjob(name, namespace, **spec))
        for name in ("running", "held", "done", "broken"):
            wait_for(functools.partial(kube.get_or_none, r.JOBSETS, name, namespace), what=name)
        finish_jobset(kube, "done", namespace, "Completed", "AllJobsCompleted")
        finish_jobset(kube, "broken", namespace, "Failed", "FailedJobs")

        def condition(name: str, cond: str) -> Any:
            return conditions(kube, name, namespace).get(cond)

        for name, cond in (("done", "Complete"), ("broken", "Failed"), ("odd", "Failed")):
            wait_for(functools.partial(condition, name, cond), what=cond)
        wait_for(lambda: conditions(kube, "orphan", namespace).get("RuntimeNotFound"), what="RNF")

        want = {
            "Pending": 0.0,
            "Running": 1.0,
            "Suspended": 1.0,
            "Complete": 1.0,
            "Failed": 2.0,
            "RuntimeNotFound": 1.0,
        }
        wait_for(lambda: states(ctl.metrics()) == want, what=f"trainjob_trainjobs == {want}")

        ctl_label = (("controller", "trainjob"),)

        def reconcile_counts() -> tuple[dict[str, float], float, float, Any]:
            m = samples(ctl.metrics())
            total = {
                result: m.get(
                    ("controller_runtime_reconcile_total", (*ctl_label, ("result", result))), 0.0
                )
                for result in ("success", "error", "requeue_after")
            }
            errors = m[("controller_runtime_reconcile_errors_total", ctl_label)]
            count = m[("controller_runtime_reconcile_time_seconds_count", ctl_label)]
            return total, errors, count, m

        # One scrape may fall between a reconcile's counter and its histogram: take a quiet one.
        def consistent() -> tuple[dict[str, float], float, float, Any] | None:
            got = reconcile_counts()
            return got if got[1] == got[0]["error"] and got[2] == sum(got[0].values()) else None

        total, _, _, m = wait_for(consistent, what="consistent reconcile counters")
        assert total["success"] >= 6
        assert total["error"] >= 1, "the missing runtime is an error, retried"
        assert ("workqueue_depth", (("name", "trainjob"),)) in m
        assert not any(name == "leader_election_master_status" for name, _ in m), "no election"
    finally:
        ctl.stop()
