"""The deployment manifests, checked without a cluster and without helm (rendered by helm and
checked by the apiserver: ``tests/integration/test_helm_chart.py``).

* kustomize (``kubectl kustomize``, skipped when kubectl is absent) renders the base and both
  overlays into YAML that parses, with every namespaced object in ``trainjob-system``;
* the RBAC of the kustomize base and of the Helm chart are exactly ``trainjob.controller.rbac``
  (which ``tests/integration/test_rbac.py`` proves sufficient by running the controller with it);
* the Deployment is hardened (non-root, read-only root filesystem, no privilege escalation,
  limits, probes on the controller's probe paths) and its arguments are ones ``trainjob
  controller`` accepts;
* the webhook configurations are the ones the controller would register (names, paths, rules);
* the Helm templates parse once their template actions are blanked, and the chart's copies of
  the CRDs and runtimes are the repository's.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

from trainjob.cli import _register, app
from trainjob.controller import rbac
from trainjob.controller.webhooks.serving import configurations

REPO = Path(__file__).resolve().parents[3]
CONTROLLER = REPO / "manifests" / "controller"
CHART = REPO / "manifests" / "helm" / "trainjob"
Obj = dict[str, Any]
PUBLIC = "kubeflow-trainer-public"
CLUSTER_SCOPED = {
    "Namespace",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "ClusterTrainingRuntime",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
}


@cache
def kustomize(path: str) -> tuple[Obj, ...]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (with its built-in kustomize) is not on PATH")
    out = subprocess.run(
        [kubectl, "kustomize", str(CONTROLLER / path)], check=True, capture_output=True, text=True
    ).stdout
    return tuple(d for d in yaml.safe_load_all(out) if d)


def one(docs: tuple[Obj, ...], kind: str) -> Obj:
    (doc,) = [d for d in docs if d["kind"] == kind]
    return doc


@pytest.mark.parametrize(
    ("overlay", "kinds"),
    [
        pytest.param(
            "base",
            {"CustomResourceDefinition": 4, "Deployment": 1, "ClusterTrainingRuntime": 0},
            id="the base is the controller without runtimes",
        ),
        pytest.param(
            "overlays/standalone",
            {"CustomResourceDefinition": 4, "Deployment": 1, "ClusterTrainingRuntime": 8},
            id="standalone adds the built-in runtimes",
        ),
        pytest.param(
            "overlays/cert-manager",
            {"Certificate": 1, "Issuer": 1, "ClusterTrainingRuntime": 8},
            id="cert-manager adds an Issuer and a Certificate",
        ),
    ],
)
def test_kustomize_renders(overlay: str, kinds: dict[str, int]) -> None:
    docs = kustomize(overlay)
    for kind, count in kinds.items():
        if kind == "ClusterTrainingRuntime":
            count = len(sorted((REPO / "manifests" / "runtimes").glob("*.yaml"))) if count else 0
        assert sum(d["kind"] == kind for d in docs) == count, kind
    for d in docs:
        if d["kind"] not in CLUSTER_SCOPED and d["metadata"]["name"] != PUBLIC:
            assert d["metadata"]["namespace"] == "trainjob-system", d["metadata"]["name"]


@pytest.mark.parametrize("overlay", ["overlays/standalone", "overlays/cert-manager", "public"])
def test_upstreams_public_configmap_is_installed_where_upstreams_sdk_reads_it(overlay: str) -> None:
    # kubeflow 0.5's KubernetesBackend.verify_backend: ConfigMap kubeflow-trainer-public in
    # KUBEFLOW_SYSTEM_NAMESPACE (default kubeflow-system), key kubeflow_trainer_version; it warns
    # on every TrainerClient without it. Readable by anyone signed in, as upstream's Role grants.
    docs = kustomize(overlay)
    public = {d["kind"]: d for d in docs if d["metadata"]["name"] in (PUBLIC, "kubeflow-system")}
    assert public["ConfigMap"]["metadata"]["namespace"] == "kubeflow-system"
    assert public["ConfigMap"]["data"]["kubeflow_trainer_version"] == "v2.3.0"
    assert public["Namespace"]["metadata"]["name"] == "kubeflow-system"
    assert public["Role"]["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [PUBLIC],
            "verbs": ["get", "list", "watch"],
        }
    ]
    assert public["RoleBinding"]["subjects"] == [
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:authenticated"}
    ]


def test_the_runtime_kustomization_lists_every_builtin_runtime() -> None:
    listed = yaml.safe_load((REPO / "manifests" / "runtimes" / "Kustomization").read_text())
    files = sorted(p.name for p in (REPO / "manifests" / "runtimes").glob("*.yaml"))
    assert sorted(listed["resources"]) == files, (
        "add the new runtime to manifests/runtimes/Kustomization (and copy it into "
        "manifests/helm/trainjob/files/runtimes)"
    )


def test_builtin_runtimes_skip_the_runtime_webhooks() -> None:
    for d in kustomize("overlays/standalone"):
        if d["kind"] == "ClusterTrainingRuntime":
            assert d["metadata"]["labels"]["trainer.kubeflow.org/webhook-validation"] == "disabled"


def test_kustomize_rbac_is_exactly_the_controllers() -> None:
    docs = kustomize("base")
    assert one(docs, "ClusterRole")["rules"] == rbac.cluster_role()["rules"]
    assert one(docs, "Role")["rules"] == rbac.role()["rules"]
    for kind, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        binding = one(docs, kind)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role_kind,
            "name": "trainjob-controller",
        }
        assert binding["subjects"] == [
            {
                "kind": "ServiceAccount",
                "name": "trainjob-controller",
                "namespace": "trainjob-system",
            }
        ]
    assert one(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == (
        "trainjob-controller"
    )


def test_rbac_grants_no_wildcards() -> None:
    for rule in (*rbac.CLUSTER_RULES, *rbac.NAMESPACE_RULES):
        assert "*" not in rule.verbs and "*" not in rule.resources and "*" not in rule.groups
        assert rule.why


@pytest.mark.parametrize("overlay", ["base", "overlays/cert-manager"])
def test_the_deployment_is_hardened(overlay: str) -> None:
    pod = one(kustomize(overlay), "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (ctr,) = pod["containers"]
    sc = ctr["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert set(ctr["resources"]["limits"]) == {"cpu", "memory"}
    assert ctr["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert ctr["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {m["mountPath"] for m in ctr["volumeMounts"]} >= {"/tmp"}


def controller_command() -> Any:
    """The click command behind ``trainjob controller`` (typer builds it)."""
    _register()
    group: Any = typer.main.get_command(app)
    return group.commands["controller"]


@pytest.mark.parametrize("overlay", ["base", "overlays/cert-manager"])
def test_the_deployment_args_are_accepted_by_trainjob_controller(overlay: str) -> None:
    (ctr,) = one(kustomize(overlay), "Deployment")["spec"]["template"]["spec"]["containers"]
    args = ctr["args"]
    assert args[0] == "controller"
    ctx = controller_command().make_context("controller", list(args[1:]))
    assert ctx.params["leader_elect"] is True
    ports = {p["name"]: p["containerPort"] for p in ctr["ports"]}
    assert ctx.params["webhook_port"] == ports["webhook"]
    assert ctx.params["metrics_port"] == ports["metrics"]
    assert ctx.params["health_port"] == ports["health"]
    if overlay == "base":
        assert ctx.params["cert_management"] == "secret"
    else:
        assert ctx.params["cert_dir"] == "/etc/trainjob/webhook-certs"


def test_the_webhooks_are_the_ones_the_controller_serves() -> None:
    docs = kustomize("base")
    mutating, validating = configurations(
        b"", service={"name": "trainjob-controller", "namespace": "trainjob-system"}
    )
    for want, got in ((mutating, one(docs, "MutatingWebhookConfiguration")),
                      (validating, one(docs, "ValidatingWebhookConfiguration"))):  # fmt: skip
        for hook in want["webhooks"]:
            hook["clientConfig"].pop("caBundle")
        assert got["webhooks"] == want["webhooks"]
    service = one(docs, "Service")
    assert {p["name"]: p["port"] for p in service["spec"]["ports"]}["webhook"] == 443


# -- Helm, without helm ----------------------------------------------------------------------------

_ACTION_LINE = re.compile(r"^\s*\{\{-?.*-?\}\}\s*$")
_ACTION = re.compile(r"\{\{-?.*?-?\}\}")


def blank(template: str) -> str:
    """A template with its actions blanked: lines that are only an action go, inline ones
    become a placeholder, so the static YAML around them can be parsed."""
    lines = [ln for ln in template.splitlines() if not _ACTION_LINE.match(ln)]
    return "\n".join(_ACTION.sub("PLACEHOLDER", ln) for ln in lines)


def test_chart_metadata_and_values_parse() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "trainjob"
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["webhooks"]["certManagement"] in ("controller", "cert-manager")
    assert values["image"]["repository"]


@pytest.mark.parametrize(
    "template",
    sorted(p.name for p in (CHART / "templates").glob("*.yaml")),
)
def test_helm_templates_parse_once_actions_are_blanked(template: str) -> None:
    docs = [d for d in yaml.safe_load_all(blank((CHART / "templates" / template).read_text())) if d]
    if template == "runtimes.yaml":
        assert docs == []  # all of it is actions over files/runtimes
        return
    assert docs and all(isinstance(d, dict) and d.get("kind") for d in docs)


def test_helm_rbac_is_exactly_the_controllers() -> None:
    docs = list(yaml.safe_load_all(blank((CHART / "templates" / "rbac.yaml").read_text())))
    by_kind = {d["kind"]: d for d in docs}
    assert by_kind["ClusterRole"]["rules"] == rbac.cluster_role()["rules"]
    # The certificate Secret's name is webhooks.secretName (tests/integration/test_helm_chart.py
    # renders it with helm).
    want = rbac.role()["rules"]
    for rule in want:
        if rule["resources"] == ["secrets"]:
            rule["resourceNames"] = ["PLACEHOLDER"]
    assert by_kind["Role"]["rules"] == want


def test_helm_webhooks_are_the_ones_the_controller_serves() -> None:
    docs = list(yaml.safe_load_all(blank((CHART / "templates" / "webhooks.yaml").read_text())))
    mutating, validating = configurations(
        b"", service={"name": "trainjob-controller", "namespace": "PLACEHOLDER"}
    )
    for want, got in zip((mutating, validating), docs, strict=True):
        assert got["kind"] == want["kind"] and got["metadata"]["name"] == want["metadata"]["name"]
        for hook in want["webhooks"]:
            hook["clientConfig"].pop("caBundle")
            hook["failurePolicy"] = hook["timeoutSeconds"] = "PLACEHOLDER"
        assert got["webhooks"] == want["webhooks"]


@pytest.mark.parametrize(
    ("chart_dir", "source_dir"),
    [
        pytest.param("crds", "manifests/crds", id="the chart's CRDs are the generated ones"),
        pytest.param(
            "files/runtimes", "manifests/runtimes", id="the chart's runtimes are the built-in ones"
        ),
    ],
)
def test_chart_copies_are_current(chart_dir: str, source_dir: str) -> None:
    want = {p.name: p.read_text() for p in (REPO / source_dir).glob("*.yaml")}
    got = {p.name: p.read_text() for p in (CHART / chart_dir).glob("*.yaml")}
    assert got == want, f"refresh with: cp {source_dir}/*.yaml manifests/helm/trainjob/{chart_dir}/"
