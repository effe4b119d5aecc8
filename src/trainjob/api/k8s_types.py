"""The Kubernetes core/v1 and batch/v1 types that TrainJobs and runtimes embed (pydantic models).

Their rules (resource names, quantities, env vars) are :mod:`trainjob.api.container_validation`;
the Kubernetes rules every layer shares (times, conditions) are :mod:`trainjob.core`.

Only the fields trainjob reads are typed; every other field is kept as the user wrote it
(``K8sModel`` allows extras), so a pod template survives a round trip unchanged.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from trainjob.api.base import K8sModel

Quantity = str | int | float


def _in_range(bits: int) -> Any:
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    message = f"must be of type integer with format int{bits}"

    def check(value: int) -> int:
        # The apiserver's range check of ``format: int32|int64`` (kube-openapi
        # IsValueValidAgainstRange): a count past it would also make the compiler build a list
        # that size (endpoints, hostfile lines).
        if not low <= value <= high:
            raise PydanticCustomError(f"int{bits}_range", message)
        return value

    return AfterValidator(check)


# Integers as Go declares them (``int32``/``int64``); the CRDs carry the format (crd_rules).
Int32 = Annotated[int, _in_range(32)]
Int64 = Annotated[int, _in_range(64)]


class OwnerReference(K8sModel):
    api_version: str
    kind: str
    name: str
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(K8sModel):
    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: Int64 | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None


class LocalObjectReference(K8sModel):
    name: str | None = None


class EnvVar(K8sModel):
    name: str
    value: str | None = None
    value_from: dict[str, Any] | None = None


class EnvFromSource(K8sModel):
    prefix: str | None = None
    config_map_ref: dict[str, Any] | None = None
    secret_ref: dict[str, Any] | None = None


class ContainerPort(K8sModel):
    container_port: Int32
    name: str | None = None
    protocol: str | None = None
    host_port: Int32 | None = None


class VolumeMount(K8sModel):
    name: str
    mount_path: str
    read_only: bool | None = None
    sub_path: str | None = None


class ResourceRequirements(K8sModel):
    limits: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None
    claims: list[dict[str, Any]] | None = None


class Container(K8sModel):
    name: str
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    working_dir: str | None = None
    env: list[EnvVar] | None = None
    env_from: list[EnvFromSource] | None = None
    ports: list[ContainerPort] | None = None
    resources: ResourceRequirements | None = None
    volume_mounts: list[VolumeMount] | None = None


class Volume(K8sModel):
    name: str


class Toleration(K8sModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: Int64 | None = None


class PodSpec(K8sModel):
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] | None = None
    volumes: list[Volume] | None = None
    service_account_name: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    tolerations: list[Toleration] | None = None
    scheduling_gates: list[dict[str, Any]] | None = None
    image_pull_secrets: list[LocalObjectReference] | None = None
    security_context: dict[str, Any] | None = None
    priority_class_name: str | None = None
    restart_policy: str | None = None
    overhead: dict[str, Quantity] | None = None
    termination_grace_period_seconds: Int64 | None = None


class PodTemplateSpec(K8sModel):
    metadata: ObjectMeta | None = None
    spec: PodSpec = Field(default_factory=PodSpec)


class JobSpec(K8sModel):
    parallelism: Int32 | None = None
    completions: Int32 | None = None
    backoff_limit: Int32 | None = None
    completion_mode: str | None = None
    active_deadline_seconds: Int64 | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class JobTemplateSpec(K8sModel):
    metadata: ObjectMeta | None = None
    spec: JobSpec = Field(default_factory=JobSpec)


class Condition(K8sModel):
    """metav1.Condition."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    observed_generation: Int64 | None = None
