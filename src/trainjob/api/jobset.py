"""``jobset.x-k8s.io/v1alpha2`` JobSet: the object a Plan hands to the engine that runs it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from trainjob.api.base import K8sModel
from trainjob.api.k8s_types import Condition, Int32, JobTemplateSpec, ObjectMeta

GROUP = "jobset.x-k8s.io"
VERSION = "v1alpha2"
API_VERSION = f"{GROUP}/{VERSION}"


class DependsOn(K8sModel):
    name: str
    status: Literal["Ready", "Complete"]


class ReplicatedJob(K8sModel):
    name: str
    group_name: str | None = None
    template: JobTemplateSpec = Field(default_factory=JobTemplateSpec)
    replicas: Int32 | None = None
    depends_on: list[DependsOn] | None = None


class Network(K8sModel):
    enable_dns_hostnames: bool | None = Field(default=None, alias="enableDNSHostnames")
    subdomain: str | None = None
    publish_not_ready_addresses: bool | None = None


class SuccessPolicy(K8sModel):
    operator: Literal["All", "Any"] = "All"
    target_replicated_jobs: list[str] | None = None


class FailurePolicy(K8sModel):
    max_restarts: Int32 | None = None
    restart_strategy: str | None = None
    rules: list[dict[str, Any]] | None = None


class JobSetSpec(K8sModel):
    replicated_jobs: list[ReplicatedJob] | None = None
    network: Network | None = None
    success_policy: SuccessPolicy | None = None
    failure_policy: FailurePolicy | None = None
    startup_policy: dict[str, Any] | None = None
    suspend: bool | None = None
    coordinator: dict[str, Any] | None = None
    managed_by: str | None = None
    ttl_seconds_after_finished: Int32 | None = None
    volume_claim_policies: list[dict[str, Any]] | None = None


class ReplicatedJobStatus(K8sModel):
    name: str
    ready: Int32 = 0
    succeeded: Int32 = 0
    failed: Int32 = 0
    active: Int32 = 0
    suspended: Int32 = 0


class JobSetStatus(K8sModel):
    conditions: list[Condition] | None = None
    restarts: Int32 | None = None
    replicated_jobs_status: list[ReplicatedJobStatus] | None = None
    terminal_state: str | None = None


class JobSet(K8sModel):
    api_version: Literal["jobset.x-k8s.io/v1alpha2"] = API_VERSION  # type: ignore[assignment]
    kind: Literal["JobSet"] = "JobSet"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: JobSetSpec = Field(default_factory=JobSetSpec)
    status: JobSetStatus | None = None
