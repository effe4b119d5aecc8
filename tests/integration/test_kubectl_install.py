"""The kustomize install as docs/controller-install.md writes it, by kubectl, on a fresh cluster.

A kube-apiserver of its own (``hack/testenv up --no-repo-crds``: no trainjob CRDs yet, as on a
cluster that never had trainjob), then the commands of the page's ``kustomize-install`` block run
as written, from the repository root: the first time, every object is created, the built-in
ClusterTrainingRuntimes included (a single ``kubectl apply -k`` of the overlay fails there with
``no matches for kind "ClusterTrainingRuntime"``, which is why the page has two steps). Running
them again changes nothing (the upgrade path); ``trainjob crds | kubectl apply`` is accepted too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "controller-install.md"


def block(name: str) -> list[str]:
    """The command lines of the ``sh`` block after ``<!-- test: NAME -->`` on the page."""
    text = PAGE.read_text()
    m = re.search(rf"<!-- test: {name} -->\n```sh\n(.*?)```", text, re.S)
    assert m, f"{PAGE.name} has no '<!-- test: {name} -->' sh block"
    return [ln for ln in m.group(1).splitlines() if ln.strip() and not ln.startswith("#")]


@pytest.fixture(scope="module")
def fresh_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A kube-apiserver + etcd with no trainjob CRDs; the env whose KUBECONFIG points at it."""
    if os.environ.get("TRAINJOB_SKIP_INTEGRATION") == "1":
        pytest.skip("TRAINJOB_SKIP_INTEGRATION=1")
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    tmp = tmp_path_factory.mktemp("fresh")
    state, kubeconfig = tmp / "cp", tmp / "kubeconfig"
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    subprocess.run(["bash", str(REPO / "hack" / "build-control-plane.sh")], check=True, env=env)
    up = subprocess.run(
        [
            str(REPO / "hack" / "testenv"),
            "up",
            "--no-build",
            "--no-repo-crds",
            "--state-dir",
            str(state),
            "--kubeconfig",
            str(kubeconfig),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )
    assert up.returncode == 0, up.stdout + up.stderr
    env["KUBECONFIG"] = str(kubeconfig)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    try:
        yield env
    finally:
        subprocess.run(
            [str(REPO / "hack" / "testenv"), "down", "--state-dir", str(state)],
            capture_output=True,
            env=env,
            check=False,
        )


def kubectl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )


def run_block(env: dict[str, str], name: str) -> list[str]:
    outputs = []
    for line in block(name):
        res = subprocess.run(
            ["bash", "-o", "pipefail", "-c", line],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=180,
        )
        assert res.returncode == 0, f"{line}\n{res.stdout}{res.stderr}"
        outputs.append(res.stdout)
    return outputs


def names(env: dict[str, str], *what: str) -> list[str]:
    res = kubectl(env, "get", *what, "-o", "json")
    assert res.returncode == 0, res.stderr
    return sorted(i["metadata"]["name"] for i in json.loads(res.stdout)["items"])


def test_the_documented_kustomize_install_works_the_first_time(
    fresh_cluster: dict[str, str],
) -> None:
    env = fresh_cluster
    assert not [n for n in names(env, "crd") if n.endswith(".trainer.kubeflow.org")]
    run_block(env, "kustomize-install")
    assert [n for n in names(env, "crd") if n.endswith(".trainer.kubeflow.org")] == [
        "clustertrainingruntimes.trainer.kubeflow.org",
        "trainingruntimes.trainer.kubeflow.org",
        "trainjobs.trainer.kubeflow.org",
    ]
    builtin = sorted(p.stem for p in (REPO / "manifests" / "runtimes").glob("*.yaml"))
    assert names(env, "clustertrainingruntimes") == builtin
    assert names(env, "-n", "trainjob-system", "deployments") == ["trainjob-controller"]
    assert names(env, "-n", "trainjob-system", "poddisruptionbudgets") == ["trainjob-controller"]
    assert (
        "validator.trainjob.trainer.kubeflow.org"
        in kubectl(env, "get", "validatingwebhookconfigurations", "-o", "yaml").stdout
    )

    # Again (the upgrade path): every object is unchanged or configured, none fails.
    again = "".join(run_block(env, "kustomize-install"))
    assert "error" not in again.lower()


def test_trainjob_crds_apply_as_an_upgrade(fresh_cluster: dict[str, str]) -> None:
    res = subprocess.run(
        "trainjob crds | kubectl apply --server-side --force-conflicts -f -",
        shell=True,
        capture_output=True,
        text=True,
        env=fresh_cluster,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert sorted(res.stdout.split("\n")[:-1]) == [
        "customresourcedefinition.apiextensions.k8s.io/clustertrainingruntimes.trainer.kubeflow.org serverside-applied",
        "customresourcedefinition.apiextensions.k8s.io/trainingruntimes.trainer.kubeflow.org serverside-applied",
        "customresourcedefinition.apiextensions.k8s.io/trainjobs.trainer.kubeflow.org serverside-applied",
    ]
