"""An API resource type and its URL paths: what ``kubectl api-resources`` prints for one type.

Pure data, shared by the Kubernetes client (:mod:`trainjob.kube.resources` names every type trainjob
talks to) and the compiler's registry of Plan kinds (:mod:`trainjob.runtime.kinds`, which may not
import the client): the types a Plan holds are defined here, once, for both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote


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


# The types a Plan can hold (how each is handled: trainjob.runtime.kinds).
JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
COSCHEDULING_PODGROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
VOLCANO_PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
