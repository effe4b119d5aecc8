"""Resource types the client talks to: group, version, plural, kind, scope, and their URL paths.

A :class:`~trainjob.core.resources.Resource` is what ``kubectl api-resources`` prints for one type.
The constants here are the types trainjob reads or writes (those a Plan holds are defined in
:mod:`trainjob.core.resources`, which the compiler's kind registry reads too); the client builds
every URL from them, so no module spells a path by hand.
"""

from __future__ import annotations

from typing import Any

from trainjob.api import constants as c
from trainjob.core.resources import CONFIGMAPS as CONFIGMAPS
from trainjob.core.resources import COSCHEDULING_PODGROUPS as COSCHEDULING_PODGROUPS
from trainjob.core.resources import JOBSETS as JOBSETS
from trainjob.core.resources import SECRETS as SECRETS
from trainjob.core.resources import VOLCANO_PODGROUPS as VOLCANO_PODGROUPS
from trainjob.core.resources import Resource as Resource

TRAINJOBS = Resource(c.GROUP, c.VERSION, "trainjobs", c.TRAINJOB_KIND)
OPTIMIZATION_JOBS = Resource(c.GROUP, c.VERSION, "optimizationjobs", c.OPTIMIZATION_JOB_KIND)
TRAINING_RUNTIMES = Resource(c.GROUP, c.VERSION, "trainingruntimes", c.TRAINING_RUNTIME_KIND)
CLUSTER_TRAINING_RUNTIMES = Resource(
    c.GROUP, c.VERSION, "clustertrainingruntimes", c.CLUSTER_TRAINING_RUNTIME_KIND, namespaced=False
)
PODS = Resource("", "v1", "pods", "Pod")
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
TOKEN_REVIEWS = Resource(
    "authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False
)
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
