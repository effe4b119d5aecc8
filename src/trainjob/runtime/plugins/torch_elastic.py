"""Elastic PyTorch (KEP-2903): the node range of a Torch TrainJob and torchrun's rendezvous for it.

``mlPolicy.torch.elasticPolicy`` is the runtime's default, ``spec.trainer.elasticPolicy`` the job's
override, which may only narrow it. The effective policy gives torchrun ``--nnodes=<min>:<max>``
and a c10d rendezvous on node 0 (``--rdzv-id`` the TrainJob's UID), all as the ``PET_*`` envs that
torchrun reads for its flags, so any ``torchrun`` command of the trainer becomes elastic; a user's
own ``--nnodes`` is refused. The JobSet starts ``trainer.numNodes`` nodes (default ``maxNodes``);
a scale changes the node job's ``parallelism``/``completions``. Used by
:mod:`trainjob.runtime.plugins.torch` (validation and envs) and by the backends (bounds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainjob.api import constants as c
from trainjob.api.base import to_dict
from trainjob.api.trainer import ElasticPolicy, TrainJob
from trainjob.errors import FieldError
from trainjob.runtime.info import Info, Obj

ENV_RDZV_BACKEND = c.TORCH_ENV_RDZV_BACKEND
ENV_RDZV_ID = c.TORCH_ENV_RDZV_ID
ENV_RDZV_ENDPOINT = c.TORCH_ENV_RDZV_ENDPOINT
ENV_MAX_RESTARTS = c.TORCH_ENV_MAX_RESTARTS
RDZV_BACKEND = c.TORCH_RDZV_BACKEND_C10D
DEFAULT_MAX_RESTARTS = 3
"""torchrun's restart budget per agent when ``maxRestarts`` is unset: each membership change
that breaks a collective costs the surviving agents one restart."""

METRIC_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
"""autoscaling/v2 ``MetricSourceType`` values."""

TRAINER_PATH = "spec.trainer.elasticPolicy"
RUNTIME_PATH = "spec.mlPolicy.torch.elasticPolicy"


@dataclass(frozen=True)
class Elastic:
    """The effective elastic policy of a TrainJob."""

    min_nodes: int
    max_nodes: int
    max_restarts: int
    metrics: tuple[dict[str, Any], ...] = ()

    @property
    def nnodes(self) -> str:
        """torchrun's ``--nnodes`` value."""
        return f"{self.min_nodes}:{self.max_nodes}"


def _runtime_policy(info: Info | None) -> ElasticPolicy | None:
    torch_policy = info.ml_policy.torch if info is not None and info.ml_policy else None
    return torch_policy.elastic_policy if torch_policy is not None else None


def _job_policy(trainjob: TrainJob) -> ElasticPolicy | None:
    trainer = trainjob.spec.trainer
    return trainer.elastic_policy if trainer is not None else None


def is_elastic(info: Info | None, trainjob: TrainJob) -> bool:
    return _runtime_policy(info) is not None or _job_policy(trainjob) is not None


def effective(info: Info | None, trainjob: TrainJob) -> Elastic | None:
    """The runtime's policy with the job's fields over it; None when neither has one.
    ``minNodes`` defaults to 1, ``maxNodes`` to ``trainer.numNodes``, else ``minNodes``."""
    rt, job = _runtime_policy(info), _job_policy(trainjob)
    if rt is None and job is None:
        return None

    def pick(field: str) -> Any:
        for p in (job, rt):
            if p is not None and getattr(p, field) is not None:
                return getattr(p, field)
        return None

    min_nodes = pick("min_nodes") or 1
    trainer = trainjob.spec.trainer
    start = trainer.num_nodes if trainer is not None else None
    max_nodes = pick("max_nodes") or max(min_nodes, start or min_nodes)
    restarts = pick("max_restarts")
    metrics = pick("metrics") or []
    return Elastic(
        min_nodes=min_nodes,
        max_nodes=max_nodes,
        max_restarts=DEFAULT_MAX_RESTARTS if restarts is None else restarts,
        metrics=tuple(metrics),
    )


