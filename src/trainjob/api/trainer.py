"""``trainer.kubeflow.org/v1alpha1``: TrainJob, TrainingRuntime, ClusterTrainingRuntime.

The shape is upstream v2.3. The v2.0/v2.1 fields named by KEP-2170 (``labels``, ``annotations``,
``podSpecOverrides``, ``podTemplateOverrides``, ``torch.numProcPerNode``, ``torch.elasticPolicy``)
are accepted too; :mod:`trainjob.api.legacy` translates them into the current shape.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from trainjob.api import constants as c
from trainjob.api.base import ApiModel, K8sModel
from trainjob.api.jobset import JobSetSpec
from trainjob.api.k8s_types import (
    Condition,
    Container,
    EnvVar,
    Int32,
    Int64,
    LocalObjectReference,
    ObjectMeta,
    ResourceRequirements,
    Toleration,
    Volume,
    VolumeMount,
)

# ---------------------------------------------------------------------------------------------
# TrainJob


class RuntimeRef(ApiModel):
    name: str
    api_group: str | None = c.GROUP
    kind: str | None = c.CLUSTER_TRAINING_RUNTIME_KIND


class DatasetInitializer(ApiModel):
    storage_uri: str | None = None
    env: list[EnvVar] | None = None
    secret_ref: LocalObjectReference | None = None


class ModelInitializer(DatasetInitializer):
    pass


class Initializer(ApiModel):
    dataset: DatasetInitializer | None = None
    model: ModelInitializer | None = None


class Trainer(ApiModel):
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[EnvVar] | None = None
    num_nodes: Int32 | None = None
    resources_per_node: ResourceRequirements | None = None
    # v2.2+: an integer. v2.0/v2.1 also took "auto", "cpu" or "gpu".
    num_proc_per_node: int | str | None = None
    # KEP-2903: elastic PyTorch; narrows the runtime's ``mlPolicy.torch.elasticPolicy``.
    elastic_policy: ElasticPolicy | None = None


class ContainerPatch(K8sModel):
    name: str
    env: list[EnvVar] | None = None
    volume_mounts: list[VolumeMount] | None = None
    security_context: dict[str, Any] | None = None


class PodSpecPatch(K8sModel):
    service_account_name: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    tolerations: list[Toleration] | None = None
    volumes: list[Volume] | None = None
    init_containers: list[ContainerPatch] | None = None
    containers: list[ContainerPatch] | None = None
    scheduling_gates: list[dict[str, Any]] | None = None
    image_pull_secrets: list[LocalObjectReference] | None = None
    security_context: dict[str, Any] | None = None
    termination_grace_period_seconds: Int64 | None = None


class PodTemplatePatch(K8sModel):
    metadata: ObjectMeta | None = None
    spec: PodSpecPatch | None = None


class JobSpecPatch(K8sModel):
    template: PodTemplatePatch | None = None


class JobTemplatePatch(K8sModel):
    metadata: ObjectMeta | None = None
    spec: JobSpecPatch | None = None


class ReplicatedJobPatch(K8sModel):
    name: str
    template: JobTemplatePatch | None = None


class JobSetSpecPatch(K8sModel):
    replicated_jobs: list[ReplicatedJobPatch] | None = None


class JobSetTemplatePatch(K8sModel):
    metadata: ObjectMeta | None = None
    spec: JobSetSpecPatch | None = None


class TrainingRuntimeSpecPatch(ApiModel):
    template: JobSetTemplatePatch | None = None


class RuntimePatch(ApiModel):
    manager: str
    time: str | None = None
    training_runtime_spec: TrainingRuntimeSpecPatch | None = None


class TargetJob(ApiModel):
    name: str


class ContainerOverride(K8sModel):
    name: str
    env: list[EnvVar] | None = None
    volume_mounts: list[VolumeMount] | None = None


class PodSpecOverride(K8sModel):
    """v2.0 ``podSpecOverrides`` item (translated into a RuntimePatch)."""

    target_jobs: list[TargetJob]
    service_account_name: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    tolerations: list[Toleration] | None = None
    volumes: list[Volume] | None = None
    init_containers: list[ContainerOverride] | None = None
    containers: list[ContainerOverride] | None = None
    scheduling_gates: list[dict[str, Any]] | None = None
    image_pull_secrets: list[LocalObjectReference] | None = None


class PodTemplateOverride(K8sModel):
    """v2.1 ``podTemplateOverrides`` item (translated into a RuntimePatch)."""

    target_jobs: list[TargetJob]
    metadata: ObjectMeta | None = None
    spec: PodSpecPatch | None = None


class TrainJobSpec(ApiModel):
    runtime_ref: RuntimeRef
    initializer: Initializer | None = None
    trainer: Trainer | None = None
    runtime_patches: list[RuntimePatch] | None = None
    suspend: bool | None = False
    active_deadline_seconds: Int64 | None = None
    # KEP-2899 as amended by kubeflow/trainer#3824: seconds a finished TrainJob is kept
    # (mutable); the runtime's spec.runPolicy.ttlSecondsAfterFinished when unset.
    ttl_seconds_after_finished: Int32 | None = None
    managed_by: str | None = c.MANAGED_BY_TRAINER
    # v2.0/v2.1 fields, accepted and translated (see trainjob.api.legacy).
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    pod_spec_overrides: list[PodSpecOverride] | None = None
    pod_template_overrides: list[PodTemplateOverride] | None = None


class JobStatus(ApiModel):
    name: str
    ready: Int32 | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    active: Int32 | None = None
    suspended: Int32 | None = None


class Metric(ApiModel):
    name: str
    value: str


class TrainerStatus(ApiModel):
    progress_percentage: Int32 | None = None
    estimated_remaining_seconds: Int32 | None = None
    metrics: list[Metric] | None = None
    last_updated_time: str | None = None


class TrainJobStatus(K8sModel):
    conditions: list[Condition] | None = None
    jobs_status: list[JobStatus] | None = None
    trainer_status: TrainerStatus | None = None
    # KEP-2899 (#3824): when the job's pods were first started (again after a resume), when it
    # finished (Complete or Failed); RFC 3339.
    start_time: str | None = None
    completion_time: str | None = None


class TrainJob(ApiModel):
    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = c.API_VERSION  # type: ignore[assignment]
    kind: Literal["TrainJob"] = "TrainJob"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: TrainJobSpec
    status: TrainJobStatus | None = None


# ---------------------------------------------------------------------------------------------
# Runtimes


class ElasticPolicy(K8sModel):
    """KEP-2903 elasticPolicy: the node range of torchrun's rendezvous, metrics for an HPA."""

    # maxRestarts (v2.0/v2.1) is torchrun's restart budget; metrics are autoscaling/v2 MetricSpecs.

    max_restarts: Int32 | None = None
    min_nodes: Int32 | None = None
    max_nodes: Int32 | None = None
    metrics: list[dict[str, Any]] | None = None


