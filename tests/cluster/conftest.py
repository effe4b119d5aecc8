"""Fixtures for the end-to-end tests on a whole simulated cluster: ``hack/testenv up --cluster
--kueue --coscheduling`` (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK
fake nodes, the real JobSet controller, Kueue and the scheduler-plugins Coscheduling scheduler,
all built from the Go module proxy) with trainjob's own controller on top.

* ``cluster`` (session): builds what is missing (``hack/build-control-plane.sh cluster``: it
  waits for CI's background build of the same), starts the cluster in a temporary state dir,
  tears it down at the end; ``cluster.kube`` is a client, ``cluster.add_node`` makes a fake node.
* ``controller`` (session): ``trainjob controller`` (webhooks on loopback) against it, with the
  built-in runtimes installed.
* ``ns`` (per test): a fresh namespace, ready for pods (its ``default`` ServiceAccount exists),
  deleted afterwards (the namespace controller really removes it here).

Pods on KWOK nodes do not run containers: KWOK moves them through their phases
(``hack/kwok/pod-stages.yaml``: Running after scheduling, then Succeeded after 1 s, or Failed,
or still Running, as the pod annotation ``trainjob-testenv/outcome`` says). KWOK serves no pod
logs, so log following is pinned by the unit tests of the CLI and SDK, not here.

Environment: ``TRAINJOB_SKIP_INTEGRATION=1`` or ``TRAINJOB_SKIP_CLUSTER=1`` skip these tests;
``TRAINJOB_TESTENV_KEEP=1`` keeps the state dir (every component's log under ``logs/``).
The fast loop: ``TRAINJOB_CLUSTER_STATE=<state dir>`` uses a cluster you started with
``hack/testenv up --cluster [--kueue] [--coscheduling] --state-dir <state dir>`` (and leaves it
running); tests that need a component it lacks (Kueue, coscheduling) are skipped then.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.control_plane import ControlPlane, run_setup
from tests.integration.controller_harness import Controller, start_controller, wait_for
from trainjob.kube import Client
from trainjob.kube import resources as r

REPO = Path(__file__).resolve().parents[2]
HACK = REPO / "hack"
CLUSTER_DIR = Path(__file__).resolve().parent
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
OUTCOME = "trainjob-testenv/outcome"
KUEUE_NAMESPACE_LABEL = "trainjob-testenv/kueue"
Obj = dict[str, Any]
NODES = r.Resource("", "v1", "nodes", "Node", namespaced=False)
JOBS = r.Resource("batch", "v1", "jobs", "Job")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if CLUSTER_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.cluster)


@dataclass
class Cluster:
    """The running cluster: the control plane's REST client and env, a kube client, its nodes."""

    plane: ControlPlane
    kube: Client
    logs: Path

    @property
    def kubeconfig(self) -> Path:
        return self.plane.kubeconfig

    @property
    def nodes(self) -> list[str]:
        return list(self.plane.env["cluster"]["nodes"])

    def add_node(self, name: str, cpu: str = "16", memory: str = "64Gi", gpus: int = 0) -> None:
        """A KWOK fake node (managed by KWOK: it turns Ready and runs pods, as testenv's own)."""
        resources = {"cpu": cpu, "memory": memory, "pods": "110"}
        labels = {"kubernetes.io/hostname": name, "type": "kwok", "trainjob-testenv/pool": "test"}
        if gpus:
            resources["nvidia.com/gpu"] = str(gpus)
        self.kube.create(
            NODES,
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": labels,
                    "annotations": {KWOK_NODE_ANNOTATION: "fake"},
                },
                "status": {"capacity": resources, "allocatable": resources},
            },
        )

        def ready() -> bool:
            node = self.kube.get(NODES, name)
            conds = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions", [])}
            return conds.get("Ready") == "True"

        wait_for(ready, timeout=60, what=f"node {name} Ready")

    def remove_node(self, name: str) -> None:
        self.kube.delete(NODES, name, ignore_not_found=True)

    def require(self, component: str) -> None:
        """Skip unless ``component`` runs (only a cluster of TRAINJOB_CLUSTER_STATE can lack one)."""
        if component not in self.plane.env["cluster"]["components"]:
            pytest.skip(f"the cluster of TRAINJOB_CLUSTER_STATE runs no {component}")

    def component_log(self, name: str) -> str:
        path = self.plane.state_dir / "logs" / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    if (
        os.environ.get("TRAINJOB_SKIP_INTEGRATION") == "1"
        or os.environ.get("TRAINJOB_SKIP_CLUSTER") == "1"
    ):
        pytest.skip("TRAINJOB_SKIP_INTEGRATION=1 or TRAINJOB_SKIP_CLUSTER=1")
    for tool in ("go", "openssl"):
        if shutil.which(tool) is None:
            pytest.skip(f"'{tool}' is not on PATH: cannot build or start the test cluster")
    if os.environ.get("TRAINJOB_CLUSTER_STATE"):
        yield from running_cluster(Path(os.environ["TRAINJOB_CLUSTER_STATE"]))
        return
    state = Path(tempfile.mkdtemp(prefix="trainjob-cluster-"))
    logs = Path(tempfile.mkdtemp(prefix="trainjob-cluster-logs-"))
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["TRAINJOB_TESTENV_DIR"] = str(state / "cp")
    kubeconfig = state / "kubeconfig"
    run_setup(
        ["bash", str(HACK / "build-control-plane.sh"), "cluster"],
        logs / "build.log",
        env,
        "hack/build-control-plane.sh cluster",
    )
    up = [
        str(HACK / "testenv"),
        "up",
        "--cluster",
        "--kueue",
        "--coscheduling",
        "--no-build",
        "--kubeconfig",
        str(kubeconfig),
    ]
    with testenv_up(up, "hack/testenv up --cluster", env, state, logs) as (plane, kube):
        yield Cluster(plane, kube, logs)


