"""Upstream's own Kubeflow SDK (``kubeflow==0.5.0`` from PyPI, in a venv of its own made by
``hack/kubeflow-sdk-venv.sh`` and cached) as a client of trainjob's controller on the whole
cluster: train with a CustomTrainer and a BuiltinTrainer, get, list, wait, delete
(``kubeflow_sdk_driver.py``), and the statuses upstream's SDK computes from what really ran.

The TrainJob upstream's SDK makes for a CustomTrainer is the one trainjob's SDK makes for the same
call, but for trainjob's exit hook in the shipped script (docs/sdk.md).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.cluster import kit
from tests.cluster.kubeflow_sdk_driver import train_fn
from tests.integration.controller_harness import wait_for
from trainjob import CustomTrainer, KubernetesBackendConfig, TrainerClient
from trainjob.client import function
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.cluster.conftest import Cluster

pytestmark = pytest.mark.usefixtures("controller")
REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).resolve().parent / "kubeflow_sdk_driver.py"


@pytest.fixture(scope="module")
def kubeflow_python() -> str:
    res = subprocess.run(
        ["bash", str(REPO / "hack" / "kubeflow-sdk-venv.sh")],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        pytest.fail(f"hack/kubeflow-sdk-venv.sh failed:\n{res.stderr}", pytrace=False)
    return res.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def public_configmap(cluster: Cluster) -> None:
    """What the manifests install for upstream's SDK (manifests/controller/public)."""
    public = REPO / "manifests" / "controller" / "public"
    docs = [
        d
        for p in sorted(public.glob("*.yaml"))
        if p.name != "kustomization.yaml"
        for d in kit.yaml_docs(p)
    ]
    for doc in sorted(docs, key=lambda d: d["kind"] != "Namespace"):  # the namespace first
        if doc["kind"] != "Namespace":
            doc["metadata"]["namespace"] = "kubeflow-system"  # kustomization.yaml's namespace
        cluster.kube.apply(doc, field_manager="trainjob-tests")


def run_driver(python: str, cluster: Cluster, ns: str, out: Path) -> dict[str, Any]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "PYTHONPATH", "VIRTUAL_ENV")
    }
    res = subprocess.run(
        [python, str(DRIVER), str(cluster.kubeconfig), ns, str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert res.returncode == 0, f"kubeflow SDK driver failed:\n{res.stdout}\n{res.stderr}"
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def test_upstreams_sdk_drives_trainjobs_controller_through_every_call(
    cluster: Cluster, ns: str, kubeflow_python: str, public_configmap: None, tmp_path: Path
) -> None:
    got = run_driver(kubeflow_python, cluster, ns, tmp_path / "out.json")
    # the public ConfigMap is there: no "unable to read 'kubeflow_trainer_version'" warning
    assert got["warnings_at_start"] == [], got["warnings_at_start"]
    assert {"torch-distributed", "torchtune-llama3.2-1b", "mpi-distributed"} <= set(got["runtimes"])
    assert got["torch_runtime"]["num_nodes"] == 1

    custom = got["custom"]
    assert got["custom_created"]["status"] in ("Created", "Running")
    running = got["custom_running"]
    assert running["status"] == "Running"
    assert running["num_nodes"] == 2
    assert [s[:2] for s in running["steps"]] == [["node-0", "Running"], ["node-1", "Running"]]
    complete = got["custom_complete"]
    assert complete["status"] == "Complete"
    assert [s[:2] for s in complete["steps"]] == [["node-0", "Succeeded"], ["node-1", "Succeeded"]]

    builtin = got["builtin_complete"]
    assert builtin["status"] == "Complete"
    assert builtin["runtime"] == "torchtune-llama3.2-1b"
    steps = {s[0]: s[1] for s in builtin["steps"]}
    assert steps == {
        "dataset-initializer": "Succeeded",
        "model-initializer": "Succeeded",
        "node-0": "Succeeded",
    }

    assert got["listed"] == sorted([[custom, "Complete"], [got["builtin"], "Complete"]])
    assert got["listed_after_delete"] == []
    assert got["get_deleted"].startswith("RuntimeError: "), got["get_deleted"]
    assert wait_for(
        lambda: kit.pods(cluster.kube, custom, ns) == [], timeout=60, what="pods collected"
    )
    assert got["warnings"] == [], got["warnings"]


def test_upstreams_sdk_makes_the_trainjob_trainjobs_sdk_makes(
    cluster: Cluster, ns: str, kubeflow_python: str, public_configmap: None, tmp_path: Path
) -> None:
    """One CustomTrainer call through each SDK: the TrainJobs are equal but the exit hook."""
    script = f"""
import json, sys
sys.path.insert(0, {str(DRIVER.parent)!r})
from kubeflow_sdk_driver import train_fn
from kubeflow.trainer import CustomTrainer, KubernetesBackendConfig, TrainerClient
c = TrainerClient(backend_config=KubernetesBackendConfig(config_file={str(cluster.kubeconfig)!r}, namespace={ns!r}))
name = c.train(runtime=c.get_runtime("torch-distributed"),
               trainer=CustomTrainer(func=train_fn, func_args={{"lr": 0.05}}, num_nodes=2,
                                     resources_per_node={{"cpu": 2}}, env={{"A": "1"}}))
print(name)
"""
    env = {
        k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "PYTHONPATH", "VIRTUAL_ENV")
    }
    res = subprocess.run(
        [kubeflow_python, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert res.returncode == 0, res.stderr
    upstream = cluster.kube.get(r.TRAINJOBS, res.stdout.strip().splitlines()[-1], ns)

    ours_client = TrainerClient(
        backend_config=KubernetesBackendConfig(config_file=str(cluster.kubeconfig), namespace=ns)
    )
    name = ours_client.train(
        runtime=ours_client.get_runtime("torch-distributed"),
        trainer=CustomTrainer(
            func=train_fn,
            func_args={"lr": 0.05},
            num_nodes=2,
            resources_per_node={"cpu": 2},
            env={"A": "1"},
        ),
    )
    ours = cluster.kube.get(r.TRAINJOBS, name, ns)
    theirs = copy.deepcopy(upstream["spec"])
    ours = {"spec": copy.deepcopy(ours["spec"])}
    # the command: the same function and call, shipped the two ways docs/sdk.md describes
    # (trainjob quotes the script rather than an unquoted heredoc, and adds the exit hook)
    our_command = ours["spec"]["trainer"].pop("command")
    their_command = theirs["trainer"].pop("command")
    assert theirs == ours["spec"]
    for command in (our_command, their_command):
        script = command[-1].replace("'\"'\"'", "'")  # trainjob's shell quoting of a quote
        assert "def train_fn(lr: float = 0.1, epochs: int = 1)" in script
        assert "train_fn(**{'lr': 0.05})" in script, script
    assert function._SETTLE in our_command[-1] and function._SETTLE not in their_command[-1]
