"""What a user wrote reaches the Plan: Kubernetes fields trainjob does not model (today's and
tomorrow's) survive parsing *and* compiling, at the place they were written, in the runtime's
template and in a TrainJob's runtime patch; and counts as large as the API allows compile
without a list per pod.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.unit.helpers import container, node_job, runtime, trainjob
from trainjob.api import constants as c
from trainjob.api.load import parse
from trainjob.api.trainer import ClusterTrainingRuntime
from trainjob.runtime import compile
from trainjob.runtime.info import Endpoints

Obj = dict[str, Any]

FUTURE = {"aFieldOfKubernetes2030": {"nested": [1, None, "x"]}}

# (id, where in the runtime's JobSet spec, the fields written there)
RUNTIME_PLACES: list[tuple[str, tuple[Any, ...], Obj]] = [
    (
        "a container keeps securityContext, probes, lifecycle and a future field",
        ("replicatedJobs", 0, "template", "spec", "template", "spec", "containers", 0),
        {
            "securityContext": {"runAsUser": 1000, "capabilities": {"add": ["IPC_LOCK"]}},
            "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5},
            "startupProbe": {"tcpSocket": {"port": 29500}},
            "lifecycle": {"preStop": {"exec": {"command": ["sleep", "1"]}}},
            "imagePullPolicy": "Always",
            **FUTURE,
        },
    ),
    (
        "an env var, a port, a volume mount and resources keep their untyped fields",
        ("replicatedJobs", 0, "template", "spec", "template", "spec", "containers", 0),
        {
            "env": [
                {"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}, **FUTURE}
            ],
            "ports": [{"containerPort": 8080, "name": "http", **FUTURE}],
            "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm", "mountPropagation": "None"}],
            "resources": {"limits": {"cpu": "1"}, **FUTURE},
        },
    ),
    (
        "a pod spec keeps hostNetwork, runtimeClassName, dnsConfig, spread constraints, volumes",
        ("replicatedJobs", 0, "template", "spec", "template", "spec"),
        {
            "hostNetwork": True,
            "runtimeClassName": "nvidia",
            "dnsConfig": {"options": [{"name": "ndots", "value": "2"}]},
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone"}],
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}],
            **FUTURE,
        },
    ),
    (
        "a Job spec keeps podFailurePolicy and a future field",
        ("replicatedJobs", 0, "template", "spec"),
        {"podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"values": [42]}}]}},
    ),
    (
        "a replicatedJob keeps a future field",
        ("replicatedJobs", 0),
        FUTURE,
    ),
    (
        "a JobSet spec keeps startupPolicy, coordinator, volumeClaimPolicies and a future field",
        (),
        {
            "startupPolicy": {"startupPolicyOrder": "InOrder"},
            "coordinator": {"replicatedJob": "node", "jobIndex": 0, "podIndex": 0},
            "volumeClaimPolicies": [{"templates": [{"metadata": {"name": "ckpt"}}]}],
            "failurePolicy": {"maxRestarts": 3, "rules": [{"action": "FailJobSet"}]},
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            **FUTURE,
        },
    ),
]


def _at(obj: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        obj = obj[part]
    return obj


def _with(rt: ClusterTrainingRuntime, path: tuple[Any, ...], fields: Obj) -> ClusterTrainingRuntime:
    doc = rt.to_dict()
    _at(doc["spec"]["template"]["spec"], path).update(copy.deepcopy(fields))
    out = parse(doc)
    assert isinstance(out, ClusterTrainingRuntime)
    return out


@pytest.mark.parametrize(
    ("path", "fields"),
    [(p, f) for _, p, f in RUNTIME_PLACES],
    ids=[i for i, _, _ in RUNTIME_PLACES],
)
def test_runtime_template_fields_reach_the_jobset(path: tuple[Any, ...], fields: Obj) -> None:
    rt = _with(runtime(replicated_jobs=[node_job(container())]), path, fields)
    plan = compile(trainjob(trainer={"numNodes": 2}), rt)
    got = _at(plan.jobset["spec"], path)
    for key, value in fields.items():
        if isinstance(value, list):  # plugins may append to lists (env, ports): ours come first
            assert got[key][: len(value)] == value, key
        elif isinstance(value, dict) and key == "network":
            assert value.items() <= got[key].items(), key
        else:
            assert got[key] == value, key


def test_runtime_patch_fields_reach_the_jobset() -> None:
    pod_patch = {
        "priorityClassName": "high",
        "containers": [
            {"name": "node", "readinessProbe": {"tcpSocket": {"port": 29500}}, **FUTURE}
        ],
        **FUTURE,
    }
    patch = {
        "manager": "example.com/tool",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": "node", "template": {"spec": {"template": {"spec": pod_patch}}}}
                    ]
                }
            }
        },
    }
    plan = compile(trainjob(runtimePatches=[patch]), runtime())
    pod = plan.jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    node = next(ctr for ctr in pod["containers"] if ctr["name"] == c.CONTAINER_NODE)
    assert pod["priorityClassName"] == "high"
    assert pod["aFieldOfKubernetes2030"] == FUTURE["aFieldOfKubernetes2030"]
    assert node["readinessProbe"] == {"tcpSocket": {"port": 29500}}
    assert node["aFieldOfKubernetes2030"] == FUTURE["aFieldOfKubernetes2030"]


def test_trainer_env_keeps_its_untyped_fields() -> None:
    env = {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
    plan = compile(trainjob(trainer={"env": [env]}), runtime())
    pod = plan.jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert env in pod["containers"][0]["env"]


INT32_MAX = 2**31 - 1


# Compiled in a child process whose address space is capped, so that a regression (a list per
# pod: ~200 GB here) fails this test instead of starving the machine.
_LARGEST = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 31, resource.RLIM_INFINITY))
from tests.unit.helpers import builtin, trainjob
from trainjob.runtime import compile
name, nodes = sys.argv[1], int(sys.argv[2])
plan = compile(trainjob(name, trainer={"numNodes": nodes}), builtin(name))
job = plan.jobset["spec"]["replicatedJobs"][-1]["template"]["spec"]
print(job["parallelism"], job["completions"])
"""


@pytest.mark.parametrize("rt_name", ["torch-distributed", "jax-distributed", "xgboost-distributed"])
def test_the_largest_node_count_compiles_without_a_list_per_pod(rt_name: str) -> None:
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.run(
        [sys.executable, "-c", _LARGEST, rt_name, str(INT32_MAX)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
    )
    assert (proc.returncode, proc.stderr[-2000:]) == (0, "")
    assert proc.stdout.split() == [str(INT32_MAX)] * 2


def test_endpoints_are_made_when_read() -> None:
    eps = Endpoints("job-node-0-", "job", INT32_MAX)
    assert len(eps) == INT32_MAX
    assert (eps[0], eps[-1]) == ("job-node-0-0.job", f"job-node-0-{INT32_MAX - 1}.job")
    assert list(Endpoints("j-n-0-", "j", 3)) == ["j-n-0-0.j", "j-n-0-1.j", "j-n-0-2.j"]
    assert Endpoints("j-n-0-", "j", 5)[1:3] == ["j-n-0-1.j", "j-n-0-2.j"]
    with pytest.raises(IndexError):
        eps[INT32_MAX]
