"""One TrainJob on a real apiserver, two front ends: the CLI (``--backend kubernetes``) and the SDK's
kubernetes backend read and change it the same way, through the one Kubernetes executor.

No JobSet controller or kubelet runs in this control plane, so the test plays them: it creates the
pods a JobSet would, replaces them as a JobSet restart does, records a kubelet's event and writes
the Complete condition trainjob's controller would copy from the JobSet. A kubelet cannot run
here: pod logs come from a stand-in for its log endpoint behind the real apiserver
(tests/integration/kubelet_logs.py), so following a log across a restart goes through the
apiserver's own log API and proxy, from both front ends, as on the local backend
(tests/e2e/test_front_ends.py).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.front_ends import Cli, FrontEnd, Sdk
from tests.integration import kubelet_logs
from tests.integration.kubelet_logs import Kubelet

from trainjob import KubernetesBackendConfig, TrainerClient
from trainjob.core import times
from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.integration.conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration


def trainjob(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1}},
    }


def start_pod(kube: Client, ns: str, job: str, attempt: int, node: str | None = None) -> str:
    """The pod of node 0 in restart ``attempt``, Running (as JobSet and a kubelet would make it);
    on ``node`` when given (the scheduler's binding)."""
    name = f"{job}-node-0-0-{attempt}abcd"
    kube.create(
        r.PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "labels": {
                    "jobset.sigs.k8s.io/jobset-name": job,
                    "jobset.sigs.k8s.io/replicatedjob-name": "node",
                    "jobset.sigs.k8s.io/job-index": "0",
                    "jobset.sigs.k8s.io/restart-attempt": str(attempt),
                    "batch.kubernetes.io/job-completion-index": "0",
                },
            },
            "spec": {
                "containers": [{"name": "node", "image": "pytorch/pytorch"}],
                **({"nodeName": node} if node else {}),
            },
        },
        ns,
    )
    kube.patch_status(r.PODS, name, ns, {"phase": "Running", "startTime": times.now()})
    return name


def event(kube: Client, ns: str, pod: str, reason: str) -> None:
    kube.create(
        r.CORE_EVENTS,
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{pod}.{reason.lower()}"},
            "involvedObject": {"kind": "Pod", "name": pod, "namespace": ns},
            "reason": reason,
            "message": f"{reason} container node",
            "type": "Normal",
            "firstTimestamp": times.now(),
            "lastTimestamp": times.now(),
        },
        ns,
    )


def complete(kube: Client, ns: str, job: str, pod: str) -> None:
    kube.patch_status(r.PODS, pod, ns, {"phase": "Succeeded"})
    done = {
        "type": "Complete",
        "status": "True",
        "reason": "AllJobsCompleted",
        "message": "jobset completed successfully",
        "lastTransitionTime": times.now(),
    }
    kube.patch_status(r.TRAINJOBS, job, ns, {"conditions": [done]})


@pytest.fixture(params=["cli", "sdk"])
def front(
    request: pytest.FixtureRequest, control_plane: ControlPlane, namespace: str, kube: Client
) -> FrontEnd:
    if request.param == "cli":
        env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TRAINJOB_BACKEND")}
        env["TRAINJOB_HOME"] = str(Path(control_plane.kubeconfig).parent / "fe-home")
        options = ["--backend", "kubernetes", "--kubeconfig", str(control_plane.kubeconfig)]
        return Cli(env, options, namespace)
    cfg = KubernetesBackendConfig(config_file=str(control_plane.kubeconfig), namespace=namespace)
    return Sdk(TrainerClient(backend_config=cfg))


def test_status_events_watch_and_delete_read_the_same_from_both_front_ends(
    front: FrontEnd, kube: Client, namespace: str, torch_runtime: str
) -> None:
    kube.create(r.TRAINJOBS, trainjob("fe"), namespace)
    assert front.status("fe") == "Created"  # no pod yet
    first = start_pod(kube, namespace, "fe", 0)
    assert front.status("fe") == "Running"

    def restart_then_complete() -> None:
        """A JobSet restart (the pod replaced), then success."""
        time.sleep(2)
        kube.delete(r.PODS, first, namespace)
        second = start_pod(kube, namespace, "fe", 1)
        event(kube, namespace, second, "Started")
        time.sleep(2)
        complete(kube, namespace, "fe", second)

    released = threading.Event()

    def drive() -> None:
        released.wait(60)
        restart_then_complete()

    driver = threading.Thread(target=drive)
    driver.start()
    try:
        seen = front.watch("fe", released.set)
    finally:
        released.set()
        driver.join(timeout=60)
    assert seen[0].startswith("Running") and seen[-1].startswith("Complete"), seen
    assert all(a != b for a, b in itertools.pairwise(seen)), seen
    assert front.status("fe") == "Complete"
    assert "Started" in front.reasons("fe")  # the kubelet's event about the job's pod
    assert front.exists("fe")
    front.delete("fe")
    assert not front.exists("fe")


@pytest.fixture
def kubelet(kube: Client) -> Iterator[tuple[Kubelet, str]]:
    """A stand-in kubelet's log endpoint and the Node it serves (tests/integration/kubelet_logs)."""
    node = f"fake-kubelet-{os.getpid()}-{time.monotonic_ns()}"
    with kubelet_logs.serving() as (fake, port):
        kubelet_logs.register_node(kube, node, port)
        try:
            yield fake, node
        finally:
            kube.delete(kubelet_logs.NODES, node)


def test_logs_follow_the_pod_that_takes_over_after_a_restart_from_both_front_ends(
    front: FrontEnd,
    kube: Client,
    namespace: str,
    torch_runtime: str,
    kubelet: tuple[Kubelet, str],
) -> None:
    fake, node = kubelet
    kube.create(r.TRAINJOBS, trainjob("fl"), namespace)
    first = start_pod(kube, namespace, "fl", 0, node)
    fake.log(namespace, first, "node").write("attempt 0")

    def restart_then_complete() -> None:
        """Once the first line came: a JobSet restart (the pod replaced, its container ends),
        then the new pod's line and success."""
        kube.delete(r.PODS, first, namespace)
        second = start_pod(kube, namespace, "fl", 1, node)
        log = fake.log(namespace, second, "node")
        log.write("attempt 1")
        fake.log(namespace, first, "node").end()
        time.sleep(1)
        complete(kube, namespace, "fl", second)
        log.end()

    driver = threading.Thread(target=restart_then_complete)
    try:
        lines = front.follow("fl", driver.start)
    finally:
        if driver.is_alive():
            driver.join(timeout=60)
    assert lines == ["attempt 0", "attempt 1"]  # one step, two pods, through the apiserver
    assert any(p.startswith("/containerLogs/") and "follow=true" in p for p in fake.requests)
