"""Elastic PyTorch (KEP-2903) through the compiler: the node range, torchrun's c10d rendezvous as
``PET_*`` envs, the starting node count, and each admission rule with its message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.helpers import builtin, container_of, env_of, node_job, replicated_job, runtime
from tests.unit.helpers import trainjob as make_trainjob
from trainjob.api import constants as c
from trainjob.runtime import compile, validate
from trainjob.runtime.plan import Plan
from trainjob.runtime.plugins import torch_elastic


def node_env(plan: Plan) -> dict[str, Any]:
    return env_of(container_of(plan, "node", "node"))


def elastic_runtime(policy: dict[str, Any] | None = None, **job_spec: Any) -> Any:
    rjob = node_job()
    rjob["template"]["spec"].update(job_spec)
    torch: dict[str, Any] = {} if policy is None else {"elasticPolicy": policy}
    return runtime(ml_policy={"torch": torch}, replicated_jobs=[rjob])


def test_elastic_job_gets_the_c10d_rendezvous_envs() -> None:
    tj = make_trainjob(name="ddp", trainer={"elasticPolicy": {"minNodes": 2, "maxNodes": 3}})
    tj.metadata.uid = "1234-uid"
    plan = compile(tj, builtin("torch-distributed"))
    env = node_env(plan)
    assert env[c.TORCH_ENV_NUM_NODES] == "2:3"
    assert env["PET_RDZV_BACKEND"] == "c10d"
    assert env["PET_RDZV_ID"] == "1234-uid"
    assert env["PET_RDZV_ENDPOINT"] == "ddp-node-0-0.ddp:29500"
    assert env["PET_MAX_RESTARTS"] == str(torch_elastic.DEFAULT_MAX_RESTARTS)
    spec = replicated_job(plan, "node")["template"]["spec"]
    assert (spec["parallelism"], spec["completions"]) == (3, 3), "maxNodes is the default start"


def test_num_nodes_is_the_starting_count_and_the_job_narrows_the_runtime() -> None:
    rt = elastic_runtime({"minNodes": 1, "maxNodes": 8, "maxRestarts": 5})
    tj = make_trainjob(trainer={"numNodes": 3, "elasticPolicy": {"minNodes": 2, "maxNodes": 4}})
    plan = compile(tj, rt)
    env = node_env(plan)
    assert env[c.TORCH_ENV_NUM_NODES] == "2:4"
    assert env["PET_MAX_RESTARTS"] == "5", "the runtime's maxRestarts is kept"
    assert replicated_job(plan, "node")["template"]["spec"]["parallelism"] == 3


def test_runtime_policy_alone_makes_a_job_elastic() -> None:
    plan = compile(make_trainjob(trainer={}), elastic_runtime({"minNodes": 1, "maxNodes": 2}))
    assert node_env(plan)[c.TORCH_ENV_NUM_NODES] == "1:2"


def test_user_rdzv_conf_is_kept() -> None:
    """Rendezvous timeouts are tuned with PET_RDZV_CONF in trainer.env; the plugin leaves it."""
    conf = {"name": "PET_RDZV_CONF", "value": "join_timeout=30,last_call_timeout=1"}
    tj = make_trainjob(trainer={"env": [conf], "elasticPolicy": {"minNodes": 1, "maxNodes": 2}})
    assert node_env(compile(tj, builtin("torch-distributed")))["PET_RDZV_CONF"] == conf["value"]


def test_a_job_without_elastic_policy_gets_no_rendezvous_envs() -> None:
    env = node_env(compile(make_trainjob(trainer={"numNodes": 2}), builtin("torch-distributed")))
    assert not any(k.startswith("PET_RDZV") or k == "PET_MAX_RESTARTS" for k in env)
    assert env[c.TORCH_ENV_NUM_NODES] == "2"


ERROR_CASES = [
    pytest.param(
        None,
        {"elasticPolicy": {"minNodes": 3, "maxNodes": 2}},
        {},
        "spec.trainer.elasticPolicy.maxNodes: Invalid value: 2: "
        "must be greater than or equal to minNodes (3)",
        id="maxNodes below minNodes",
    ),
    pytest.param(
        None,
        {"elasticPolicy": {"minNodes": 0, "maxNodes": 2}},
        {},
        "spec.trainer.elasticPolicy.minNodes: Invalid value: 0: must be greater than or equal to 1",
        id="minNodes of 0",
    ),
    pytest.param(
        None,
        {"numNodes": 5, "elasticPolicy": {"minNodes": 2, "maxNodes": 4}},
        {},
        "spec.trainer.numNodes: Invalid value: 5: "
        "must be between elasticPolicy.minNodes (2) and maxNodes (4)",
        id="numNodes outside the bounds",
    ),
    pytest.param(
        {"minNodes": 2, "maxNodes": 4},
        {"elasticPolicy": {"minNodes": 1, "maxNodes": 6}},
        {},
        "spec.trainer.elasticPolicy.minNodes: Invalid value: 1: "
        "must be greater than or equal to the runtime's minNodes (2)",
        id="the job may only narrow the runtime's range",
    ),
    pytest.param(
        {"minNodes": 1, "maxNodes": 2},
        {},
        {"completionMode": "NonIndexed"},
        'spec.runtimeRef: Invalid value: "NonIndexed": '
        'elastic training needs the "node" job\'s completionMode to be Indexed',
        id="a NonIndexed node job",
    ),
    pytest.param(
        {"minNodes": 1, "maxNodes": 2},
        {},
        {"parallelism": 2, "completions": 3},
        'spec.runtimeRef: Invalid value: {"completions":3,"parallelism":2}: '
        'elastic training needs the "node" job\'s parallelism to equal completions',
        id="parallelism unequal to completions",
    ),
    pytest.param(
        None,
        {"args": ["--nnodes=2", "train.py"], "elasticPolicy": {"minNodes": 1, "maxNodes": 2}},
        {},
        'spec.trainer.args[0]: Invalid value: "--nnodes=2": must not set --nnodes for an '
        "elastic TrainJob: torchrun's node range comes from elasticPolicy",
        id="a user --nnodes",
    ),
    pytest.param(
        None,
        {"elasticPolicy": {"minNodes": 1, "maxNodes": 2, "metrics": [{"type": "Cpu"}]}},
        {},
        'spec.trainer.elasticPolicy.metrics[0].type: Unsupported value: "Cpu": supported values: '
        '"ContainerResource", "External", "Object", "Pods", "Resource"',
        id="a metric type autoscaling/v2 does not know",
    ),
]


@pytest.mark.parametrize(("rt_policy", "trainer", "job_spec", "want"), ERROR_CASES)
def test_admission_errors(
    rt_policy: dict[str, Any] | None, trainer: dict[str, Any], job_spec: dict[str, Any], want: str
) -> None:
    rt = elastic_runtime(rt_policy, **job_spec)
    errors = [str(e) for e in validate(make_trainjob(trainer=trainer), rt)]
    assert want in errors, errors


def test_runtime_patch_of_parallelism_is_refused() -> None:
    patch = {
        "manager": "me",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [{"name": "node", "template": {"spec": {"parallelism": 4}}}]
                }
            }
        },
    }
    tj = make_trainjob(
        trainer={"elasticPolicy": {"minNodes": 1, "maxNodes": 2}}, runtimePatches=[patch]
    )
    errors = [str(e) for e in validate(tj, builtin("torch-distributed"))]
    assert (
        "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec"
        ".parallelism: Forbidden: must not be patched for an elastic TrainJob: "
        "the node count comes from elasticPolicy"
    ) in errors


def test_elastic_policy_on_a_non_torch_runtime_is_refused() -> None:
    tj = make_trainjob("mpi-distributed", trainer={"elasticPolicy": {"minNodes": 1, "maxNodes": 2}})
    errors = [str(e) for e in validate(tj, builtin("mpi-distributed"))]
    assert any(
        e.startswith("spec.trainer.elasticPolicy: Invalid value:")
        and "needs a runtime with mlPolicy.torch" in e
        for e in errors
    ), errors


def test_a_valid_elastic_job_has_no_errors() -> None:
    tj = make_trainjob(trainer={"numNodes": 2, "elasticPolicy": {"minNodes": 2, "maxNodes": 3}})
    assert validate(tj, builtin("torch-distributed")) == []


def test_an_elastic_torchtune_job_is_refused() -> None:
    tj = make_trainjob(
        "torchtune-llama3.2-1b",
        trainer={"command": ["tune", "run"], "elasticPolicy": {"minNodes": 1, "maxNodes": 2}},
    )
    errors = [str(e) for e in validate(tj, builtin("torchtune-llama3.2-1b"))]
    assert (
        'spec.trainer.elasticPolicy: Invalid value: {"maxNodes":2,"minNodes":1}: '
        "the torchtune trainer (tune run) is not elastic yet: remove elasticPolicy"
    ) in errors, errors
