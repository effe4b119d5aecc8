"""What the CRDs say beyond the models' shape: upstream v2.3 limits, defaults and CEL rules.

The pydantic models (:mod:`trainjob.api.trainer`) give the CRD its structure; this module adds, per
model and field, the OpenAPI keywords upstream's kubebuilder markers produce (``maxLength``,
``x-kubernetes-list-type``, ``default``, ...) and the CEL rules with upstream's messages verbatim.
It is the one place the CEL rule text lives: :mod:`trainjob.api.crd` writes it into
``manifests/crds/``, and a unit test checks that every message here is also raised by the Python
checks in :mod:`trainjob.api.validation` (or a runtime plugin), so the cluster and the local
backend reject the same objects with the same words.

Keys of :data:`SCHEMA` are model classes; inside, ``""`` means the model's own schema and any other
key is a field's wire name (camelCase). Values are merged into the generated schema node (dicts
deeply, everything else replaced).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from trainjob.api import constants as c
from trainjob.api import jobset, k8s_types, optimization, trainer
from trainjob.api import optimization_validation as ov


@dataclass(frozen=True)
class Rule:
    """One ``x-kubernetes-validations`` entry."""

    rule: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"message": self.message, "rule": self.rule}


# --- CEL rules (upstream messages verbatim) ---------------------------------------------------

IMMUTABLE = Rule("self == oldSelf", "field is immutable")
NAME_RFC1035 = Rule(
    "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
    "metadata.name must match RFC 1035 DNS label format",
)
NAME_MAX_63 = Rule(
    "size(self.metadata.name) <= 63", "metadata.name must be no more than 63 characters"
)
MANAGED_BY = Rule(
    f"self in ['{c.MANAGED_BY_TRAINER}', '{c.MANAGED_BY_MULTIKUEUE}']",
    f"ManagedBy must be {c.MANAGED_BY_TRAINER} or {c.MANAGED_BY_MULTIKUEUE} if set",
)
STORAGE_URI = Rule(
    "self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')",
    "storageUri may be empty, or it must be a valid URI (scheme://...)",
)
# trainer.numProcPerNode is an int since v2.2 and was int-or-string ("auto", "cpu", "gpu") before;
# trainjob accepts both, so the v2.2 rule only applies to ints. Words are checked by the Torch
# plugin (the webhook), as in v2.0/v2.1.
NUM_PROC_AT_LEAST_1 = Rule(
    "type(self) != int || self >= 1", "numProcPerNode must be greater than or equal to 1"
)
TORCH_NUM_PROC = Rule(
    "type(self) == int ? self > 0 : self in ['auto', 'cpu', 'gpu']",
    "NumProcPerNode must be equal to auto, cpu, gpu, or int value",
)
MPI_NUM_PROC = Rule("self >= 1", "numProcPerNode must be greater than or equal to 1")
FLUX_NUM_PROC = Rule("self >= 1", "NumProcPerNode in fluxPolicy must be >= 1")
ONE_ML_POLICY = Rule(
    "[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost), has(self.flux)]"
    ".filter(x, x).size() <= 1",
    "Only one of the policy can be configured",
)
ELASTIC_WITHOUT_NUM_NODES = Rule(
    "!(has(self.numNodes) && (has(self.torch) && has(self.torch.elasticPolicy)))",
    "numNodes should not be set if torch.elasticPolicy is configured",
)
ENV_INJECTION_NOT_NODE = Rule(
    f"!self.exists(c, c == '{c.CONTAINER_NODE}')",
    "containerNames must not include the main node container because PET_* envs are always "
    "injected into it",
)
TRAINER_STATUS_UPDATED = Rule(
    "has(self.lastUpdatedTime)", "lastUpdatedTime is required when trainerStatus is present"
)

# OptimizationJob (upstream main after v2.3, optimizationjob_types.go; messages in
# trainjob.api.optimization_validation, which raises them without a cluster).
OPTIMIZATION_SPEC_IMMUTABLE = Rule("self == oldSelf", ov.MESSAGE_IMMUTABLE)
PARALLEL_TRIALS = Rule("self.parallelTrials <= self.numTrials", ov.MESSAGE_PARALLEL)
GRID_CATEGORICAL = Rule(
    "!has(self.searchAlgorithm.grid) || self.parameters.all(p, has(p.searchSpace.categorical))",
    ov.MESSAGE_GRID,
)
MIN_POSITIVE = Rule("double(self.min) > 0.0", ov.MESSAGE_MIN_POSITIVE)
MIN_LESS_THAN_MAX = Rule("double(self.min) < double(self.max)", ov.MESSAGE_MIN_LESS_THAN_MAX)
TEMPLATE_METADATA = Rule("!has(self.name) && !has(self.namespace)", ov.MESSAGE_TEMPLATE_METADATA)


def exactly_one_of(*fields: str, message: str) -> Rule:
    """controller-gen's ``+kubebuilder:validation:ExactlyOneOf`` rule."""
    has = ",".join(f"has(self.{f})" for f in fields)
    return Rule(f"[{has}].filter(x,x==true).size() == 1", message)


