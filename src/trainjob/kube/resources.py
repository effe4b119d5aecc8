"""Resource types the client talks to: group, version, plural, kind, scope, and their URL paths.

A :class:`Resource` is what ``kubectl api-resources`` prints for one type. The constants below are
the types trainjob reads or writes; the client builds every URL from them, so no module spells a
path by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from trainjob.api import constants as c


@dataclass(frozen=True)
class Resource:
    """One API resource type (``jobsets.jobset.x-k8s.io/v1alpha2``, ``configmaps/v1``, ...)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``plural.group`` as Kubernetes error messages name it (``configmaps`` for core)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The URL path of the collection, or of one object (and one of its subresources)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        return base

    def key(self, obj: dict[str, Any]) -> str:
        """``namespace/name`` (or ``name`` for cluster-scoped types) of an object of this type."""
        meta = obj.get("metadata") or {}
        if self.namespaced:
            return f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        return str(meta.get("name", ""))


TRAINJOBS = Resource(c.GROUP, c.VERSION, "trainjobs", c.TRAINJOB_KIND)
TRAINING_RUNTIMES = Resource(c.GROUP, c.VERSION, "trainingruntimes", c.TRAINING_RUNTIME_KIND)
CLUSTER_TRAINING_RUNTIMES = Resource(
    c.GROUP, c.VERSION, "clustertrainingruntimes", c.CLUSTER_TRAINING_RUNTIME_KIND, namespaced=False
)
JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet")
COSCHEDULING_PODGROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
VOLCANO_PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
PODS = Resource("", "v1", "pods", "Pod")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
EVENTS = Resource("events.k8s.io", "v1", "events", "Event")
CORE_EVENTS = Resource("", "v1", "events", "Event")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
PRIORITY_CLASSES = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)
VALIDATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)
MUTATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    namespaced=False,
)
CUSTOM_RESOURCE_DEFINITIONS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)
# What the deployment manifests hold (installers and tests apply them).
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
SERVICES = Resource("", "v1", "services", "Service")
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
POD_DISRUPTION_BUDGETS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLES = Resource(RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False)
CLUSTER_ROLE_BINDINGS = Resource(RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", False)
ROLES = Resource(RBAC, "v1", "roles", "Role")
ROLE_BINDINGS = Resource(RBAC, "v1", "rolebindings", "RoleBinding")

_BY_API_VERSION_KIND: dict[tuple[str, str], Resource] = {
    (r.api_version, r.kind): r
    for r in (
        TRAINJOBS,
        TRAINING_RUNTIMES,
        CLUSTER_TRAINING_RUNTIMES,
        JOBSETS,
        COSCHEDULING_PODGROUPS,
        VOLCANO_PODGROUPS,
        CONFIGMAPS,
        SECRETS,
        PODS,
        NAMESPACES,
        EVENTS,
        LEASES,
        VALIDATING_WEBHOOK_CONFIGURATIONS,
        MUTATING_WEBHOOK_CONFIGURATIONS,
        CUSTOM_RESOURCE_DEFINITIONS,
        SERVICE_ACCOUNTS,
        SERVICES,
        DEPLOYMENTS,
        POD_DISRUPTION_BUDGETS,
        CLUSTER_ROLES,
        CLUSTER_ROLE_BINDINGS,
        ROLES,
        ROLE_BINDINGS,
    )
}


def for_object(obj: dict[str, Any]) -> Resource:
    """The resource type of a manifest, from its ``apiVersion`` and ``kind``."""
    key = (str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    try:
        return _BY_API_VERSION_KIND[key]
    except KeyError:
        raise ValueError(f"unknown resource type {key[0]}, Kind={key[1]}") from None
