"""trainjob's controller image against the test apiserver, run as the Deployment runs it.

As manifests/controller/base/deployment.yaml: user 65532, a read-only root filesystem, every
capability dropped, no privilege escalation, /tmp in memory; on the host network so it reaches the
apiserver on loopback. It must serve /healthz and /readyz, win its Lease, and reconcile a
TrainJob into a JobSet. Skipped, saying why, where podman cannot run containers.
"""

from __future__ import annotations

import base64
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests import containers
from tests.integration.controller_harness import (
    builtin_runtime,
    http_get,
    serving_ports,
    trainjob,
    wait_for,
)

from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.integration.control_plane import ControlPlane

REPO = Path(__file__).resolve().parents[2]
pytest_plugins = ["tests.integration.controller_fixtures"]


def deployment_security() -> tuple[str, dict[str, Any]]:
    """(runAsUser:runAsGroup, container securityContext) of the shipped Deployment."""
    dep = yaml.safe_load((REPO / "manifests/controller/base/deployment.yaml").read_text())
    pod = dep["spec"]["template"]["spec"]
    user = f"{pod['securityContext']['runAsUser']}:{pod['securityContext']['runAsGroup']}"
    return user, pod["containers"][0]["securityContext"]


@pytest.fixture(scope="module")
def controller_image() -> str:
    return containers.image("controller")


@pytest.fixture
def running(
    controller_image: str, control_plane: ControlPlane, tmp_path: Path
) -> Iterator[tuple[int, str]]:
    """The controller image running (health port, container name); its log on failure."""
    user, sc = deployment_security()
    assert sc["readOnlyRootFilesystem"] is True and sc["capabilities"]["drop"] == ["ALL"]
    ca = base64.b64encode(control_plane.ca_file.read_bytes()).decode()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "t", "cluster": {"server": control_plane.server,
                                                        "certificate-authority-data": ca}}],
                "users": [{"name": "t", "user": {"token": control_plane.token}}],
                "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
                "current-context": "t",
            }
        )
    )  # fmt: skip
    kubeconfig.chmod(0o644)
    tmp_path.chmod(0o755)
    # On the host network every server binds port 0 on loopback (a port picked here could be
    # taken before the controller binds it; the status server's default 10443 by another run on
    # this machine): the health port is read back from the controller's log.
    test_id = secrets.token_hex(4)
    name = f"trainjob-controller-test-{test_id}"
    args = [
        "podman", "run", "--detach", "--name", name, "--network", "host",
        "--user", user, "--read-only", "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges", "--tmpfs", "/tmp:size=16m",
        "-v", f"{kubeconfig}:/etc/trainjob/kubeconfig:ro",
        controller_image,
        "controller", "--kubeconfig", "/etc/trainjob/kubeconfig", "--bind-host", "127.0.0.1",
        "--health-port", "0", "--metrics-port", "0",
        "--status-server-host", "127.0.0.1", "--status-server-port", "0",
        "--leader-elect", "--leader-election-namespace", "default",
        "--leader-election-id", f"trainjob-image-test-{test_id}",
    ]  # fmt: skip
    subprocess.run(args, check=True, capture_output=True, text=True, timeout=120)
    try:

        def health_port() -> int:
            log = containers.podman("logs", name, check=False)
            return serving_ports(log.stdout + log.stderr).get("health", 0)

        yield wait_for(health_port, timeout=120, what="the health server's port in the log"), name
    finally:
        log = containers.podman("logs", name, check=False)
        containers.podman("rm", "--force", "--time", "5", name, check=False)
        print(f"controller image log:\n{(log.stdout + log.stderr)[-6000:]}")


def test_the_image_runs_the_controller_as_the_deployment_does(controller_image: str) -> None:
    cfg = containers.image_config(controller_image)
    user, _ = deployment_security()
    assert cfg["User"] == user, "the image's user is the Deployment's runAsUser"
    assert cfg["Entrypoint"] == ["trainjob"] and cfg["Cmd"] == ["controller"]
    dep = yaml.safe_load((REPO / "manifests/controller/base/deployment.yaml").read_text())
    ports = {p["containerPort"] for p in dep["spec"]["template"]["spec"]["containers"][0]["ports"]}
    exposed = cfg.get("ExposedPorts") or {}
    assert isinstance(exposed, dict)
    assert set(exposed) == {f"{p}/tcp" for p in ports}


def test_the_controller_image_serves_healthz_and_reconciles_a_trainjob(
    running: tuple[int, str], kube: Client, namespace: str
) -> None:
    health, name = running
    wait_for(lambda: http_get(health, "/healthz")[0] == 200, timeout=120, what="/healthz")
    wait_for(lambda: http_get(health, "/readyz")[0] == 200, timeout=60, what="/readyz")
    kube.apply(builtin_runtime("torch-distributed"), field_manager="trainjob-tests")
    tj = trainjob("from-image", namespace, trainer={"numNodes": 2, "command": ["torchrun", "t.py"]})
    kube.create(r.TRAINJOBS, tj, namespace)
    js = wait_for(
        lambda: kube.get_or_none(r.JOBSETS, "from-image", namespace),
        timeout=120,
        what="the JobSet the controller image creates",
    )
    owner = js["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("TrainJob", "from-image", True)
    rjob = js["spec"]["replicatedJobs"][0]
    assert rjob["template"]["spec"]["parallelism"] == 2
    state = containers.podman("inspect", "--format", "{{.State.Running}}", name).stdout.strip()
    assert state == "true", "it keeps running on its read-only root filesystem"
    time.sleep(0.1)