ONE_ALGORITHM = exactly_one_of("random", "grid", "tpe", message=ov.MESSAGE_ONE_ALGORITHM)
ONE_SEARCH_SPACE = exactly_one_of(
    "uniform", "logUniform", "categorical", message=ov.MESSAGE_ONE_SEARCH_SPACE
)
ONE_EARLY_STOPPING = exactly_one_of("median", message=ov.MESSAGE_ONE_EARLY_STOPPING)


def cel(*rules: Rule) -> dict[str, Any]:
    return {"x-kubernetes-validations": [r.to_dict() for r in rules]}


def cel_of(*rules: Rule) -> dict[str, dict[str, Any]]:
    """A model's own rules (its ``""`` entry)."""
    return {"": cel(*rules)}


def list_map(*keys: str, max_items: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": list(keys),
    }
    if max_items is not None:
        out["maxItems"] = max_items
    return out


INT32: dict[str, Any] = {"format": "int32"}
INT64: dict[str, Any] = {"format": "int64"}
DATE_TIME: dict[str, Any] = {"format": "date-time"}
ENV = list_map("name", max_items=128)
COMMAND: dict[str, Any] = {
    "maxItems": 128,
    "items": {"maxLength": 1024 * 1024},
    "x-kubernetes-list-type": "atomic",
}


def immutable(**extra: Any) -> dict[str, Any]:
    return {**extra, **cel(IMMUTABLE)}


_INITIALIZER: dict[str, dict[str, Any]] = {
    "storageUri": {"maxLength": 2048, **cel(STORAGE_URI)},
    "env": ENV,
}

# upstream's Double: a decimal number as a string.
DOUBLE: dict[str, Any] = {"minLength": 1, "maxLength": ov.MAX_DOUBLE, "pattern": ov.DOUBLE.pattern}
_RANGE: dict[str, dict[str, Any]] = {"min": DOUBLE, "max": DOUBLE, "type": {"default": "Float"}}
_NAME_64: dict[str, Any] = {"minLength": 1, "maxLength": ov.MAX_NAME}

# --- per-model schema additions ---------------------------------------------------------------

