"""The Torch plugin through the compiler: PET_* envs, numProcPerNode, validation, envInjection.

Cases follow upstream ``plugins/torch/torch_test.go`` at v2.3/HEAD: numProcPerNode comes from the
trainer, else the v2.0/2.1 runtime value, else ``auto``; ``cpu`` and ``auto`` without GPUs count
CPUs (requests before limits) of ``resourcesPerNode`` or of the runtime's ``node`` container.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.helpers import (
    builtin,
    container,
    container_of,
    env_of,
    node_job,
    replicated_job,
    runtime,
    trainjob,
)
from trainjob.api import constants as c
from trainjob.api.load import parse
from trainjob.errors import InvalidError
from trainjob.runtime import compile, validate
from trainjob.runtime.plan import Plan

NODE_RANK = {"fieldRef": {"fieldPath": c.JOB_COMPLETION_INDEX_FIELD}}


def node_env(plan: Plan) -> dict[str, Any]:
    return env_of(container_of(plan, "node", "node"))


def torch_runtime(
    *, resources: dict[str, Any] | None = None, torch: dict[str, Any] | None = None
) -> Any:
    ctr = container(resources=resources) if resources else container()
    return runtime(ml_policy={"numNodes": 1, "torch": torch or {}}, replicated_jobs=[node_job(ctr)])


# -- numProcPerNode ------------------------------------------------------------------------------

CPU4 = {"requests": {"cpu": "4"}}
GPU2 = {"limits": {"nvidia.com/gpu": "2"}}

NUM_PROC_CASES = [
    pytest.param({}, None, {}, "1", id="auto without any resources is one process"),
    pytest.param({"resourcesPerNode": CPU4}, None, {}, "4", id="auto counts cpu requests"),
    pytest.param(
        {"resourcesPerNode": {"requests": {"cpu": "1500m"}}},
        None,
        {},
        "2",
        id="a fractional cpu count is rounded up",
    ),
    pytest.param(
        {"resourcesPerNode": {"requests": {"cpu": "2"}, "limits": {"cpu": "6"}}},
        None,
        {},
        "2",
        id="cpu requests win over cpu limits",
    ),
    pytest.param(
        {"resourcesPerNode": {"limits": {"cpu": "3"}}},
        None,
        {},
        "3",
        id="cpu limits count when no cpu is requested",
    ),
    pytest.param(
        {"resourcesPerNode": {"requests": {"cpu": "0"}, "limits": {"cpu": "5"}}},
        None,
        {},
        "5",
        id="a zero cpu request falls back to the limit",
    ),
    pytest.param(
        {"resourcesPerNode": {"requests": {"cpu": "100m"}}},
        None,
        {},
        "1",
        id="less than one cpu is still one process",
    ),
    pytest.param(
        {"resourcesPerNode": {"limits": {"cpu": "8", "nvidia.com/gpu": "2"}}},
        None,
        {},
        "auto",
        id="auto with a gpu limit is left to torchrun",
    ),
    pytest.param(
        {"resourcesPerNode": {"limits": {"amd.com/GPU": "1"}, "requests": {"amd.com/GPU": "1"}}},
        None,
        {},
        "auto",
        id="any resource named gpu in any case counts as a gpu",
    ),
    pytest.param(
        {}, GPU2, {}, "auto", id="the runtime node's gpus are used without resourcesPerNode"
    ),
    pytest.param({}, CPU4, {}, "4", id="the runtime node's cpus are used without resourcesPerNode"),
    pytest.param(
        {"resourcesPerNode": {"requests": {"cpu": "3"}}},
        GPU2,
        {},
        "3",
        id="resourcesPerNode replaces the runtime node's resources for the count",
    ),
    pytest.param(
        {"numProcPerNode": 3, "resourcesPerNode": {"requests": {"cpu": "8"}}},
        None,
        {},
        "3",
        id="an int numProcPerNode is kept",
    ),
    pytest.param(
        {}, None, {"numProcPerNode": 4}, "4", id="legacy runtime torch numProcPerNode int"
    ),
    pytest.param(
        {"numProcPerNode": 2},
        None,
        {"numProcPerNode": "cpu"},
        "2",
        id="the trainer value wins over the legacy runtime value",
    ),
    pytest.param(
        {
            "numProcPerNode": "cpu",
            "resourcesPerNode": {"limits": {"cpu": "6", "nvidia.com/gpu": "2"}},
        },
        None,
        {},
        "6",
        id="legacy cpu counts cpus even with gpus",
    ),
    pytest.param({"numProcPerNode": "cpu"}, None, {}, "1", id="legacy cpu without cpus is one"),
    pytest.param(
        {"numProcPerNode": "gpu", "resourcesPerNode": CPU4},
        None,
        {},
        "gpu",
        id="legacy gpu is passed to torchrun as is",
    ),
    pytest.param({"numProcPerNode": "2"}, None, {}, "2", id="legacy digit string is a count"),
    pytest.param(
        {"resourcesPerNode": CPU4},
        None,
        {"numProcPerNode": "auto"},
        "4",
        id="legacy runtime auto counts cpus",
    ),
]


@pytest.mark.parametrize(("trainer", "node_resources", "torch", "want"), NUM_PROC_CASES)
def test_num_proc_per_node(
    trainer: dict[str, Any], node_resources: dict[str, Any] | None, torch: dict[str, Any], want: str
) -> None:
    plan = compile(trainjob(trainer=trainer), torch_runtime(resources=node_resources, torch=torch))
    assert node_env(plan)[c.TORCH_ENV_NUM_PROC_PER_NODE] == want


# -- PET_* envs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("trainer", "policy_nodes", "want"),
    [
        pytest.param({}, 1, "1", id="one node by default"),
        pytest.param({}, 3, "3", id="the runtime's numNodes without a trainer value"),
        pytest.param({"numNodes": 2}, 3, "2", id="trainer numNodes wins over the runtime's"),
    ],
)
def test_pet_nnodes_and_parallelism(trainer: dict[str, Any], policy_nodes: int, want: str) -> None:
    rt = runtime(ml_policy={"numNodes": policy_nodes, "torch": {}})
    plan = compile(trainjob(trainer=trainer), rt)
    assert node_env(plan)[c.TORCH_ENV_NUM_NODES] == want
    assert replicated_job(plan, "node")["template"]["spec"]["parallelism"] == int(want)


def test_envs_are_trainer_env_first_then_pet_envs() -> None:
    rt = runtime(
        replicated_jobs=[node_job(container(env=[{"name": "FROM_RUNTIME", "value": "r"}]))]
    )
    tj = trainjob(
        name="ddp",
        trainer={"env": [{"name": "EPOCHS", "value": "3"}, {"name": "FROM_RUNTIME", "value": "t"}]},
    )
    env = node_env(compile(tj, rt))
    assert list(env) == [
        "FROM_RUNTIME",
        "EPOCHS",
        c.TORCH_ENV_NUM_NODES,
        c.TORCH_ENV_NUM_PROC_PER_NODE,
        c.TORCH_ENV_NODE_RANK,
        c.TORCH_ENV_MASTER_ADDR,
        c.TORCH_ENV_MASTER_PORT,
    ]
    assert env["FROM_RUNTIME"] == "t"
    assert env[c.TORCH_ENV_NODE_RANK] == NODE_RANK
    assert env[c.TORCH_ENV_MASTER_ADDR] == "ddp-node-0-0.ddp"
    assert env[c.TORCH_ENV_MASTER_PORT] == "29500"


def test_trainer_container_exposes_the_torch_port() -> None:
    plan = compile(trainjob(trainer={}), builtin("torch-distributed"))
    assert container_of(plan, "node", "node")["ports"] == [{"containerPort": 29500}]


def test_no_pet_envs_or_port_without_a_trainer_section() -> None:
    """Upstream torch.go sets PET_* and the port only when the TrainJob has spec.trainer."""
    plan = compile(trainjob(), builtin("torch-distributed"))
    assert node_env(plan) == {}
    assert "ports" not in container_of(plan, "node", "node")
    assert replicated_job(plan, "node")["template"]["spec"]["parallelism"] == 1


def test_env_injection_without_a_trainer_section() -> None:
    """envInjection targets get the PET_* envs whether or not spec.trainer is set."""
    doc = builtin("torch-distributed").to_dict()
    doc["spec"]["mlPolicy"]["torch"] = {
        "envInjection": {"targets": [{"jobName": "node", "containerNames": ["preflight"]}]}
    }
    pod = doc["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"]["initContainers"] = [{"name": "preflight", "image": "busybox"}]
    plan = compile(trainjob(), parse(doc))  # type: ignore[arg-type]
    init = replicated_job(plan, "node")["template"]["spec"]["template"]["spec"]["initContainers"]
    assert [e["name"] for e in init[0]["env"]][:2] == [
        c.TORCH_ENV_NUM_NODES,
        c.TORCH_ENV_NUM_PROC_PER_NODE,
    ]
    assert node_env(plan) == {}


def test_plugin_is_idle_without_a_torch_policy() -> None:
    rt = runtime(ml_policy={"numNodes": 1})
    env = node_env(compile(trainjob(trainer={"env": [{"name": "A", "value": "1"}]}), rt))
    assert env == {"A": "1"}


# -- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("trainer", "want"),
    [
        pytest.param(
            {"env": [{"name": "PET_NNODES", "value": "2"}]},
            'spec.trainer.env: Invalid value: [{"name":"PET_NNODES","value":"2"}]: '
            "must not have reserved envs, invalid envs configured: [PET_NNODES]",
            id="one reserved env",
        ),
        pytest.param(
            {
                "env": [
                    {"name": "PET_MASTER_PORT", "value": "1"},
                    {"name": "OK", "value": "1"},
                    {"name": "PET_MASTER_ADDR", "value": "x"},
                ]
            },
            'spec.trainer.env: Invalid value: [{"name":"PET_MASTER_PORT","value":"1"},'
            '{"name":"OK","value":"1"},{"name":"PET_MASTER_ADDR","value":"x"}]: '
            "must not have reserved envs, invalid envs configured: [PET_MASTER_ADDR PET_MASTER_PORT]",
            id="reserved envs are listed sorted",
        ),
        pytest.param(
            {"command": ["tune", "run"], "env": [{"name": "PET_NODE_RANK", "value": "0"}]},
            'spec.trainer.env: Invalid value: [{"name":"PET_NODE_RANK","value":"0"}]: '
            "must not have reserved envs, invalid envs configured: [PET_NODE_RANK]",
            id="reserved envs are rejected for tune run too",
        ),
        pytest.param(
            {"numProcPerNode": "many"},
            'spec.trainer.numProcPerNode: Invalid value: "many": '
            "must have an int value or [auto cpu gpu]",
            id="a legacy numProcPerNode word other than auto cpu gpu",
        ),
    ],
)
def test_validation_messages(trainer: dict[str, Any], want: str) -> None:
    tj = trainjob("torch-distributed", trainer=trainer)
    errors = [str(e) for e in validate(tj, builtin("torch-distributed"))]
    assert want in errors


@pytest.mark.parametrize(
    "trainer",
    [
        pytest.param({"numProcPerNode": value}, id=f"legacy numProcPerNode {value}")
        for value in ("auto", "cpu", "gpu", "4")
    ]
    + [
        pytest.param({"env": [{"name": "PET_OTHER", "value": "1"}]}, id="other PET_ names are fine")
    ],
)
def test_valid_trainers(trainer: dict[str, Any]) -> None:
    assert validate(trainjob(trainer=trainer), builtin("torch-distributed")) == []


# -- envInjection (v2.3) ------------------------------------------------------------------------


def injection_runtime(targets: list[dict[str, Any]], name: str = "torch-distributed") -> Any:
    node = node_job(
        container(),
        container("sidecar"),
        init_containers=[container("preflight")],
    )
    other = node_job(container("helper"), name="aux", ancestor=None)
    return runtime(
        name,
        ml_policy={"numNodes": 2, "torch": {"envInjection": {"targets": targets}}},
        replicated_jobs=[node, other],
    )


ALL_PET = [
    c.TORCH_ENV_NUM_NODES,
    c.TORCH_ENV_NUM_PROC_PER_NODE,
    c.TORCH_ENV_NODE_RANK,
    c.TORCH_ENV_MASTER_ADDR,
    c.TORCH_ENV_MASTER_PORT,
]


@pytest.mark.parametrize(
    ("command", "job", "name"),
    [
        pytest.param(None, "node", "preflight", id="an init container of the trainer job"),
        pytest.param(None, "node", "sidecar", id="a regular container of the trainer job"),
        pytest.param(None, "aux", "helper", id="a container of another job"),
        pytest.param(["tune", "run"], "node", "preflight", id="master envs too under tune run"),
    ],
)
def test_env_injection_targets_get_every_pet_env(
    command: list[str] | None, job: str, name: str
) -> None:
    name_ = "torchtune-llama3.2-1b" if command else "torch-distributed"
    rt = injection_runtime(
        [
            {"jobName": "node", "containerNames": ["preflight", "sidecar"]},
            {"jobName": "aux", "containerNames": ["helper"]},
        ],
        name_,
    )
    trainer: dict[str, Any] = {"command": command} if command else {}
    tj = trainjob(name_, name="inj", trainer=trainer)
    plan = compile(tj, rt)
    env = env_of(container_of(plan, job, name))
    assert list(env) == ALL_PET
    assert env[c.TORCH_ENV_NUM_NODES] == "2"
    assert env[c.TORCH_ENV_MASTER_ADDR] == "inj-node-0-0.inj"


def test_env_injection_leaves_unlisted_containers_alone() -> None:
    rt = injection_runtime([{"jobName": "node", "containerNames": ["preflight"]}])
    plan = compile(trainjob(), rt)
    assert "env" not in container_of(plan, "node", "sidecar")
    assert "env" not in container_of(plan, "aux", "helper")


@pytest.mark.parametrize(
    ("target", "want"),
    [
        pytest.param(
            {"jobName": "node", "containerNames": ["preflight", "missing"]},
            'spec.runtimeRef: Invalid value: {"jobName":"node","containerNames":["preflight",'
            '"missing"]}: envInjection target podSet "node" container "missing" not found in '
            "runtime template",
            id="a container the job does not have",
        ),
        pytest.param(
            {"jobName": "nope", "containerNames": ["x"]},
            'spec.runtimeRef: Invalid value: {"jobName":"nope","containerNames":["x"]}: '
            'envInjection target podSet "nope" container "x" not found in runtime template',
            id="a job the runtime does not have",
        ),
    ],
)
def test_env_injection_missing_target(target: dict[str, Any], want: str) -> None:
    """Refused at admission (upstream validateEnvInjectionTargets), not at every reconcile."""
    tj = trainjob()
    rt = injection_runtime([target])
    assert [str(e) for e in validate(tj, rt)] == [want]
    with pytest.raises(InvalidError) as err:
        compile(tj, rt)
    assert [str(e) for e in err.value.errors] == [want]


# -- golden plans -------------------------------------------------------------------------------

GOLDEN_CASES = [
    pytest.param("default", {}, None, id="default"),
    pytest.param(
        "num-nodes-2-cpu",
        {
            "numNodes": 2,
            "resourcesPerNode": {"requests": {"cpu": "2"}, "limits": {"cpu": "4", "memory": "4Gi"}},
            "env": [{"name": "EPOCHS", "value": "3"}],
        },
        None,
        id="numNodes=2 with cpu resources",
    ),
    pytest.param(
        "env-injection",
        {"numNodes": 2, "command": ["torchrun", "train.py"]},
        [{"jobName": "node", "containerNames": ["preflight"]}],
        id="envInjection into an init container",
    ),
    pytest.param(
        "elastic",
        {
            "numNodes": 2,
            "elasticPolicy": {"minNodes": 2, "maxNodes": 4, "maxRestarts": 2},
            "command": ["torchrun", "train.py"],
        },
        None,
        id="elasticPolicy: torchrun's c10d rendezvous envs (KEP-2903)",
    ),
]


@pytest.mark.parametrize(("case", "trainer", "targets"), GOLDEN_CASES)
def test_golden_plan(golden: Any, case: str, trainer: dict[str, Any], targets: Any) -> None:
    rt = builtin("torch-distributed")
    if targets is not None:
        doc = rt.to_dict()
        doc["spec"]["mlPolicy"]["torch"] = {"envInjection": {"targets": targets}}
        pod = doc["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
        pod["spec"]["initContainers"] = [
            {
                "name": "preflight",
                "image": "busybox:1.36",
                "command": ["sh", "-c", "env | grep PET_"],
            }
        ]
        rt = parse(doc)  # type: ignore[assignment]
    plan = compile(trainjob(name="ddp", trainer=trainer or None), rt)
    golden(f"plans/torch-distributed__{case}.yaml", plan.to_yaml())