def start_nodes(elastic: Elastic, trainjob: TrainJob) -> int:
    """The number of nodes the JobSet starts with: ``trainer.numNodes``, else ``maxNodes``."""
    trainer = trainjob.spec.trainer
    if trainer is not None and trainer.num_nodes is not None:
        return trainer.num_nodes
    return elastic.max_nodes


def pet_envs(trainjob: TrainJob, elastic: Elastic) -> list[Obj]:
    """torchrun's elastic flags as its ``PET_*`` envs (``PET_NNODES`` replaces the static one)."""
    name = trainjob.metadata.name or ""
    return [
        {"name": c.TORCH_ENV_NUM_NODES, "value": elastic.nnodes},
        {"name": ENV_RDZV_BACKEND, "value": RDZV_BACKEND},
        {"name": ENV_RDZV_ID, "value": trainjob.metadata.uid or name},
        {
            "name": ENV_RDZV_ENDPOINT,
            "value": f"{name}-{c.JOB_NODE}-0-0.{name}:{c.CONTAINER_TRAINER_PORT}",
        },
        {"name": ENV_MAX_RESTARTS, "value": str(elastic.max_restarts)},
    ]


# -- validation -------------------------------------------------------------------------------


def _bounds_errors(path: str, policy: ElasticPolicy) -> list[FieldError]:
    errs: list[FieldError] = []
    for field, value in (("minNodes", policy.min_nodes), ("maxNodes", policy.max_nodes)):
        if value is not None and value < 1:
            errs.append(
                FieldError.invalid(f"{path}.{field}", value, "must be greater than or equal to 1")
            )
    if policy.max_restarts is not None and policy.max_restarts < 0:
        errs.append(
            FieldError.invalid(
                f"{path}.maxRestarts", policy.max_restarts, "must be greater than or equal to 0"
            )
        )
    lo, hi = policy.min_nodes, policy.max_nodes
    if lo is not None and hi is not None and hi < lo:
        errs.append(
            FieldError.invalid(
                f"{path}.maxNodes", hi, f"must be greater than or equal to minNodes ({lo})"
            )
        )
    for i, metric in enumerate(policy.metrics or ()):
        mtype = metric.get("type") if isinstance(metric, dict) else None
        if mtype not in METRIC_TYPES:
            errs.append(
                FieldError.not_supported(f"{path}.metrics[{i}].type", mtype, list(METRIC_TYPES))
            )
    return errs


def _narrowing_errors(rt: ElasticPolicy, job: ElasticPolicy) -> list[FieldError]:
    errs: list[FieldError] = []
    if rt.min_nodes is not None and job.min_nodes is not None and job.min_nodes < rt.min_nodes:
        errs.append(
            FieldError.invalid(
                f"{TRAINER_PATH}.minNodes",
                job.min_nodes,
                f"must be greater than or equal to the runtime's minNodes ({rt.min_nodes})",
            )
        )
    if rt.max_nodes is not None and job.max_nodes is not None and job.max_nodes > rt.max_nodes:
        errs.append(
            FieldError.invalid(
                f"{TRAINER_PATH}.maxNodes",
                job.max_nodes,
                f"must be less than or equal to the runtime's maxNodes ({rt.max_nodes})",
            )
        )
    return errs


def _node_job_errors(info: Info) -> list[FieldError]:
    """KEP-2903: the node job must be Indexed with ``parallelism == completions``."""
    ps = info.pod_set_by_ancestor(c.ANCESTOR_TRAINER)
    if ps is None:
        return []
    job_spec = (ps.rjob.get("template") or {}).get("spec") or {}
    errs: list[FieldError] = []
    mode = job_spec.get("completionMode")
    if mode not in (None, "Indexed"):
        errs.append(
            FieldError.invalid(
                "spec.runtimeRef",
                mode,
                f'elastic training needs the "{ps.name}" job\'s completionMode to be Indexed',
            )
        )
    par, comp = job_spec.get("parallelism"), job_spec.get("completions")
    if par is not None and comp is not None and par != comp:
        errs.append(
            FieldError.invalid(
                "spec.runtimeRef",
                {"parallelism": par, "completions": comp},
                f'elastic training needs the "{ps.name}" job\'s parallelism to equal completions',
            )
        )
    return errs