class EnvInjectionTarget(ApiModel):
    job_name: str
    container_names: list[str]


class EnvInjection(ApiModel):
    targets: list[EnvInjectionTarget] | None = None


class TorchMLPolicySource(ApiModel):
    env_injection: EnvInjection | None = None
    # v2.0/v2.1 only.
    num_proc_per_node: int | str | None = None
    elastic_policy: ElasticPolicy | None = None


class MPIMLPolicySource(ApiModel):
    num_proc_per_node: Int32 | None = 1
    mpi_implementation: str | None = c.MPI_IMPL_OPENMPI
    ssh_auth_mount_path: str | None = "/root/.ssh"
    run_launcher_as_node: bool | None = False


class EmptyPolicy(ApiModel):
    pass


class FluxMLPolicySource(ApiModel):
    num_proc_per_node: Int32 | None = 1


class MLPolicy(ApiModel):
    num_nodes: Int32 | None = None
    torch: TorchMLPolicySource | None = None
    mpi: MPIMLPolicySource | None = None
    jax: EmptyPolicy | None = None
    xgboost: EmptyPolicy | None = None
    flux: FluxMLPolicySource | None = None


class CoschedulingPodGroupPolicySource(ApiModel):
    schedule_timeout_seconds: Int32 | None = 60


class VolcanoPodGroupPolicySource(ApiModel):
    network_topology: dict[str, Any] | None = None


class PodGroupPolicy(ApiModel):
    coscheduling: CoschedulingPodGroupPolicySource | None = None
    volcano: VolcanoPodGroupPolicySource | None = None


class JobSetTemplateSpec(ApiModel):
    metadata: ObjectMeta | None = None
    spec: JobSetSpec = Field(default_factory=JobSetSpec)


class RunPolicy(ApiModel):
    """KEP-2899 (#3824): defaults for the TrainJobs of a runtime, which a TrainJob overrides."""

    active_deadline_seconds: Int64 | None = None
    ttl_seconds_after_finished: Int32 | None = None


class TrainingRuntimeSpec(ApiModel):
    ml_policy: MLPolicy | None = None
    pod_group_policy: PodGroupPolicy | None = None
    run_policy: RunPolicy | None = None
    template: JobSetTemplateSpec = Field(default_factory=JobSetTemplateSpec)


class TrainingRuntime(ApiModel):
    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = c.API_VERSION  # type: ignore[assignment]
    kind: Literal["TrainingRuntime"] = "TrainingRuntime"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: TrainingRuntimeSpec


class ClusterTrainingRuntime(ApiModel):
    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = c.API_VERSION  # type: ignore[assignment]
    kind: Literal["ClusterTrainingRuntime"] = "ClusterTrainingRuntime"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: TrainingRuntimeSpec


Runtime = TrainingRuntime | ClusterTrainingRuntime

__all__ = [
    "ClusterTrainingRuntime",
    "Container",
    "Runtime",
    "TrainJob",
    "TrainingRuntime",
]
