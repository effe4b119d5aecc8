"""The XGBoost plugin through the compiler: the DMLC tracker envs and the reserved-env check.

Cases follow upstream ``plugins/xgboost/xgboost_test.go`` (v2.3): ``DMLC_NUM_WORKER`` is pods x
GPUs per node (``resourcesPerNode`` before the runtime's), or pods on CPU.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.helpers import builtin, container, container_of, env_of, node_job, runtime, trainjob
from trainjob.api import constants as c
from trainjob.errors import InvalidError
from trainjob.runtime import compile, validate

COMPLETION_INDEX = {"fieldRef": {"fieldPath": c.JOB_COMPLETION_INDEX_FIELD}}


def xgb_runtime(resources: dict[str, Any] | None = None) -> Any:
    ctr = container(resources=resources) if resources else container()
    return runtime("xgb", ml_policy={"numNodes": 1, "xgboost": {}}, replicated_jobs=[node_job(ctr)])


def test_envs_in_order_and_port() -> None:
    plan = compile(trainjob("xgb", name="xg", trainer={"numNodes": 3}), xgb_runtime())
    node = container_of(plan, "node", "node")
    assert node["env"] == [
        {"name": "DMLC_TRACKER_URI", "value": "xg-node-0-0.xg"},
        {"name": "DMLC_TRACKER_PORT", "value": "29500"},
        {"name": "DMLC_TASK_ID", "valueFrom": COMPLETION_INDEX},
        {"name": "DMLC_NUM_WORKER", "value": "3"},
    ]
    assert node["ports"] == [{"containerPort": 29500}]


GPU4 = {"limits": {"nvidia.com/gpu": "4"}}

WORKER_CASES = [
    pytest.param({}, None, "1", id="one CPU node is one worker"),
    pytest.param({"numNodes": 2}, None, "2", id="one worker per CPU node"),
    pytest.param({"numNodes": 2, "resourcesPerNode": GPU4}, None, "8", id="one worker per GPU"),
    pytest.param({"numNodes": 2}, GPU4, "8", id="runtime GPUs count when the trainer sets none"),
    pytest.param(
        {"numNodes": 2, "resourcesPerNode": {"requests": {"cpu": "4"}}},
        GPU4,
        "2",
        id="resourcesPerNode replaces the runtime's resources for the count",
    ),
]


@pytest.mark.parametrize(("trainer", "runtime_resources", "workers"), WORKER_CASES)
def test_num_workers(trainer: dict[str, Any], runtime_resources: Any, workers: str) -> None:
    tj = trainjob("xgb", name="xg", trainer=trainer)
    env = env_of(container_of(compile(tj, xgb_runtime(runtime_resources)), "node", "node"))
    assert env["DMLC_NUM_WORKER"] == workers


def test_trainer_env_comes_after_the_dmlc_envs() -> None:
    tj = trainjob("xgb", name="xg", trainer={"env": [{"name": "ROUNDS", "value": "10"}]})
    env = env_of(container_of(compile(tj, xgb_runtime()), "node", "node"))
    assert list(env)[-1] == "ROUNDS"


def test_reserved_envs_are_forbidden_one_by_one() -> None:
    env = [
        {"name": "DMLC_NUM_WORKER", "value": "2"},
        {"name": "OK", "value": "1"},
        {"name": "DMLC_TRACKER_URI", "value": "x"},
    ]
    tj = trainjob("xgb", name="xg", trainer={"env": env})
    assert [str(e) for e in validate(tj, xgb_runtime())] == [
        "spec.trainer.env[0]: Forbidden: DMLC_NUM_WORKER is reserved for the XGBoost runtime",
        "spec.trainer.env[2]: Forbidden: DMLC_TRACKER_URI is reserved for the XGBoost runtime",
    ]
    with pytest.raises(InvalidError):
        compile(tj, xgb_runtime())


def test_reserved_envs_are_fine_on_other_runtimes() -> None:
    tj = trainjob(name="ddp", trainer={"env": [{"name": "DMLC_NUM_WORKER", "value": "2"}]})
    assert validate(tj, runtime()) == []


GOLDEN_CASES = [
    pytest.param("default", {}, id="default"),
    pytest.param(
        "num-nodes-2-gpus",
        {
            "numNodes": 2,
            "resourcesPerNode": {"limits": {"nvidia.com/gpu": "2"}},
            "env": [{"name": "NUM_ROUNDS", "value": "100"}],
        },
        id="numNodes=2 with 2 GPUs",
    ),
]


@pytest.mark.parametrize(("case", "trainer"), GOLDEN_CASES)
def test_golden_plan(golden: Any, case: str, trainer: dict[str, Any]) -> None:
    tj = trainjob("xgboost-distributed", name="xg", trainer=trainer or None)
    plan = compile(tj, builtin("xgboost-distributed"))
    golden(f"plans/xgboost-distributed__{case}.yaml", plan.to_yaml())
