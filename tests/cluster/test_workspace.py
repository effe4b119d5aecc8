"""Workspaces on the whole cluster: ``run --workdir`` stores the archive in a ConfigMap owned by
the TrainJob, the pods the JobSet controller makes have the init step and env the plan says,
and deleting the TrainJob collects the ConfigMap (the garbage collector, really); with
``--workdir-uri`` the archive goes to an S3-compatible server (moto's) and no ConfigMap is made;
the SDK's ``Workspace`` option does the same as the CLI. KWOK runs no containers, so what the
init container does is pinned by the unit and local tests; here, what the cluster holds."""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from tests.cluster import kit
from tests.integration.controller_harness import wait_for
from trainjob import CustomTrainer, KubernetesBackendConfig, TrainerClient, Workspace
from trainjob.kube import resources as r
from trainjob.workspace import names

if TYPE_CHECKING:
    from tests.cluster.conftest import Cluster

pytestmark = pytest.mark.usefixtures("controller")
KEY, SECRET = "ws-key", "ws-secret-value"


def project(root: Path) -> Path:
    (root / "mylib").mkdir(parents=True)
    (root / "mylib" / "__init__.py").write_text("GREETING = 'hi'\n")
    (root / "train.py").write_text("import mylib\nprint(mylib.GREETING)\n")
    return root


def cli(cluster: Cluster, ns: str, *args: str, env: dict[str, str] | None = None) -> Any:
    base = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TRAINJOB_BACKEND")}
    base["TRAINJOB_HOME"] = str(cluster.logs / "cli-home")
    return subprocess.run(
        [sys.executable, "-m", "trainjob.cli", "--backend", "kubernetes", "--kubeconfig",
         str(cluster.kubeconfig), *args, "-n", ns],
        capture_output=True, text=True, timeout=180, env={**base, **(env or {})}, check=False,
    )  # fmt: skip


