"""The permissions the controller needs: every API call it makes, and nothing more.

:data:`CLUSTER_RULES` (a ClusterRole) and :data:`NAMESPACE_RULES` (a Role in the controller's own
namespace: its Lease and its webhook certificate Secret) list each resource with the verbs the code
uses, and why; the rules on the kinds a Plan holds come from their plugins' declarations
(:mod:`trainjob.runtime.kinds`), so a plugin with a new kind brings its permissions. The kustomize base and the Helm chart carry exactly these rules
(``tests/unit/deploy/test_manifests.py`` compares them); ``tests/integration/test_rbac.py`` runs the
controller as its ServiceAccount, bound to them, through a whole TrainJob life cycle.

    python -m trainjob.controller.rbac        # print the rules as YAML
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from trainjob.controller.webhooks import serving
from trainjob.runtime import registry


@dataclass(frozen=True)
class Rule:
    groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    why: str
    names: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"apiGroups": list(self.groups), "resources": list(self.resources)}
        if self.names:
            out["resourceNames"] = list(self.names)
        out["verbs"] = list(self.verbs)
        return out


VERB_ORDER = ("get", "list", "watch", "create", "update", "patch", "delete")
OWN_VERBS = {("", "configmaps"): ("get", "create")}
"""What the controller does to a Plan kind beyond its plugin's needs: the runtime snapshot
ConfigMap is its own (created once, read back)."""


def plan_rules() -> tuple[Rule, ...]:
    """One rule per kind a Plan can hold, with the verbs its plugin declares
    (:mod:`trainjob.runtime.kinds`); kinds of one plural and the same verbs share a rule."""
    merged: dict[tuple[str, tuple[str, ...]], tuple[list[str], list[str]]] = {}
    for kind in registry.kinds().values():
        res = kind.resource
        wanted = set(kind.verbs) | set(OWN_VERBS.get((res.group, res.plural), ()))
        verbs = tuple(v for v in VERB_ORDER if v in wanted)
        groups, whys = merged.setdefault((res.plural, verbs), ([], []))
        groups.append(res.group)
        if kind.why not in whys:
            whys.append(kind.why)
    return tuple(
        Rule(tuple(groups), (plural,), verbs, "; ".join(whys))
        for (plural, verbs), (groups, whys) in merged.items()
    )


CLUSTER_RULES = (
    Rule(("trainer.kubeflow.org",), ("trainjobs",), ("list", "watch"), "informer"),
    Rule(("trainer.kubeflow.org",), ("trainjobs/status",), ("patch",), "one status write"),
    Rule(
        ("trainer.kubeflow.org",),
        ("trainjobs",),
        ("create", "patch"),
        "an OptimizationJob's trials: created; early-stopped (annotated, suspended)",
    ),
    Rule(("trainer.kubeflow.org",), ("optimizationjobs",), ("list", "watch"), "informer"),
    Rule(
        ("trainer.kubeflow.org",),
        ("optimizationjobs/status",),
        ("patch",),
        "one status write a pass",
    ),
    Rule(
        ("trainer.kubeflow.org",),
        ("optimizationjobs/finalizers",),
        ("update",),
        "blockOwnerDeletion on its trials (OwnerReferencesPermissionEnforcement)",
    ),
    Rule(
        ("trainer.kubeflow.org",),
        ("trainjobs/finalizers",),
        ("update",),
        "blockOwnerDeletion on what a TrainJob owns (OwnerReferencesPermissionEnforcement)",
    ),
    Rule(
        ("trainer.kubeflow.org",),
        ("trainingruntimes", "clustertrainingruntimes"),
        ("get", "list", "watch"),
        "informers; GET on a cache miss (reconcile, webhook)",
    ),
    *plan_rules(),
    Rule(
        ("scheduling.k8s.io",),
        ("priorityclasses",),
        ("get",),
        "the TrainJob webhook checks a Volcano runtime's PriorityClass exists (upstream's rule)",
    ),
    Rule(
        ("authentication.k8s.io",),
        ("tokenreviews",),
        ("create",),
        "the status server checks a reporting pod's token (its audience names the TrainJob)",
    ),
    Rule(("",), ("pods",), ("get",), "the status server checks the pod is one of the TrainJob's"),
    Rule(("events.k8s.io",), ("events",), ("create", "patch"), "events and their series"),
    Rule(("",), ("events",), ("create", "patch"), "core/v1 events where events.k8s.io is absent"),
    Rule(
        ("admissionregistration.k8s.io",),
        ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"),
        ("get", "update"),
        "the webhook CA bundle (--cert-management secret)",
        (serving.MUTATING, serving.VALIDATING),
    ),
)

NAMESPACE_RULES = (
    Rule(("coordination.k8s.io",), ("leases",), ("get", "create", "update"), "leader election"),
    Rule(
        ("",),
        ("secrets",),
        ("get", "update"),
        "the webhook certificate Secret (created through the cluster rule)",
        ("trainjob-webhook-cert",),
    ),
)


def cluster_role(name: str = "trainjob-controller") -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [r.to_dict() for r in CLUSTER_RULES],
    }


def role(name: str = "trainjob-controller", namespace: str = "trainjob-system") -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace},
        "rules": [r.to_dict() for r in NAMESPACE_RULES],
    }


if __name__ == "__main__":  # pragma: no cover
    print(yaml.safe_dump_all([cluster_role(), role()], sort_keys=False), end="")
