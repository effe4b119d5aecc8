"""The Helm chart and the kustomize overlays, rendered by the real tools (helm and kustomize
built from the Go module proxy by ``hack/build-tools.sh``, cached like the control plane) and
checked by the real apiserver:

* ``helm lint --strict`` passes with either certificate management, and refuses a misspelt or
  unknown value (``values.schema.json``) naming it;
* everything ``helm template --include-crds`` renders is accepted by kube-apiserver (server-side
  apply, dry run), in both certificate modes (cert-manager's own kinds aside: not installed here),
  and with the optional parts on: the ServiceMonitor (against prometheus-operator's own CRD, from
  its Go module), ServiceAccount annotations, a PodDisruptionBudget by count or percentage;
* the PodDisruptionBudget selects exactly the controller's pods;
* the chart's RBAC is exactly ``trainjob.controller.rbac``, following ``webhooks.secretName``;
* the chart deploys what the kustomize base deploys, with the same hardened pod;
* standalone kustomize renders every overlay as ``kubectl kustomize`` does.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from trainjob.controller import rbac
from trainjob.kube import Client
from trainjob.kube import resources as r
from trainjob.kube.errors import ApiError

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "manifests" / "helm" / "trainjob"
CONTROLLER = REPO / "manifests" / "controller"
Obj = dict[str, Any]
CERT_MANAGER_KINDS = {"Certificate", "Issuer"}
SERVICE_MONITORS = r.Resource("monitoring.coreos.com", "v1", "servicemonitors", "ServiceMonitor")
PUBLIC = "kubeflow-trainer-public"
PUBLIC_OBJECTS = {PUBLIC, "kubeflow-system"}


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
    ("sets", "refusal"),
    [
        pytest.param(
            ("webhooks.certManagment=cert-manager",),
            "at '/webhooks': additional properties 'certManagment' not allowed",
            id="a misspelt key",
        ),
        pytest.param(
            ("webhooks.certManagement=certmanager",),
            "at '/webhooks/certManagement': value must be one of 'controller', 'cert-manager'",
            id="an unknown certificate management",
        ),
        pytest.param(("replicas=0",), "at '/replicas': minimum: got 0, want 1", id="no replicas"),
        pytest.param(
            ("podDisruptionBudget.maxUnavailable=half",),
            "/podDisruptionBudget/maxUnavailable",
            id="a budget that is neither a count nor a percentage",
        ),
    ],
)
def test_helm_lint_refuses_values_the_schema_does_not_allow(
    sets: tuple[str, ...], refusal: str
) -> None:
    argv = [tool("helm"), "lint", "--strict", str(CHART)]
    for s in sets:
        argv += ["--set", s]
    res = subprocess.run(argv, capture_output=True, text=True)
    assert res.returncode != 0
    assert refusal in res.stdout + res.stderr


PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator@v0.85.0"
SERVICEMONITOR_CRD = "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"


@cache
def servicemonitor_crd() -> Obj:
    """prometheus-operator's ServiceMonitor CRD, from its Go module (4 MB, cached with the
    control plane's modules)."""
    if shutil.which("go") is None:
        pytest.skip("'go' is not on PATH: cannot fetch prometheus-operator's CRD")
    cache_root = Path(
        os.environ.get("TRAINJOB_CACHE") or Path.home() / ".cache" / "trainjob"
    ).expanduser()
    env = {
        **os.environ,
        "GOMODCACHE": str(cache_root / "control-plane" / "go" / "mod"),
        "GOFLAGS": "-modcacherw",
        "GOTOOLCHAIN": "local",
    }
    res = subprocess.run(
        ["go", "mod", "download", "-json", PROMETHEUS_OPERATOR],
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    info = json.loads(res.stdout or "{}")
    if res.returncode != 0 or "Dir" not in info:
        pytest.fail(f"go mod download {PROMETHEUS_OPERATOR}: {res.stdout}{res.stderr}")
    doc: Obj = yaml.safe_load((Path(info["Dir"]) / SERVICEMONITOR_CRD).read_text())
    return doc


@pytest.mark.parametrize(
    "sets",
    [
        (),
        ("webhooks.certManagement=cert-manager", "controller.leaderElect=false"),
        (
            "metrics.serviceMonitor.enabled=true",
            "metrics.serviceMonitor.labels.release=kube-prometheus-stack",
            "metrics.serviceMonitor.scrapeTimeout=10s",
            "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::1:role/x",
            "podDisruptionBudget.minAvailable=50%",
        ),
    ],
    ids=[
        "default values",
        "cert-manager, no leader election",
        "ServiceMonitor, ServiceAccount annotations, a budget by percentage",
    ],
)
def test_everything_the_chart_renders_is_accepted_by_the_apiserver(
    control_plane: ControlPlane, kube: Client, namespace: str, sets: tuple[str, ...]
) -> None:
    if any(s.startswith("metrics.serviceMonitor.enabled=true") for s in sets):
        crd = servicemonitor_crd()
        kube.apply(crd, field_manager="trainjob-helm-test")
        wait_established(kube, crd["metadata"]["name"])
    docs = helm_template(namespace, *sets)
    refused = []
    for doc in docs:
        if doc["kind"] in CERT_MANAGER_KINDS:
            continue
        kind = SERVICE_MONITORS if doc["kind"] == "ServiceMonitor" else None
        try:
            # a namespace the chart makes (kubeflow-system, for upstream's public ConfigMap) is
            # made for real: a dry run of what goes in it needs it, as `helm install` makes it first
            kube.apply(
                doc,
                resource=kind,
                field_manager="trainjob-helm-test",
                dry_run=doc["kind"] != "Namespace",
            )
        except (ApiError, ValueError) as e:
            refused.append(f"{doc['kind']} {doc['metadata']['name']}: {e}")
    assert refused == []
    assert {d["kind"] for d in docs} >= {
        "Deployment",
        "ClusterRole",
        "CustomResourceDefinition",
        "PodDisruptionBudget",
    }


def wait_established(kube: Client, crd: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = kube.get(r.CUSTOM_RESOURCE_DEFINITIONS, crd)
        conditions = (got.get("status") or {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return
        time.sleep(0.2)
    pytest.fail(f"CRD {crd} not Established after {timeout}s")


def test_the_optional_parts_render_as_set() -> None:
    docs = helm_template(
        "ns",
        "metrics.serviceMonitor.enabled=true",
        "metrics.serviceMonitor.labels.release=prom",
        "serviceAccount.annotations.iam\\.gke\\.io/gcp-service-account=sa@p.iam.gserviceaccount.com",
    )
    monitor = one(docs, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prom"
    service = one(docs, "Service")
    assert all(
        service["metadata"]["labels"][k] == v
        for k, v in monitor["spec"]["selector"]["matchLabels"].items()
    )
    assert monitor["spec"]["endpoints"][0]["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert one(docs, "ServiceAccount")["metadata"]["annotations"] == {
        "iam.gke.io/gcp-service-account": "sa@p.iam.gserviceaccount.com"
    }
    # off by default: no ServiceMonitor (its CRD may not exist), no annotations
    plain = helm_template("ns")
    assert [d for d in plain if d["kind"] == "ServiceMonitor"] == []
    assert "annotations" not in one(plain, "ServiceAccount")["metadata"]


@pytest.mark.parametrize(
    ("sets", "want"),
    [
        pytest.param((), {"maxUnavailable": 1}, id="one pod at a time by default"),
        pytest.param(
            ("podDisruptionBudget.minAvailable=1",), {"minAvailable": 1}, id="minAvailable wins"
        ),
    ],
)
def test_the_disruption_budget_covers_exactly_the_controller_pods(
    sets: tuple[str, ...], want: dict[str, int]
) -> None:
    docs = helm_template("trainjob-system", *sets)
    budget = one(docs, "PodDisruptionBudget")
    assert {k: v for k, v in budget["spec"].items() if k != "selector"} == want
    pod_labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    selector = budget["spec"]["selector"]["matchLabels"]
    assert selector == one(docs, "Deployment")["spec"]["selector"]["matchLabels"]
    assert all(pod_labels[k] == v for k, v in selector.items())
    off = helm_template("trainjob-system", "podDisruptionBudget.enabled=false")
    assert [d for d in off if d["kind"] == "PodDisruptionBudget"] == []


@pytest.mark.parametrize("secret", ["trainjob-webhook-cert", "my-cert"])
def test_the_chart_rbac_is_exactly_the_controllers(secret: str) -> None:
    docs = helm_template("trainjob-system", f"webhooks.secretName={secret}")
    assert one(docs, "ClusterRole")["rules"] == rbac.cluster_role()["rules"]
    want = copy.deepcopy(rbac.role()["rules"])
    for rule in want:
        if rule["resources"] == ["secrets"]:
            rule["resourceNames"] = [secret]
    (role,) = [d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] != PUBLIC]
    assert role["rules"] == want
    args = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--webhook-secret={secret}" in args


def test_the_chart_deploys_what_the_kustomize_base_deploys() -> None:
    chart = by_key(helm_template())
    base = by_key(
        [d for d in yaml.safe_load_all(run(tool("kustomize"), "build", str(CONTROLLER / "base")))]
    )
    # The chart leaves the namespace to `helm install --create-namespace`, and adds runtimes and
    # upstream's public ConfigMap (which the overlays add from manifests/controller/public).
    extra = {k for k in chart if k[0] == "ClusterTrainingRuntime" or k[1] in PUBLIC_OBJECTS}
    assert set(chart) - extra == set(base) - {("Namespace", "trainjob-system")}
    public = by_key(
        [
            d
            for d in yaml.safe_load_all(run(tool("kustomize"), "build", str(CONTROLLER / "public")))
            if d
        ]
    )
    assert {k for k in chart if k[1] in PUBLIC_OBJECTS} == set(public)
    assert chart[("ConfigMap", PUBLIC)]["data"] == public[("ConfigMap", PUBLIC)]["data"]
    assert chart[("Role", PUBLIC)]["rules"] == public[("Role", PUBLIC)]["rules"]
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


def _controller_image(docs: list[Obj]) -> str:
    dep = by_key(docs)[("Deployment", "trainjob-controller")]
    image: str = dep["spec"]["template"]["spec"]["containers"][0]["image"]
    return image


def test_the_chart_and_the_overlays_take_the_controller_image_the_install_docs_name() -> None:
    """docker/README.md: push what hack/build-images.sh built, then set the image in values (or
    a kustomize ``images`` entry); by default the chart runs its appVersion's published image."""
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    default = f"{values['image']['repository']}:{chart['appVersion']}"
    assert _controller_image(helm_template()) == default
    pushed = ("image.repository=registry.example.com/trainjob/controller", "image.tag=v0.1.0")
    assert _controller_image(helm_template("trainjob-system", *pushed)) == (
        "registry.example.com/trainjob/controller:v0.1.0"
    )
    base = yaml.safe_load((CONTROLLER / "base" / "deployment.yaml").read_text())
    assert base["spec"]["template"]["spec"]["containers"][0]["image"] == default
    local = [d for d in yaml.safe_load_all(
        run(tool("kustomize"), "build", str(CONTROLLER / "overlays" / "local-image"))) if d]  # fmt: skip
    assert _controller_image(local) == "localhost/trainjob/controller:dev"
    docs = (REPO / "docker" / "README.md").read_text()
    assert "localhost/trainjob/controller:dev" in docs and "--set image.repository=" in docs