def job_file(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    tj = kit.trainjob(name, pods={"trainjob-testenv/outcome": "Running"})
    tj["spec"].setdefault("trainer", {})["command"] = ["python", "train.py"]
    path.write_text(yaml.safe_dump(tj))
    return path


def node_pods(cluster: Cluster, name: str, ns: str) -> list[dict[str, Any]]:
    return [
        p
        for p in kit.pods(cluster.kube, name, ns)
        if (p["metadata"].get("labels") or {}).get("jobset.sigs.k8s.io/replicatedjob-name")
        == "node"
    ]


def check_pods(cluster: Cluster, name: str, ns: str, digest: str, *, configmap: bool) -> None:
    pods = wait_for(lambda: len(node_pods(cluster, name, ns)) == 2 and node_pods(cluster, name, ns),
                    timeout=120, what=f"{name}'s 2 node pods")  # fmt: skip
    for pod in pods:
        spec = pod["spec"]
        init = spec["initContainers"][0]
        assert init["name"] == names.INIT_CONTAINER and init["command"][-1] == digest
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert "emptyDir" in volumes[names.VOLUME]
        if configmap:
            assert volumes[names.ARCHIVE_VOLUME]["configMap"]["name"] == f"{name}-workspace"
        else:
            assert names.ARCHIVE_VOLUME not in volumes
            assert init["command"][3].startswith("s3://code/jobs/")
        [node] = [c for c in spec["containers"] if c["name"] == "node"]
        env = {e["name"]: e.get("value") for e in node.get("env") or ()}
        assert env["PYTHONPATH"] == names.MOUNT_PATH and node["workingDir"] == names.MOUNT_PATH
        assert {"name": names.VOLUME, "mountPath": names.MOUNT_PATH, "readOnly": True} in node[
            "volumeMounts"
        ]


def test_the_trainjobs_configmap_holds_the_archive_and_goes_with_the_trainjob(
    cluster: Cluster, ns: str, tmp_path: Path
) -> None:
    src = project(tmp_path / "proj")
    done = cli(cluster, ns, "run", "-f", str(job_file(tmp_path, "ws-cm")), "--workdir", str(src))
    assert done.returncode == 0, done.stderr
    tj = kit.get_trainjob(cluster.kube, "ws-cm", ns)
    digest = tj["metadata"]["annotations"][names.DIGEST]
    assert tj["metadata"]["annotations"][names.SOURCE] == str(src.resolve())
    cm = cluster.kube.get(r.CONFIGMAPS, "ws-cm-workspace", ns)
    raw = gzip.decompress(base64.b64decode(cm["binaryData"][names.ARCHIVE_KEY]))
    assert "sha256:" + hashlib.sha256(raw).hexdigest() == digest
    [owner] = cm["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "TrainJob",
        "ws-cm",
        tj["metadata"]["uid"],
    )
    check_pods(cluster, "ws-cm", ns, digest, configmap=True)
    described = cli(cluster, ns, "describe", "job", "ws-cm").stdout
    assert f"Workspace:  {digest} ({src.resolve()})" in described

    assert cli(cluster, ns, "delete", "ws-cm").returncode == 0
    wait_for(lambda: cluster.kube.get_or_none(r.CONFIGMAPS, "ws-cm-workspace", ns) is None,
             timeout=120, what="the garbage collector to delete the workspace ConfigMap")  # fmt: skip


@pytest.fixture(scope="module")
def s3_server() -> Iterator[tuple[str, Any]]:
    pytest.importorskip("moto.server")
    from tests.s3server import moto_s3

    with moto_s3(KEY, SECRET) as (endpoint, client):
        client.create_bucket(Bucket="code")
        yield endpoint, client


def test_with_an_s3_uri_the_archive_goes_to_the_bucket_and_no_configmap_is_made(
    cluster: Cluster, ns: str, tmp_path: Path, s3_server: tuple[str, Any]
) -> None:
    endpoint, client = s3_server
    src = project(tmp_path / "proj")
    env = {"ENDPOINT": endpoint, "ACCESS_KEY_ID": KEY, "SECRET_ACCESS_KEY": SECRET}
    done = cli(cluster, ns, "run", "-f", str(job_file(tmp_path, "ws-s3")), "--workdir", str(src),
               "--workdir-uri", "s3://code/jobs", env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr
    tj = kit.get_trainjob(cluster.kube, "ws-s3", ns)
    digest = tj["metadata"]["annotations"][names.DIGEST]
    uri = tj["metadata"]["annotations"][names.URI]
    assert uri == f"s3://code/jobs/{names.hexdigest(digest)}.tar.gz"
    body = client.get_object(Bucket="code", Key=uri.removeprefix("s3://code/"))["Body"].read()
    assert "sha256:" + hashlib.sha256(gzip.decompress(body)).hexdigest() == digest
    assert cluster.kube.get_or_none(r.CONFIGMAPS, "ws-s3-workspace", ns) is None
    check_pods(cluster, "ws-s3", ns, digest, configmap=False)


def test_the_sdks_workspace_option_stores_the_same_configmap(
    cluster: Cluster, ns: str, tmp_path: Path
) -> None:
    src = project(tmp_path / "proj")

    def train() -> None:
        import mylib  # type: ignore[import-not-found]

        print(mylib.GREETING)

    client = TrainerClient(
        backend_config=KubernetesBackendConfig(config_file=str(cluster.kubeconfig), namespace=ns)
    )
    name = client.train(
        runtime="torch-distributed",
        trainer=CustomTrainer(func=train, num_nodes=2),
        options=[Workspace(str(src))],
    )
    tj = kit.get_trainjob(cluster.kube, name, ns)
    cm = cluster.kube.get(r.CONFIGMAPS, f"{name}-workspace", ns)
    assert (
        cm["metadata"]["annotations"][names.DIGEST] == tj["metadata"]["annotations"][names.DIGEST]
    )
    assert cm["metadata"]["ownerReferences"][0]["uid"] == tj["metadata"]["uid"]
