"""The JAX plugin through the compiler: ``jax.distributed`` envs, the coordinator port, pod count.

Cases follow upstream ``plugins/jax/jax_test.go`` (v2.3): ``JAX_NUM_PROCESSES`` is the pod count,
``JAX_PROCESS_ID`` the completion index, the coordinator the first pod on port 29500.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.helpers import builtin, container_of, env_of, replicated_job, trainjob
from trainjob.api import constants as c
from trainjob.runtime import compile, validate

COMPLETION_INDEX = {"fieldRef": {"fieldPath": c.JOB_COMPLETION_INDEX_FIELD}}


@pytest.mark.parametrize(
    ("trainer", "pods"),
    [
        pytest.param({}, 1, id="runtime numNodes"),
        pytest.param({"numNodes": 4}, 4, id="trainer numNodes wins"),
    ],
)
def test_envs_port_and_pod_count(trainer: dict[str, Any], pods: int) -> None:
    plan = compile(
        trainjob("jax-distributed", name="jx", trainer=trainer), builtin("jax-distributed")
    )
    node = container_of(plan, "node", "node")
    assert node["env"] == [
        {"name": "JAX_NUM_PROCESSES", "value": str(pods)},
        {"name": "JAX_PROCESS_ID", "valueFrom": COMPLETION_INDEX},
        {"name": "JAX_COORDINATOR_ADDRESS", "value": "jx-node-0-0.jx:29500"},
    ]
    assert node["ports"] == [{"containerPort": 29500}]
    assert replicated_job(plan, "node")["template"]["spec"]["parallelism"] == pods


def test_trainer_env_follows_and_may_override_jax_envs() -> None:
    env = [{"name": "XLA_FLAGS", "value": "--x"}, {"name": "JAX_NUM_PROCESSES", "value": "9"}]
    tj = trainjob("jax-distributed", name="jx", trainer={"numNodes": 2, "env": env})
    assert validate(tj, builtin("jax-distributed")) == []
    got = env_of(container_of(compile(tj, builtin("jax-distributed")), "node", "node"))
    assert list(got) == [
        "JAX_NUM_PROCESSES",
        "JAX_PROCESS_ID",
        "JAX_COORDINATOR_ADDRESS",
        "XLA_FLAGS",
    ]
    assert got["JAX_NUM_PROCESSES"] == "9"


def test_no_trainer_section_sets_no_envs_as_upstream() -> None:
    plan = compile(trainjob("jax-distributed", name="jx"), builtin("jax-distributed"))
    assert "env" not in container_of(plan, "node", "node")


GOLDEN_CASES = [
    pytest.param("default", {}, id="default"),
    pytest.param(
        "num-nodes-2-gpus",
        {
            "numNodes": 2,
            "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}},
            "command": ["python", "train.py"],
        },
        id="numNodes=2 with 8 GPUs",
    ),
]


@pytest.mark.parametrize(("case", "trainer"), GOLDEN_CASES)
def test_golden_plan(golden: Any, case: str, trainer: dict[str, Any]) -> None:
    tj = trainjob("jax-distributed", name="jx", trainer=trainer or None)
    golden(f"plans/jax-distributed__{case}.yaml", compile(tj, builtin("jax-distributed")).to_yaml())
