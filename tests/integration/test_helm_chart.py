"""The Helm chart and the kustomize overlays, rendered by the real tools (helm and kustomize
built from the Go module proxy by ``hack/build-tools.sh``, cached like the control plane) and
checked by the real apiserver:

* ``helm lint --strict`` passes with either certificate management;
* everything ``helm template --include-crds`` renders is accepted by kube-apiserver (server-side
  apply, dry run), in both certificate modes (cert-manager's own kinds aside: not installed here);
* the chart's RBAC is exactly ``trainjob.controller.rbac``, following ``webhooks.secretName``;
* the chart deploys what the kustomize base deploys, with the same hardened pod;
* standalone kustomize renders every overlay as ``kubectl kustomize`` does.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from trainjob.controller import rbac
from trainjob.kube import Client
from trainjob.kube.errors import ApiError

if TYPE_CHECKING:
    from conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "manifests" / "helm" / "trainjob"
CONTROLLER = REPO / "manifests" / "controller"
Obj = dict[str, Any]
CERT_MANAGER_KINDS = {"Certificate", "Issuer"}


@cache
def tool(name: str) -> str:
    if shutil.which("go") is None:
        pytest.skip("'go' is not on PATH: cannot build helm and kustomize")
    build = REPO / "hack" / "build-tools.sh"
    res = subprocess.run(["bash", str(build), name], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.fail(f"hack/build-tools.sh {name} failed:\n{res.stdout}{res.stderr}", pytrace=False)
    return subprocess.run(
        ["bash", str(build), "--print-path", name], check=True, capture_output=True, text=True
    ).stdout.strip()


def run(*argv: str) -> str:
    res = subprocess.run(list(argv), capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(argv)}:\n{res.stdout}{res.stderr}"
    return res.stdout


def helm_template(namespace: str = "trainjob-system", *sets: str) -> list[Obj]:
    argv = [tool("helm"), "template", "trainjob", str(CHART), "-n", namespace, "--include-crds"]
    for s in sets:
        argv += ["--set", s]
    return [d for d in yaml.safe_load_all(run(*argv)) if d]


def one(docs: list[Obj], kind: str) -> Obj:
    (doc,) = [d for d in docs if d["kind"] == kind]
    return doc


def by_key(docs: list[Obj]) -> dict[tuple[str, str], Obj]:
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


@pytest.mark.parametrize(
    "sets",
    [(), ("webhooks.certManagement=cert-manager",)],
    ids=["certificates by the controller", "certificates by cert-manager"],
)
def test_helm_lint_strict_passes(sets: tuple[str, ...]) -> None:
    argv = [tool("helm"), "lint", "--strict", str(CHART)]
    for s in sets:
        argv += ["--set", s]
    assert "1 chart(s) linted, 0 chart(s) failed" in run(*argv)


@pytest.mark.parametrize(
    "sets",
    [(), ("webhooks.certManagement=cert-manager", "controller.leaderElect=false")],
    ids=["default values", "cert-manager, no leader election"],
)
def test_everything_the_chart_renders_is_accepted_by_the_apiserver(
    control_plane: ControlPlane, kube: Client, namespace: str, sets: tuple[str, ...]
) -> None:
    docs = helm_template(namespace, *sets)
    refused = []
    for doc in docs:
        if doc["kind"] in CERT_MANAGER_KINDS:
            continue
        try:
            kube.apply(doc, field_manager="trainjob-helm-test", dry_run=True)
        except (ApiError, ValueError) as e:
            refused.append(f"{doc['kind']} {doc['metadata']['name']}: {e}")
    assert refused == []
    assert {d["kind"] for d in docs} >= {"Deployment", "ClusterRole", "CustomResourceDefinition"}


@pytest.mark.parametrize("secret", ["trainjob-webhook-cert", "my-cert"])
def test_the_chart_rbac_is_exactly_the_controllers(secret: str) -> None:
    docs = helm_template("trainjob-system", f"webhooks.secretName={secret}")
    assert one(docs, "ClusterRole")["rules"] == rbac.cluster_role()["rules"]
    want = copy.deepcopy(rbac.role()["rules"])
    for rule in want:
        if rule["resources"] == ["secrets"]:
            rule["resourceNames"] = [secret]
    assert one(docs, "Role")["rules"] == want
    args = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--webhook-secret={secret}" in args


def test_the_chart_deploys_what_the_kustomize_base_deploys() -> None:
    chart = by_key(helm_template())
    base = by_key(
        [d for d in yaml.safe_load_all(run(tool("kustomize"), "build", str(CONTROLLER / "base")))]
    )
    # The chart leaves the namespace to `helm install --create-namespace`, and adds runtimes.
    assert set(chart) - {k for k in chart if k[0] == "ClusterTrainingRuntime"} == set(base) - {
        ("Namespace", "trainjob-system")
    }
    pod: Callable[[Obj], Obj] = lambda d: d["spec"]["template"]["spec"]  # noqa: E731
    chart_pod, base_pod = (pod(x[("Deployment", "trainjob-controller")]) for x in (chart, base))
    assert chart_pod["securityContext"] == base_pod["securityContext"]
    for field in ("securityContext", "resources", "livenessProbe", "readinessProbe", "ports"):
        assert chart_pod["containers"][0][field] == base_pod["containers"][0][field], field
    assert sorted(chart_pod["containers"][0]["args"]) == sorted(
        [*base_pod["containers"][0]["args"], "--workers=5", "--log-level=INFO"]
    )


@pytest.mark.parametrize("overlay", ["base", "overlays/standalone", "overlays/cert-manager"])
def test_standalone_kustomize_renders_as_kubectl_kustomize(overlay: str) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH")
    ours = run(tool("kustomize"), "build", str(CONTROLLER / overlay))
    theirs = run(kubectl, "kustomize", str(CONTROLLER / overlay))
    assert [d for d in yaml.safe_load_all(ours) if d] == [
        d for d in yaml.safe_load_all(theirs) if d
    ]
