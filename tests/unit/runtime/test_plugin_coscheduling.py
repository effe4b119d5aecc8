"""The CoScheduling plugin through the compiler: the pod-group label and the PodGroup it plans.

Cases follow upstream ``plugins/coscheduling/coscheduling_test.go``: ``minMember`` counts the pods
of every job (initializers too), ``minResources`` sums count x one pod's requests.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.helpers import builtin, container, node_job, replicated_job, runtime, trainjob
from trainjob.api import constants as c
from trainjob.api.load import parse
from trainjob.runtime import CompileOptions, compile
from trainjob.runtime.plan import Plan

KEYS = CompileOptions(ssh_private_key="private\n", ssh_public_key="public\n")


def gang_runtime(timeout: int | None = None, *, trainer_resources: Any = None) -> Any:
    """dataset-initializer (1 pod, 1 cpu) -> node (numNodes pods) with coscheduling."""
    policy: dict[str, Any] = {} if timeout is None else {"scheduleTimeoutSeconds": timeout}
    init = node_job(
        container(
            "dataset-initializer",
            resources={"requests": {"cpu": "1", "memory": "2Gi"}},
            volumeMounts=[{"name": "initializer", "mountPath": "/workspace"}],
        ),
        name="dataset-initializer",
        ancestor="dataset-initializer",
    )
    node = node_job(container(resources=trainer_resources) if trainer_resources else container())
    return runtime(
        ml_policy={"numNodes": 2, "torch": {}},
        replicated_jobs=[init, node],
        pod_group_policy={"coscheduling": policy},
    )


def pod_labels(plan: Plan, job: str) -> dict[str, str]:
    return replicated_job(plan, job)["template"]["spec"]["template"]["metadata"]["labels"]  # type: ignore[no-any-return]


def test_every_pod_gets_the_pod_group_label() -> None:
    plan = compile(trainjob(name="gang"), gang_runtime())
    for job in ("dataset-initializer", "node"):
        assert pod_labels(plan, job) == {c.COSCHEDULING_POD_GROUP_LABEL: "gang"}


PODGROUP_CASES = [
    pytest.param(
        None,
        None,
        None,
        {
            "minMember": 3,
            "minResources": {"cpu": "1", "memory": "2Gi"},
            "scheduleTimeoutSeconds": 60,
        },
        id="runtime defaults: initializer counted, default 60s timeout",
    ),
    pytest.param(
        {
            "numNodes": 4,
            "resourcesPerNode": {"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}},
        },
        None,
        120,
        {
            "minMember": 5,
            "minResources": {"cpu": "3", "memory": "6Gi"},
            "scheduleTimeoutSeconds": 120,
        },
        id="numNodes and resourcesPerNode of the TrainJob are summed",
    ),
    pytest.param(
        None,
        {"limits": {"nvidia.com/gpu": "2"}},
        30,
        {
            "minMember": 3,
            "minResources": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "4"},
            "scheduleTimeoutSeconds": 30,
        },
        id="runtime limits count as requests",
    ),
]


@pytest.mark.parametrize(("trainer", "node_resources", "timeout", "want"), PODGROUP_CASES)
def test_pod_group(
    trainer: dict[str, Any] | None, node_resources: Any, timeout: int | None, want: dict[str, Any]
) -> None:
    tj = trainjob(name="gang", namespace="team", trainer=trainer)
    plan = compile(tj, gang_runtime(timeout, trainer_resources=node_resources))
    pg = plan.podgroup
    assert pg is not None
    assert pg["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert pg["kind"] == "PodGroup"
    assert (pg["metadata"]["name"], pg["metadata"]["namespace"]) == ("gang", "team")
    assert pg["metadata"]["ownerReferences"][0]["name"] == "gang"
    assert pg["spec"] == want


def test_pod_group_comes_first_in_the_plan() -> None:
    doc = builtin("deepspeed-distributed").to_dict()
    doc["spec"]["podGroupPolicy"] = {"coscheduling": {}}
    plan = compile(trainjob("deepspeed-distributed", name="ds"), parse(doc), KEYS)  # type: ignore[arg-type]
    assert [o["kind"] for o in plan] == ["PodGroup", "Secret", "ConfigMap", "JobSet"]


def test_no_policy_no_pod_group_and_no_label() -> None:
    plan = compile(trainjob(name="solo"), runtime())
    assert plan.podgroup is None
    pod_meta = replicated_job(plan, "node")["template"]["spec"]["template"].get("metadata") or {}
    assert c.COSCHEDULING_POD_GROUP_LABEL not in (pod_meta.get("labels") or {})


def test_golden_plan(golden: Any) -> None:
    doc = builtin("deepspeed-distributed").to_dict()
    doc["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 120}}
    tj = trainjob(
        "deepspeed-distributed",
        name="ds",
        trainer={"numNodes": 3, "resourcesPerNode": {"limits": {"cpu": "4", "memory": "8Gi"}}},
    )
    plan = compile(tj, parse(doc), KEYS)  # type: ignore[arg-type]
    golden("plans/deepspeed-distributed__coscheduling.yaml", plan.to_yaml())
