"""The controller install as docs/controller-install.md writes it, by kubectl and helm, on a fresh
cluster each: a kube-apiserver of its own (``hack/testenv up --no-repo-crds``: no trainjob CRDs
yet, as on a cluster that never had trainjob), then the commands of the page's blocks run as
written, from the repository root.

* ``kustomize-install``: the first time, every object is created, the built-in
  ClusterTrainingRuntimes included (a single ``kubectl apply -k`` of the overlay fails there with
  ``no matches for kind "ClusterTrainingRuntime"``, which is why the page has two steps); again,
  nothing fails (the upgrade path); ``crds``: ``trainjob crds`` applies and writes files.
* ``helm-install`` then ``crd-upgrade``: one ``helm install`` (the chart's CRDs first), then the
  CRDs from ``trainjob crds`` over Helm's (``--force-conflicts``) and ``helm upgrade``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def fresh_cluster(tmp: Path) -> Iterator[dict[str, str]]:
    """A kube-apiserver + etcd with no trainjob CRDs; the env whose KUBECONFIG points at it."""
    if os.environ.get("TRAINJOB_SKIP_INTEGRATION") == "1":
        pytest.skip("TRAINJOB_SKIP_INTEGRATION=1")
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH")
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


def run_block(env: dict[str, str], name: str, cwd: Path = REPO) -> list[str]:
    outputs = []
    for line in block(name):
        res = subprocess.run(
            ["bash", "-o", "pipefail", "-c", line],
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=180,
        )
        assert res.returncode == 0, f"{line}\n{res.stdout}{res.stderr}"
        outputs.append(res.stdout)
    return outputs


def names(env: dict[str, str], *what: str) -> list[str]:
    res = kubectl(env, "get", *what, "-o", "json")
    assert res.returncode == 0, res.stderr
    return sorted(i["metadata"]["name"] for i in json.loads(res.stdout)["items"])


TRAINJOB_CRDS = [
    "clustertrainingruntimes.trainer.kubeflow.org",
    "optimizationjobs.trainer.kubeflow.org",
    "trainingruntimes.trainer.kubeflow.org",
    "trainjobs.trainer.kubeflow.org",
]
BUILTIN = sorted(p.stem for p in (REPO / "manifests" / "runtimes").glob("*.yaml"))


def installed(env: dict[str, str]) -> None:
    """The CRDs, every built-in runtime, the controller, its budget and webhooks are there."""
    assert [n for n in names(env, "crd") if n.endswith(".trainer.kubeflow.org")] == TRAINJOB_CRDS
    assert names(env, "clustertrainingruntimes") == BUILTIN
    assert names(env, "-n", "trainjob-system", "deployments") == ["trainjob-controller"]
    assert names(env, "-n", "trainjob-system", "poddisruptionbudgets") == ["trainjob-controller"]
    hooks = kubectl(env, "get", "validatingwebhookconfigurations", "-o", "yaml").stdout
    assert "validator.trainjob.trainer.kubeflow.org" in hooks
    assert "validator.optimizationjob.trainer.kubeflow.org" in hooks


def test_the_documented_kustomize_install_works_the_first_time(tmp_path: Path) -> None:
    with fresh_cluster(tmp_path) as env:
        assert not [n for n in names(env, "crd") if n.endswith(".trainer.kubeflow.org")]
        run_block(env, "kustomize-install")
        installed(env)
        # Again (the upgrade path): every object is unchanged or configured, none fails.
        again = "".join(run_block(env, "kustomize-install"))
        assert "error" not in again.lower()
        # The CRDs of the installed package, with no repository at hand.
        work = tmp_path / "work"
        work.mkdir()
        applied, wrote = run_block(env, "crds", cwd=work)
        assert sorted(applied.splitlines()) == [
            f"customresourcedefinition.apiextensions.k8s.io/{n} serverside-applied"
            for n in TRAINJOB_CRDS
        ]
        assert sorted(p.name for p in (work / "crds").iterdir()) == [
            f"trainer.kubeflow.org_{n.split('.')[0]}.yaml" for n in TRAINJOB_CRDS
        ]
        assert "wrote crds/" in wrote


def test_the_documented_helm_install_and_crd_upgrade_work_the_first_time(tmp_path: Path) -> None:
    from tests.integration.test_helm_chart import tool

    helm = tool("helm")
    with fresh_cluster(tmp_path) as env:
        env["PATH"] = os.path.dirname(helm) + os.pathsep + env["PATH"]
        env["HELM_CONFIG_HOME"] = env["HELM_CACHE_HOME"] = str(tmp_path / "helm")
        env["HELM_DATA_HOME"] = str(tmp_path / "helm")
        (out,) = run_block(env, "helm-install")
        assert "STATUS: deployed" in out
        installed(env)
        applied, upgraded = run_block(env, "crd-upgrade")
        assert applied.count("serverside-applied") == len(TRAINJOB_CRDS)
        assert "has been upgraded" in upgraded
        assert json.loads(
            kubectl(
                env, "-n", "trainjob-system", "get", "secret", "-l", "owner=helm", "-o", "json"
            ).stdout
        )["items"], "helm keeps its release in a Secret"
