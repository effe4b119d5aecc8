"""The MPI plugin through the compiler: pod counts, slots, SSH and hostfile wiring, Secret, validation.

Cases follow upstream ``plugins/mpi/mpi_test.go`` (v2.3/HEAD): job ``node`` gets
``trainer.numNodes`` pods (one fewer when the launcher is a node too, at least one); slots are
``trainer.numProcPerNode``, else the runtime's, where a runtime value of 1 becomes the GPU count.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.unit.helpers import (
    builtin,
    container,
    container_of,
    env_of,
    node_job,
    pod_spec_of,
    replicated_job,
    runtime,
    trainjob,
)
from trainjob.api import constants as c
from trainjob.errors import InvalidError
from trainjob.runtime import CompileOptions, compile, validate
from trainjob.runtime.plan import Plan

KEYS = CompileOptions(
    ssh_private_key="-----BEGIN EC PRIVATE KEY-----\ntest\n-----END EC PRIVATE KEY-----\n",
    ssh_public_key="ecdsa-sha2-nistp521 AAAAtest\n",
)


def mpi_runtime(
    *,
    as_node: bool = True,
    num_proc: int = 1,
    node_resources: dict[str, Any] | None = None,
    implementation: str = "OpenMPI",
    jobs: list[Any] | None = None,
) -> Any:
    """A launcher (ancestor trainer) + node runtime like deepspeed-distributed."""
    node_ctr = container(resources=node_resources) if node_resources else container()
    launcher = container(env=[{"name": "RUNTIME", "value": "yes"}])
    return runtime(
        "mpi-test",
        ml_policy={
            "numNodes": 1,
            "mpi": {
                "numProcPerNode": num_proc,
                "mpiImplementation": implementation,
                "sshAuthMountPath": "/home/mpiuser/.ssh",
                "runLauncherAsNode": as_node,
            },
        },
        replicated_jobs=jobs
        or [node_job(launcher, name="launcher"), node_job(node_ctr, ancestor=None)],
    )


def parallelism(plan: Plan, job: str) -> int:
    return replicated_job(plan, job)["template"]["spec"]["parallelism"]  # type: ignore[no-any-return]


def hostfile(plan: Plan) -> str:
    (cm,) = plan.configmaps
    return cm["data"]["hostfile"]  # type: ignore[no-any-return]


# -- pod counts and hostfile -----------------------------------------------------------------------

COUNT_CASES = [
    pytest.param(True, None, 1, 1, id="launcher as node: runtime default gives one node pod"),
    pytest.param(True, 3, 2, 1, id="launcher as node: numNodes 3 gives two node pods"),
    pytest.param(True, 1, 1, 1, id="launcher as node: numNodes 1 still keeps one node pod"),
    pytest.param(False, 3, 3, 1, id="launcher apart: numNodes 3 gives three node pods"),
    pytest.param(False, None, 1, 1, id="launcher apart: runtime default gives one node pod"),
]


@pytest.mark.parametrize(("as_node", "num_nodes", "node_pods", "launcher_pods"), COUNT_CASES)
def test_pod_counts(
    as_node: bool, num_nodes: int | None, node_pods: int, launcher_pods: int
) -> None:
    trainer = {"numNodes": num_nodes} if num_nodes is not None else None
    plan = compile(trainjob("mpi-test", name="pi", trainer=trainer), mpi_runtime(as_node=as_node))
    assert parallelism(plan, "node") == node_pods
    assert parallelism(plan, "launcher") == launcher_pods


@pytest.mark.parametrize(
    ("as_node", "want"),
    [
        pytest.param(
            True,
            "pi-launcher-0-0.pi slots=1\npi-node-0-0.pi slots=1\npi-node-0-1.pi slots=1\n",
            id="the launcher is listed, in job order, when it is a node",
        ),
        pytest.param(
            False,
            "pi-node-0-0.pi slots=1\npi-node-0-1.pi slots=1\npi-node-0-2.pi slots=1\n",
            id="only node pods are listed when the launcher is apart",
        ),
    ],
)
def test_hostfile_lists_every_node_pod(as_node: bool, want: str) -> None:
    plan = compile(
        trainjob("mpi-test", name="pi", trainer={"numNodes": 3}), mpi_runtime(as_node=as_node)
    )
    assert hostfile(plan) == want


# -- slots (numProcPerNode) ---------------------------------------------------------------------

GPU4 = {"limits": {"nvidia.com/gpu": "4"}}

SLOT_CASES = [
    pytest.param({}, 1, None, "1", id="runtime value 1 without GPUs is one slot"),
    pytest.param({"numProcPerNode": 3}, 1, None, "3", id="trainer numProcPerNode wins"),
    pytest.param(
        {"resourcesPerNode": GPU4}, 1, None, "4", id="runtime value 1 becomes the GPU count"
    ),
    pytest.param(
        {"resourcesPerNode": {"limits": {"nvidia.com/gpu": "1"}}},
        1,
        None,
        "1",
        id="a single GPU keeps one slot",
    ),
    pytest.param({}, 1, GPU4, "4", id="GPUs of the runtime's node container count too"),
    pytest.param(
        {"resourcesPerNode": GPU4}, 2, None, "2", id="a runtime value other than 1 is kept"
    ),
    pytest.param(
        {"numProcPerNode": 2, "resourcesPerNode": GPU4},
        1,
        None,
        "2",
        id="trainer numProcPerNode wins over GPUs",
    ),
]


@pytest.mark.parametrize(("trainer", "num_proc", "node_resources", "slots"), SLOT_CASES)
def test_slots(
    trainer: dict[str, Any], num_proc: int, node_resources: dict[str, Any] | None, slots: str
) -> None:
    rt = mpi_runtime(num_proc=num_proc, node_resources=node_resources)
    plan = compile(trainjob("mpi-test", name="pi", trainer=trainer or None), rt)
    launcher_env = env_of(container_of(plan, "launcher", "node"))
    assert launcher_env[c.OPENMPI_ENV_DEFAULT_SLOTS] == slots
    assert {line.split(" ")[1] for line in hostfile(plan).splitlines()} == {f"slots={slots}"}


# -- volumes, mounts, envs ----------------------------------------------------------------------


def test_launcher_gets_openmpi_envs_in_order_after_runtime_and_before_trainer_env() -> None:
    tj = trainjob("mpi-test", name="pi", trainer={"env": [{"name": "EPOCHS", "value": "3"}]})
    env = container_of(compile(tj, mpi_runtime()), "launcher", "node")["env"]
    assert env == [
        {"name": "RUNTIME", "value": "yes"},
        {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
        {"name": "OMPI_MCA_orte_set_default_slots", "value": "1"},
        {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
        {"name": "EPOCHS", "value": "3"},
    ]


def test_ssh_volume_on_both_jobs_and_hostfile_volume_on_the_launcher() -> None:
    plan = compile(trainjob("mpi-test", name="pi"), mpi_runtime())
    ssh = {
        "name": "mpi-ssh-auth",
        "secret": {
            "secretName": "pi-mpi-ssh-auth",
            "items": [
                {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
                {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
                {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
            ],
            "defaultMode": 0o400,
        },
    }
    hostfile_volume = {
        "name": "mpi-hostfile",
        "configMap": {
            "name": "pi-mpi-hostfile",
            "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
        },
    }
    assert pod_spec_of(plan, "launcher")["volumes"] == [ssh, hostfile_volume]
    assert pod_spec_of(plan, "node")["volumes"] == [ssh]
    assert container_of(plan, "launcher", "node")["volumeMounts"] == [
        {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
        {"name": "mpi-hostfile", "mountPath": "/etc/mpi"},
    ]
    assert container_of(plan, "node", "node")["volumeMounts"] == [
        {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"}
    ]
    assert "env" not in container_of(plan, "node", "node")


@pytest.mark.parametrize(
    ("as_node", "node_gets_trainer"),
    [
        pytest.param(True, True, id="launcher as node: node job gets resources and env"),
        pytest.param(False, False, id="launcher apart: node job keeps its own"),
    ],
)
def test_trainer_resources_and_env_reach_the_node_job_only_with_launcher_as_node(
    as_node: bool, node_gets_trainer: bool
) -> None:
    trainer = {
        "resourcesPerNode": {"limits": {"cpu": "2"}},
        "env": [{"name": "EPOCHS", "value": "3"}],
        "image": "user:img",
    }
    plan = compile(trainjob("mpi-test", name="pi", trainer=trainer), mpi_runtime(as_node=as_node))
    launcher = container_of(plan, "launcher", "node")
    node = container_of(plan, "node", "node")
    assert launcher["resources"] == {"limits": {"cpu": "2"}}
    assert env_of(launcher)["EPOCHS"] == "3"
    assert launcher["image"] == "user:img"
    assert node["image"] == "trainer:test"  # image/command/args only go to the trainer job
    assert ("resources" in node) is node_gets_trainer
    assert ("EPOCHS" in env_of(node)) is node_gets_trainer


# -- Secret and ConfigMap -------------------------------------------------------------------------


def test_plan_holds_secret_then_configmap_then_jobset() -> None:
    plan = compile(trainjob("mpi-test", name="pi"), mpi_runtime(), KEYS)
    assert [o["kind"] for o in plan] == ["Secret", "ConfigMap", "JobSet"]


def test_ssh_secret_carries_the_given_key_pair() -> None:
    tj = trainjob("mpi-test", name="pi", namespace="team")
    (secret,) = compile(tj, mpi_runtime(), KEYS).secrets
    assert secret["metadata"]["name"] == "pi-mpi-ssh-auth"
    assert secret["metadata"]["namespace"] == "team"
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert secret["immutable"] is True
    decoded = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert decoded == {
        "ssh-privatekey": KEYS.ssh_private_key,
        "ssh-publickey": KEYS.ssh_public_key,
    }
    (owner,) = secret["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("TrainJob", "pi", True)


def test_ssh_secret_without_keys_has_empty_data() -> None:
    (secret,) = compile(trainjob("mpi-test", name="pi"), mpi_runtime()).secrets
    assert secret["data"] == {}


def test_same_inputs_give_byte_identical_plans() -> None:
    tj = trainjob("mpi-test", name="pi", trainer={"numNodes": 4})
    assert compile(tj, mpi_runtime(), KEYS).to_yaml() == compile(tj, mpi_runtime(), KEYS).to_yaml()


def test_non_mpi_runtimes_plan_no_secret_or_configmap() -> None:
    plan = compile(trainjob(name="ddp"), runtime())
    assert plan.secrets == [] and plan.configmaps == []


# -- validation ---------------------------------------------------------------------------------

NO_LAUNCHER = [node_job()]

VALIDATION_CASES = [
    pytest.param(
        {"numNodes": 2},
        {"jobs": NO_LAUNCHER},
        [
            "spec.trainer.numNodes: Invalid value: 2: must have 1 when MPI trainingRuntime with "
            "enabled runLauncherAsNode does not have either launcher and node"
        ],
        id="numNodes 2 with launcher as node needs a launcher job",
    ),
    pytest.param({"numNodes": 1}, {"jobs": NO_LAUNCHER}, [], id="numNodes 1 needs no launcher job"),
    pytest.param(
        {"numNodes": 2}, {"jobs": NO_LAUNCHER, "as_node": False}, [], id="launcher apart is fine"
    ),
    pytest.param(
        {
            "env": [
                {"name": "OMPI_MCA_plm_rsh_args", "value": "x"},
                {"name": "OK", "value": "1"},
                {"name": "OMPI_MCA_orte_default_hostfile", "value": "y"},
            ]
        },
        {},
        [
            'spec.trainer.env: Invalid value: [{"name":"OMPI_MCA_plm_rsh_args","value":"x"},'
            '{"name":"OK","value":"1"},{"name":"OMPI_MCA_orte_default_hostfile","value":"y"}]: '
            "must not have reserved envs, invalid envs configured: "
            "[OMPI_MCA_orte_default_hostfile OMPI_MCA_plm_rsh_args]"
        ],
        id="reserved OpenMPI envs are rejected, sorted",
    ),
    pytest.param(
        {},
        {"implementation": ""},
        [
            'spec.mlPolicy.mpi.mpiImplementation: Invalid value: "": '
            "MPI implementation for  doesn't supported"
        ],
        id="an empty MPI implementation is not supported",
    ),
    pytest.param(
        {"numProcPerNode": "auto"},
        {},
        ['spec.trainer.numProcPerNode: Invalid value: "auto": must be an integer for MPI runtimes'],
        id="a legacy string numProcPerNode must be an integer",
    ),
]


@pytest.mark.parametrize(("trainer", "runtime_kw", "want"), VALIDATION_CASES)
def test_validation(trainer: dict[str, Any], runtime_kw: dict[str, Any], want: list[str]) -> None:
    tj = trainjob("mpi-test", name="pi", trainer=trainer or None)
    rt = mpi_runtime(**runtime_kw)
    assert [str(e) for e in validate(tj, rt)] == want
    if want:
        with pytest.raises(InvalidError):
            compile(tj, rt)


# -- golden plans --------------------------------------------------------------------------------

GOLDEN_CASES = [
    pytest.param("mpi-distributed", "default", {}, id="mpi-distributed default"),
    pytest.param(
        "mpi-distributed", "num-nodes-3", {"numNodes": 3}, id="mpi-distributed numNodes=3"
    ),
    pytest.param("deepspeed-distributed", "default", {}, id="deepspeed-distributed default"),
    pytest.param(
        "deepspeed-distributed",
        "num-nodes-4-gpus",
        {
            "numNodes": 4,
            "resourcesPerNode": {"limits": {"nvidia.com/gpu": "2"}},
            "command": ["mpirun", "python", "train.py"],
            "env": [{"name": "EPOCHS", "value": "3"}],
        },
        id="deepspeed-distributed numNodes=4 with 2 GPUs",
    ),
]


@pytest.mark.parametrize(("runtime_name", "case", "trainer"), GOLDEN_CASES)
def test_golden_plan(golden: Any, runtime_name: str, case: str, trainer: dict[str, Any]) -> None:
    tj = trainjob(runtime_name, name="mpi", trainer=trainer or None)
    golden(f"plans/{runtime_name}__{case}.yaml", compile(tj, builtin(runtime_name), KEYS).to_yaml())