@contextlib.contextmanager
def testenv_up(
    up: list[str], what: str, env: dict[str, str], state: Path, logs: Path
) -> Iterator[tuple[ControlPlane, Client]]:
    """``hack/testenv up ...`` (its log in ``logs``), the control plane and a client while the
    block runs, then ``down`` and the state and logs removed (kept with TRAINJOB_TESTENV_KEEP=1);
    the cluster tier's and the real-node tier's one lifecycle."""
    try:
        run_setup(up, logs / "testenv-up.log", env, what)
        plane = control_plane(state / "cp", state / "kubeconfig")
        kube = Client.from_config(str(state / "kubeconfig"))
        try:
            yield plane, kube
        finally:
            kube.close()
    finally:
        down = [str(HACK / "testenv"), "down"]
        keep = os.environ.get("TRAINJOB_TESTENV_KEEP") == "1"
        if keep:
            down.append("--keep")
        subprocess.run(down, env=env, cwd=REPO, capture_output=True, check=False)
        if not keep:
            shutil.rmtree(state, ignore_errors=True)
            shutil.rmtree(logs, ignore_errors=True)


def control_plane(state: Path, kubeconfig: Path) -> ControlPlane:
    info = json.loads((state / "env.json").read_text())
    return ControlPlane(
        state_dir=state,
        kubeconfig=kubeconfig,
        server=info["server"],
        token=info["token"],
        ca_file=Path(info["ca_file"]),
        client_cert=Path(info["client_cert"]),
        client_key=Path(info["client_key"]),
        version=info.get("version") or "",
        env=info,
    )


def running_cluster(state: Path) -> Iterator[Cluster]:
    """A cluster started by hand (TRAINJOB_CLUSTER_STATE), left running afterwards."""
    if not (state / "env.json").exists() or "cluster" not in json.loads(
        (state / "env.json").read_text()
    ):
        pytest.fail(
            f"TRAINJOB_CLUSTER_STATE={state}: no `hack/testenv up --cluster` state there",
            pytrace=False,
        )
    plane = control_plane(state, state / "kubeconfig")
    logs = Path(tempfile.mkdtemp(prefix="trainjob-cluster-logs-"))
    kube = Client.from_config(str(plane.kubeconfig))
    try:
        yield Cluster(plane, kube, logs)
    finally:
        kube.close()
        shutil.rmtree(logs, ignore_errors=True)


def builtin_runtimes() -> list[Obj]:
    out = []
    for path in sorted((REPO / "manifests" / "runtimes").glob("*.yaml")):
        out.append(yaml.safe_load(path.read_text()))
    return out


@pytest.fixture(scope="session")
def controller(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[Controller]:
    """trainjob's controller on the cluster (admission webhooks on loopback), and the built-in
    ClusterTrainingRuntimes."""
    for runtime in builtin_runtimes():
        cluster.kube.apply(runtime, field_manager="trainjob-tests")
    failed_before = request.session.testsfailed
    ctl = start_controller(cluster.plane)
    yield ctl
    code = ctl.stop()
    if code not in (0, None) or request.session.testsfailed > failed_before:
        print(f"controller exited {code}; log {ctl.log_path}:\n{ctl.log()[-6000:]}")


@pytest.fixture
def ns(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace whose ``default`` ServiceAccount exists (kube-controller-manager makes
    it; pods cannot be created before), deleted afterwards."""
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{base or 'test'}-{uuid.uuid4().hex[:6]}"
    labels = {KUEUE_NAMESPACE_LABEL: "true"} if request.node.get_closest_marker("kueue") else {}
    cluster.kube.create(
        r.NAMESPACES,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}},
    )
    wait_for(
        lambda: cluster.kube.get_or_none(r.SERVICE_ACCOUNTS, "default", name),
        timeout=60,
        what=f"ServiceAccount {name}/default",
    )
    yield name
    cluster.kube.delete(r.NAMESPACES, name, ignore_not_found=True)
