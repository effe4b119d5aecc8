"""The real node itself: it registers and goes Ready beside the KWOK nodes, its pods really run
(their logs come from the kubelet through kube-apiserver), and two pods find each other through a
headless service and CoreDNS, on the node's own bridge network, while names outside the cluster
do not resolve (nothing is forwarded out of the machine)."""

from __future__ import annotations

from typing import Any

from tests.integration.controller_harness import wait_for
from tests.realnode.conftest import RealCluster
from trainjob.kube import resources as r

BASE_IMAGE = "localhost/trainjob/base:bookworm"
NODES = r.Resource("", "v1", "nodes", "Node", namespaced=False)


def pod(cluster: RealCluster, name: str, ns: str, script: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": spec.pop("labels", {})},
        "spec": {
            "nodeSelector": cluster.node_selector,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": BASE_IMAGE,
                    "imagePullPolicy": "Never",
                    "command": ["python3", "-c", script],
                }
            ],
            **spec,
        },
    }


def finished(cluster: RealCluster, name: str, ns: str) -> dict[str, Any] | None:
    p = cluster.kube.get(r.PODS, name, ns)
    return p if p.get("status", {}).get("phase") in ("Succeeded", "Failed") else None


def test_node_is_ready_with_its_bridge_address(real_cluster: RealCluster) -> None:
    node = real_cluster.kube.get(NODES, real_cluster.node)
    conds = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert conds["Ready"] == "True"
    addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
    assert addresses["InternalIP"] == real_cluster.plane.env["cluster"]["real_node"]["dns"]
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://1.6")
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.36.3"


def test_pod_runs_and_its_log_comes_through_the_apiserver(
    real_cluster: RealCluster, real_ns: str
) -> None:
    script = (
        "import os, pathlib\n"
        "print('hello from', os.uname().nodename)\n"
        "sa = pathlib.Path('/var/run/secrets/kubernetes.io/serviceaccount')\n"
        "print('namespace', (sa / 'namespace').read_text())\n"
        "raise SystemExit(3)\n"
    )
    real_cluster.kube.create(r.PODS, pod(real_cluster, "hello", real_ns, script))
    done = wait_for(lambda: finished(real_cluster, "hello", real_ns), timeout=120, what="pod done")
    state = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert done["status"]["phase"] == "Failed" and state["exitCode"] == 3
    log = "\n".join(real_cluster.kube.logs("hello", real_ns))
    assert "hello from hello" in log
    assert (
        f"namespace {real_ns}" in log
    )  # the projected ServiceAccount volume, mounted by the kubelet


def test_pods_find_each_other_through_a_headless_service(
    real_cluster: RealCluster, real_ns: str
) -> None:
    real_cluster.kube.create(
        r.SERVICES,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "peers", "namespace": real_ns},
            "spec": {
                "clusterIP": "None",
                "selector": {"app": "peers"},
                "ports": [{"name": "p", "port": 8000}],
            },
        },
    )
    server = (
        "import socket\n"
        "s = socket.socket(); s.bind(('', 8000)); s.listen()\n"
        "c, addr = s.accept(); c.sendall(b'hello over the pod network'); c.close()\n"
        "print('served', addr[0])\n"
    )
    client = (
        "import socket, time\n"
        f"name = 'server.peers.{real_ns}.svc.cluster.local'\n"
        "for _ in range(120):\n"
        "    try:\n"
        "        a = socket.gethostbyname(name)\n"
        "        print(a, socket.create_connection((a, 8000), timeout=5).recv(100).decode())\n"
        "        break\n"
        "    except OSError:\n"
        "        time.sleep(0.5)\n"
        "try:\n"
        "    socket.gethostbyname('example.com'); print('outside name resolved')\n"
        "except OSError:\n"
        "    print('outside name: not resolved')\n"
    )
    real_cluster.kube.create(
        r.PODS,
        pod(
            real_cluster,
            "server",
            real_ns,
            server,
            labels={"app": "peers"},
            hostname="server",
            subdomain="peers",
        ),
    )
    real_cluster.kube.create(r.PODS, pod(real_cluster, "client", real_ns, client))
    done = wait_for(lambda: finished(real_cluster, "client", real_ns), timeout=120, what="client")
    server_ip = real_cluster.kube.get(r.PODS, "server", real_ns)["status"]["podIP"]
    log = "\n".join(real_cluster.kube.logs("client", real_ns))
    assert done["status"]["phase"] == "Succeeded", log
    assert f"{server_ip} hello over the pod network" in log
    assert "outside name: not resolved" in log
    wait_for(lambda: finished(real_cluster, "server", real_ns), timeout=60, what="server")
    assert f"served {done['status']['podIP']}" in "\n".join(
        real_cluster.kube.logs("server", real_ns)
    )
