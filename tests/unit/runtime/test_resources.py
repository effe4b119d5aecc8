"""What one pod requests (Kubernetes ``PodRequests``) and a PodGroup's summed ``minResources``."""

from __future__ import annotations

from typing import Any

import pytest

from trainjob.runtime import resources


def ctr(
    requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None, **kw: Any
) -> Any:
    res: dict[str, Any] = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    return {"name": "c", "resources": res, **kw}


def printed(pod_spec: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in sorted(resources.pod_requests(pod_spec).items())}


@pytest.mark.parametrize(
    ("pod_spec", "want"),
    [
        pytest.param({"containers": [{"name": "c"}]}, {}, id="no resources request nothing"),
        pytest.param(
            {"containers": [ctr({"cpu": "1"}), ctr({"cpu": "500m", "memory": "1Gi"})]},
            {"cpu": "1500m", "memory": "1Gi"},
            id="containers add up",
        ),
        pytest.param(
            {"containers": [ctr(limits={"cpu": "2", "nvidia.com/gpu": 1})]},
            {"cpu": "2", "nvidia.com/gpu": "1"},
            id="limits stand in for missing requests",
        ),
        pytest.param(
            {"containers": [ctr({"cpu": "1"}, {"cpu": "4", "memory": "2Gi"})]},
            {"cpu": "1", "memory": "2Gi"},
            id="requests win over limits of the same resource",
        ),
        pytest.param(
            {
                "containers": [ctr({"cpu": "1"})],
                "initContainers": [ctr({"cpu": "3", "memory": "1Gi"})],
            },
            {"cpu": "3", "memory": "1Gi"},
            id="an init container larger than the containers sets the request",
        ),
        pytest.param(
            {
                "containers": [ctr({"cpu": "2"})],
                "initContainers": [ctr({"cpu": "1"})],
            },
            {"cpu": "2"},
            id="a smaller init container changes nothing",
        ),
        pytest.param(
            {
                "containers": [ctr({"cpu": "1"})],
                "initContainers": [
                    ctr({"cpu": "500m"}, restartPolicy="Always"),
                    ctr({"cpu": "2"}),
                ],
            },
            {"cpu": "2500m"},
            id="sidecars add to the containers and to later init containers",
        ),
        pytest.param(
            {"containers": [ctr({"cpu": "1"})], "overhead": {"cpu": "250m", "memory": "64Mi"}},
            {"cpu": "1250m", "memory": "64Mi"},
            id="pod overhead is added",
        ),
        pytest.param(
            {
                "containers": [ctr({"cpu": "1", "nvidia.com/gpu": "1"})],
                "resources": {"requests": {"cpu": "4"}},
            },
            {"cpu": "4", "nvidia.com/gpu": "1"},
            id="pod-level cpu replaces the containers' cpu only",
        ),
    ],
)
def test_pod_requests(pod_spec: dict[str, Any], want: dict[str, str]) -> None:
    assert printed(pod_spec) == want


def test_total_scales_by_count_and_sorts_names() -> None:
    one = resources.pod_requests({"containers": [ctr({"memory": "1Gi", "cpu": "500m"})]})
    two = resources.pod_requests({"containers": [ctr({"cpu": "2"})]})
    assert resources.total([(one, 4), (two, 1)]) == {"cpu": "4", "memory": "4Gi"}
    assert list(resources.total([(one, 1)])) == ["cpu", "memory"]


def test_total_of_zero_pods_is_zero() -> None:
    one = resources.pod_requests({"containers": [ctr({"cpu": "1"})]})
    assert resources.total([(one, 0)]) == {"cpu": "0"}