def _patch_errors(trainjob: TrainJob) -> list[FieldError]:
    """A runtime patch may not set the node job's parallelism or completions of an elastic job."""
    errs: list[FieldError] = []
    for i, patch in enumerate(trainjob.spec.runtime_patches or ()):
        tmpl = patch.training_runtime_spec.template if patch.training_runtime_spec else None
        jobs = tmpl.spec.replicated_jobs if tmpl is not None and tmpl.spec is not None else None
        for j, rjob in enumerate(jobs or ()):
            spec = rjob.template.spec if rjob.template is not None else None
            extra = (spec.model_extra or {}) if spec is not None else {}
            for field in ("parallelism", "completions"):
                if field in extra:
                    errs.append(
                        FieldError.forbidden(
                            f"spec.runtimePatches[{i}].trainingRuntimeSpec.template.spec."
                            f"replicatedJobs[{j}].template.spec.{field}",
                            "must not be patched for an elastic TrainJob: "
                            "the node count comes from elasticPolicy",
                        )
                    )
    return errs


def _nnodes_errors(trainjob: TrainJob) -> list[FieldError]:
    trainer = trainjob.spec.trainer
    if trainer is None:
        return []
    errs: list[FieldError] = []
    for field, words in (("command", trainer.command), ("args", trainer.args)):
        for k, word in enumerate(words or ()):
            if word == "--nnodes" or word.startswith("--nnodes=") or "--nnodes" in word.split():
                errs.append(
                    FieldError.invalid(
                        f"spec.trainer.{field}[{k}]",
                        word,
                        "must not set --nnodes for an elastic TrainJob: "
                        "torchrun's node range comes from elasticPolicy",
                    )
                )
    return errs


def validate(info: Info | None, trainjob: TrainJob) -> list[FieldError]:
    """KEP-2903's admission rules for an elastic Torch TrainJob (nothing when it is not elastic)."""
    rt, job = _runtime_policy(info), _job_policy(trainjob)
    if rt is None and job is None:
        return []
    errs: list[FieldError] = []
    if rt is not None:
        errs.extend(_bounds_errors(RUNTIME_PATH, rt))
    if job is not None:
        errs.extend(_bounds_errors(TRAINER_PATH, job))
    if rt is not None and job is not None:
        errs.extend(_narrowing_errors(rt, job))
    if errs:
        return errs
    elastic = effective(info, trainjob)
    assert elastic is not None
    if elastic.max_nodes < elastic.min_nodes:
        errs.append(
            FieldError.invalid(
                f"{TRAINER_PATH}.maxNodes",
                elastic.max_nodes,
                f"must be greater than or equal to minNodes ({elastic.min_nodes})",
            )
        )
    trainer = trainjob.spec.trainer
    start = trainer.num_nodes if trainer is not None else None
    if start is not None and not elastic.min_nodes <= start <= elastic.max_nodes:
        errs.append(
            FieldError.invalid(
                "spec.trainer.numNodes",
                start,
                f"must be between elasticPolicy.minNodes ({elastic.min_nodes}) "
                f"and maxNodes ({elastic.max_nodes})",
            )
        )
    if info is not None:
        errs.extend(_node_job_errors(info))
    errs.extend(_patch_errors(trainjob))
    errs.extend(_nnodes_errors(trainjob))
    return errs


def torchtune_error(info: Info, trainjob: TrainJob) -> FieldError | None:
    """An elastic ``tune run`` job: torchtune's launcher gets no elastic rendezvous yet."""
    job = _job_policy(trainjob)
    policy = job or _runtime_policy(info)
    if policy is None:
        return None
    return FieldError.invalid(
        TRAINER_PATH if job is not None else RUNTIME_PATH,
        to_dict(policy),
        "the torchtune trainer (tune run) is not elastic yet: remove elasticPolicy",
    )


def not_torch_error(trainjob: TrainJob) -> FieldError | None:
    """``trainer.elasticPolicy`` on a runtime without ``mlPolicy.torch`` (MPI, JAX, ...)."""
    policy = _job_policy(trainjob)
    if policy is None:
        return None
    return FieldError.invalid(
        TRAINER_PATH,
        to_dict(policy),
        "elastic training needs a runtime with mlPolicy.torch (MPI, JAX, XGBoost and plain "
        "runtimes are not elastic)",
    )