SCHEMA: dict[type[BaseModel], dict[str, dict[str, Any]]] = {
    # TrainJob
    trainer.TrainJob: {
        "": {
            "description": "TrainJob represents configuration of a training job.",
            **cel(NAME_RFC1035, NAME_MAX_63),
        },
        "spec": {"description": "spec of the TrainJob."},
        "status": {"description": "status of TrainJob."},
    },
    trainer.TrainJobSpec: {
        "runtimeRef": immutable(),
        "initializer": immutable(),
        "trainer": immutable(),
        "runtimePatches": list_map("manager", max_items=16),
        "suspend": {"default": False},
        "activeDeadlineSeconds": immutable(format="int64", minimum=1),
        "managedBy": {
            "default": c.MANAGED_BY_TRAINER,
            "maxLength": 253,
            **cel(MANAGED_BY, IMMUTABLE),
        },
    },
    trainer.RuntimeRef: {
        "name": {"minLength": 1, "maxLength": 253},
        "apiGroup": {"default": c.GROUP, "maxLength": 253},
        "kind": {"default": c.CLUSTER_TRAINING_RUNTIME_KIND, "maxLength": 253},
    },
    trainer.DatasetInitializer: _INITIALIZER,
    trainer.ModelInitializer: _INITIALIZER,
    trainer.Trainer: {
        "image": {"maxLength": 500},
        "command": COMMAND,
        "args": COMMAND,
        "env": ENV,
        "numNodes": {**INT32, "minimum": 0},
        "numProcPerNode": cel(NUM_PROC_AT_LEAST_1),
    },
    trainer.RuntimePatch: {
        "manager": immutable(minLength=1, maxLength=253),
        "time": DATE_TIME,
    },
    trainer.JobSetSpecPatch: {"replicatedJobs": list_map("name", max_items=100)},
    trainer.ReplicatedJobPatch: {
        "name": {"minLength": 1, "maxLength": 253, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
    },
    trainer.PodSpecPatch: {
        "serviceAccountName": immutable(maxLength=253),
        "volumes": immutable(**list_map("name", max_items=128)),
        "initContainers": immutable(**list_map("name", max_items=64)),
        "containers": immutable(**list_map("name", max_items=64)),
        "imagePullSecrets": immutable(**list_map("name", max_items=64)),
        "securityContext": immutable(),
        "tolerations": {"maxItems": 128, "x-kubernetes-list-type": "atomic"},
        "schedulingGates": {
            **list_map("name", max_items=16),
            "items": {"properties": {"name": {"type": "string"}}, "required": ["name"]},
        },
        "terminationGracePeriodSeconds": immutable(format="int64", minimum=0),
    },
    trainer.ContainerPatch: {
        "name": {"minLength": 1, "maxLength": 253},
        "env": ENV,
        "volumeMounts": list_map("name", max_items=128),
    },
    trainer.TrainJobStatus: {
        "": {"minProperties": 1},
        "conditions": list_map("type", max_items=8),
        "jobsStatus": list_map("name", max_items=100),
    },
    trainer.JobStatus: {
        "": {"required": ["active", "failed", "name", "ready", "succeeded", "suspended"]},
        "name": {"minLength": 1, "maxLength": 253},
        **{
            n: {**INT32, "minimum": 0}
            for n in ("ready", "succeeded", "failed", "active", "suspended")
        },
    },
    trainer.TrainerStatus: {
        "": cel(TRAINER_STATUS_UPDATED),
        "progressPercentage": {**INT32, "minimum": 0, "maximum": 100},
        "estimatedRemainingSeconds": {**INT32, "minimum": 0},
        "metrics": {"maxItems": 256, "x-kubernetes-list-type": "atomic"},
        "lastUpdatedTime": DATE_TIME,
    },
    trainer.Metric: {
        "name": {"minLength": 1, "maxLength": 64},
        "value": {"minLength": 1, "maxLength": 64},
    },
    # metav1.Condition, as every Kubernetes API embeds it.
    k8s_types.Condition: {
        "": {"required": ["lastTransitionTime", "message", "reason", "status", "type"]},
        "type": {
            "maxLength": 316,
            "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
            r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
        },
        "status": {"enum": ["True", "False", "Unknown"]},
        "reason": {
            "minLength": 1,
            "maxLength": 1024,
            "pattern": r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        },
        "message": {"maxLength": 32768},
        "lastTransitionTime": DATE_TIME,
        "observedGeneration": {**INT64, "minimum": 0},
    },
    k8s_types.LocalObjectReference: {
        "": {"x-kubernetes-map-type": "atomic"},
        "name": {"default": ""},
    },
    # Integer formats of the core/v1 and batch/v1 fields the models type (k8s_types.Int32/Int64), so
    # the apiserver refuses a runtime with `parallelism: 2147483648` as the models do.
    k8s_types.ObjectMeta: {"generation": INT64},
    k8s_types.ContainerPort: {"containerPort": INT32, "hostPort": INT32},
    k8s_types.Toleration: {"tolerationSeconds": INT64},
    k8s_types.PodSpec: {"terminationGracePeriodSeconds": INT64},
    k8s_types.JobSpec: {
        "parallelism": INT32,
        "completions": INT32,
        "backoffLimit": INT32,
        "activeDeadlineSeconds": INT64,
    },
    # Runtimes
    trainer.TrainingRuntime: {
        "": {
            "description": "TrainingRuntime represents a training runtime which can be referenced "
            "as part of `runtimeRef` API in TrainJob. This resource is a namespaced-scoped and "
            "can be referenced by TrainJob that created in the *same* namespace as the "
            "TrainingRuntime."
        },
    },
    trainer.ClusterTrainingRuntime: {
        "": {
            "description": "ClusterTrainingRuntime represents a training runtime which can be "
            "referenced as part of `runtimeRef` API in TrainJob. This resource is a "
            "cluster-scoped and can be referenced by TrainJob that created in *any* namespace."
        },
    },
    trainer.TrainingRuntimeSpec: {"": {"minProperties": 1}},
    trainer.JobSetTemplateSpec: {"": {"minProperties": 1}},
    trainer.MLPolicy: {
        "": cel(ONE_ML_POLICY, ELASTIC_WITHOUT_NUM_NODES),
        "numNodes": INT32,
    },
    trainer.TorchMLPolicySource: {"numProcPerNode": cel(TORCH_NUM_PROC)},
    trainer.ElasticPolicy: {
        "maxRestarts": INT32,
        "minNodes": INT32,
        "maxNodes": INT32,
        "metrics": {"x-kubernetes-list-type": "atomic"},
    },
    trainer.EnvInjection: {"targets": list_map("jobName", max_items=16)},
    trainer.EnvInjectionTarget: {
        "jobName": {"minLength": 1, "maxLength": 253},
        "containerNames": {
            "minItems": 1,
            "maxItems": 8,
            "items": {"maxLength": 63},
            "x-kubernetes-list-type": "set",
            **cel(ENV_INJECTION_NOT_NODE),
        },
    },
    trainer.MPIMLPolicySource: {
        "numProcPerNode": {"default": 1, **INT32, **cel(MPI_NUM_PROC)},
        "mpiImplementation": {"default": c.MPI_IMPL_OPENMPI, "enum": [c.MPI_IMPL_OPENMPI, ""]},
        "sshAuthMountPath": {"default": "/root/.ssh", "maxLength": 4096},
        "runLauncherAsNode": {"default": False},
    },
    trainer.FluxMLPolicySource: {"numProcPerNode": {"default": 1, **INT32, **cel(FLUX_NUM_PROC)}},
    trainer.CoschedulingPodGroupPolicySource: {"scheduleTimeoutSeconds": {"default": 60, **INT32}},
    trainer.VolcanoPodGroupPolicySource: {
        # volcano.sh NetworkTopologySpec
        "networkTopology": {
            "properties": {
                "mode": {"type": "string", "enum": ["hard", "soft"], "default": "hard"},
                "highestTierAllowed": {"type": "integer", "default": 1},
            },
        },
    },
    # sigs.k8s.io/jobset v1alpha2 JobSetSpec (the runtime template): JobSet's own list types,
    # enums and defaults, so a stored runtime looks like upstream's.
    jobset.JobSetSpec: {"replicatedJobs": list_map("name"), "ttlSecondsAfterFinished": INT32},
    jobset.ReplicatedJob: {
        "replicas": {"default": 1, **INT32},
        "groupName": {"default": "default"},
        "dependsOn": list_map("name", max_items=5),
    },
    jobset.FailurePolicy: {
        "maxRestarts": INT32,
        "restartStrategy": {
            "default": "Recreate",
            "enum": ["Recreate", "BlockingRecreate", "InPlaceRestart"],
        },
    },
    jobset.SuccessPolicy: {"": {"required": ["operator"]}},
    # OptimizationJob
    optimization.OptimizationJobSpec: {
        "": cel(OPTIMIZATION_SPEC_IMMUTABLE, PARALLEL_TRIALS, GRID_CATEGORICAL),
        "objectives": {**list_map("metric", max_items=ov.MAX_OBJECTIVES), "minItems": 1},
        "searchAlgorithm": {"default": {"random": {}}},
        "parameters": {**list_map("name", max_items=ov.MAX_PARAMETERS), "minItems": 1},
        "numTrials": {"default": 1, **INT32, "minimum": 1, "maximum": ov.MAX_TRIALS},
        "parallelTrials": {"default": 1, **INT32, "minimum": 1, "maximum": ov.MAX_TRIALS},
        "maxFailedTrials": {**INT32, "minimum": 0},
    },
    optimization.Objective: {"metric": _NAME_64, "direction": {"default": "Minimize"}},
    optimization.SearchAlgorithm: cel_of(ONE_ALGORITHM),
    optimization.RandomSearch: {"seed": INT64},
    optimization.TPESearch: {"seed": INT64},
    optimization.SearchSpace: cel_of(ONE_SEARCH_SPACE),
    optimization.UniformSpace: {**cel_of(MIN_LESS_THAN_MAX), **_RANGE},
    optimization.LogUniformSpace: {**cel_of(MIN_POSITIVE, MIN_LESS_THAN_MAX), **_RANGE},
    optimization.CategoricalSpace: {
        "choices": {
            "minItems": 1,
            "maxItems": ov.MAX_CHOICES,
            "items": {"maxLength": ov.MAX_CHOICE},
            "x-kubernetes-list-type": "set",
        },
    },
    optimization.Parameter: {"name": {**_NAME_64, "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}},
    optimization.EarlyStopping: cel_of(ONE_EARLY_STOPPING),
    optimization.MedianStopping: {
        "minTrials": {"default": 3, **INT32, "minimum": 1},
        "startStep": {"default": 1, **INT64, "minimum": 0},
    },
    optimization.TrainJobTemplateSpec: {"metadata": cel(TEMPLATE_METADATA)},
    optimization.OptimizationJobStatus: {
        "conditions": list_map("type", max_items=100),
        "trials": list_map("name", max_items=ov.MAX_TRIALS),
    },
    optimization.OptimizationResult: {
        "trainJobName": {"minLength": 1, "maxLength": ov.MAX_TRAINJOB_NAME},
        "parameters": list_map("name", max_items=ov.MAX_PARAMETERS),
    },
    optimization.ParameterAssignment: {"name": _NAME_64, "value": _NAME_64},
    optimization.TrialStatus: {
        "name": {"minLength": 1, "maxLength": ov.MAX_TRAINJOB_NAME},
        "parameters": list_map("name", max_items=ov.MAX_PARAMETERS),
        "objective": {"maxLength": ov.MAX_NAME},
    },
}
