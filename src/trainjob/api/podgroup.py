"""Gang-scheduling PodGroups a Plan may emit: scheduler-plugins' and Volcano's."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from trainjob.api.base import K8sModel
from trainjob.api.core import ObjectMeta, Quantity


class CoschedulingPodGroupSpec(K8sModel):
    min_member: int | None = None
    min_resources: dict[str, Quantity] | None = None
    schedule_timeout_seconds: int | None = None


class CoschedulingPodGroup(K8sModel):
    """``scheduling.x-k8s.io/v1alpha1`` PodGroup (scheduler-plugins coscheduling)."""

    api_version: Literal["scheduling.x-k8s.io/v1alpha1"] = "scheduling.x-k8s.io/v1alpha1"
    kind: Literal["PodGroup"] = "PodGroup"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: CoschedulingPodGroupSpec = Field(default_factory=CoschedulingPodGroupSpec)
    status: dict[str, Any] | None = None


class VolcanoPodGroupSpec(K8sModel):
    min_member: int | None = None
    min_resources: dict[str, Quantity] | None = None
    queue: str | None = None
    priority_class_name: str | None = None
    network_topology: dict[str, Any] | None = None


class VolcanoPodGroup(K8sModel):
    """``scheduling.volcano.sh/v1beta1`` PodGroup."""

    api_version: Literal["scheduling.volcano.sh/v1beta1"] = "scheduling.volcano.sh/v1beta1"
    kind: Literal["PodGroup"] = "PodGroup"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: VolcanoPodGroupSpec = Field(default_factory=VolcanoPodGroupSpec)
    status: dict[str, Any] | None = None
