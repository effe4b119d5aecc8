"""Fixtures for the real-node tier: ``hack/testenv up --cluster --real-node``, a whole simulated
cluster (as ``tests/cluster``) plus one node whose pods really run: a kubelet over containerd's
CRI, a bridge CNI network of its own, CoreDNS for cluster.local (hack/testenv_realnode.py).

Off by default (CI's time is nearly spent by the rest): ``TRAINJOB_REAL_NODE=1`` runs it, as
root, with containerd installed (``scripts/setup-real-node.sh``) and trainjob's images built in
podman (``hack/build-images.sh``). ``TRAINJOB_TESTENV_KEEP=1`` keeps the state dir and logs;
``TRAINJOB_REAL_NODE_STATE=<state dir>`` uses a real-node cluster you started
(``hack/testenv up --real-node --state-dir <state dir>``) and leaves it running.

* ``real_cluster`` (session): the cluster, its kube client, the node's name and label.
* ``real_ns`` (per test): a fresh namespace whose ``default`` ServiceAccount exists.
* ``real_controller`` (session): trainjob's controller, and the built-in runtimes.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cluster.conftest import Cluster, builtin_runtimes, control_plane, testenv_up
from tests.integration.control_plane import run_setup
from tests.integration.controller_harness import Controller, start_controller, wait_for
from trainjob.kube import Client
from trainjob.kube import resources as r

REPO = Path(__file__).resolve().parents[2]
HACK = REPO / "hack"
REALNODE_DIR = Path(__file__).resolve().parent
POOL_LABEL = "trainjob-testenv/pool"
# the images the tier's pods run, imported from podman into the node's containerd
IMAGES = "controller,initializer,torch-trainer"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if REALNODE_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.realnode)


@dataclass
class RealCluster(Cluster):
    """The cluster, with its real node (``node``; pods reach it with ``node_selector``)."""

    @property
    def node(self) -> str:
        return str(self.plane.env["cluster"]["real_node"]["node"])

    @property
    def node_selector(self) -> dict[str, str]:
        return {POOL_LABEL: str(self.plane.env["cluster"]["real_node"]["pool"])}


def skip_reason() -> str | None:
    if os.environ.get("TRAINJOB_REAL_NODE") != "1":
        return "the real-node tier is off by default: TRAINJOB_REAL_NODE=1 runs it (tests/realnode)"
    if os.geteuid() != 0:
        return "the real node needs root (it makes a bridge, mounts volumes and runs containerd)"
    for tool in ("go", "openssl", "podman", "ip", "/usr/bin/containerd", "/usr/bin/ctr"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not there: scripts/setup-real-node.sh installs what the real node needs"
    return None


@pytest.fixture(scope="session")
def real_cluster() -> Iterator[RealCluster]:
    why = skip_reason()
    if why:
        pytest.skip(why)
    if os.environ.get("TRAINJOB_REAL_NODE_STATE"):
        state = Path(os.environ["TRAINJOB_REAL_NODE_STATE"])
        plane = control_plane(state, state / "kubeconfig")
        if not (plane.env.get("cluster") or {}).get("real_node"):
            pytest.fail(f"TRAINJOB_REAL_NODE_STATE={state}: no real node there", pytrace=False)
        logs = Path(tempfile.mkdtemp(prefix="trainjob-realnode-logs-"))
        kube = Client.from_config(str(plane.kubeconfig))
        try:
            yield RealCluster(plane, kube, logs)
        finally:
            kube.close()
        return
    state = Path(tempfile.mkdtemp(prefix="tj-rn-", dir="/tmp"))
    logs = Path(tempfile.mkdtemp(prefix="trainjob-realnode-logs-"))
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["TRAINJOB_TESTENV_DIR"] = str(state / "cp")
    kubeconfig = state / "kubeconfig"
    run_setup(
        ["bash", str(HACK / "build-control-plane.sh"), "real-node"],
        logs / "build.log",
        env,
        "hack/build-control-plane.sh real-node",
    )
    up = [
        str(HACK / "testenv"),
        "up",
        "--real-node",
        f"--real-node-images={IMAGES}",
        "--nodes=0",  # every pod lands on the real node
        "--gpu-nodes=0",
        "--no-build",
        "--kubeconfig",
        str(kubeconfig),
    ]
    with testenv_up(up, "hack/testenv up --real-node", env, state, logs) as (plane, kube):
        yield RealCluster(plane, kube, logs)


@pytest.fixture
def real_ns(real_cluster: RealCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{base or 'test'}-{uuid.uuid4().hex[:6]}"
    real_cluster.kube.create(
        r.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    wait_for(
        lambda: real_cluster.kube.get_or_none(r.SERVICE_ACCOUNTS, "default", name),
        timeout=60,
        what=f"ServiceAccount {name}/default",
    )
    yield name
    real_cluster.kube.delete(r.NAMESPACES, name, ignore_not_found=True)


@pytest.fixture(scope="session")
def real_controller(real_cluster: RealCluster) -> Iterator[Controller]:
    """trainjob's controller on the cluster (on this machine, webhooks on loopback, as
    ``tests/cluster``; its TrainJob status endpoint on the node's bridge address, where pods
    reach this machine), and the built-in ClusterTrainingRuntimes."""
    for runtime in builtin_runtimes():
        real_cluster.kube.apply(runtime, field_manager="trainjob-tests")
    # the status endpoint where the node's pods reach it: the bridge's address on this machine
    gateway = real_cluster.plane.env["cluster"]["real_node"]["dns"]
    ctl = start_controller(
        real_cluster.plane,
        port_args=lambda port: [
            "--status-server-host",
            gateway,
            "--status-server-port",
            str(port),
            "--status-server-url",
            f"https://{gateway}:{port}",
        ],
    )
    yield ctl
    code = ctl.stop()
    if code not in (0, None):
        print(f"controller exited {code}; log {ctl.log_path}:\n{ctl.log()[-6000:]}")
