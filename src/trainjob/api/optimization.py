"""``trainer.kubeflow.org/v1alpha1`` OptimizationJob: a hyperparameter sweep whose trials are TrainJobs.

The shape is upstream's (kubeflow/trainer main after v2.3,
``pkg/apis/trainer/v1alpha1/optimizationjob_types.go``; KEP ``2605-optimization-job-crd``): the same
field names, defaults and rules, so an upstream OptimizationJob runs here unchanged. trainjob adds,
each off by default and marked "trainjob's addition" in its description (and so in the CRD):

* ``searchAlgorithm.tpe`` -- Bayesian optimisation (Optuna's TPE sampler), seeded;
* ``maxFailedTrials`` -- the sweep fails once more trials than this failed;
* ``earlyStopping.median`` -- median stopping of running trials on the intermediate values they
  report (``status.trainerStatus.metrics``);
* ``status.trials`` -- every trial with its parameters, phase and objective value.

Parsing and the rules beyond the shape are :func:`parse_optimization_job` and
:mod:`trainjob.api.optimization_validation`; the CRD's CEL rules are in :mod:`trainjob.api.crd_rules`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from trainjob.api import constants as c
from trainjob.api.base import ApiModel
from trainjob.api.k8s_types import Condition, Int32, Int64, ObjectMeta
from trainjob.api.trainer import TrainJobSpec

Direction = Literal["Maximize", "Minimize"]
ParameterType = Literal["Int", "Float"]
MAXIMIZE: Direction = "Maximize"
MINIMIZE: Direction = "Minimize"


class Objective(ApiModel):
    """The metric a sweep optimises, as its trials report it in ``status.trainerStatus.metrics``."""

    metric: str = Field(description="metric specifies the name of the objective metric to track.")
    direction: Direction | None = Field(
        MINIMIZE, description='direction specifies the optimization goal. Defaults to "Minimize".'
    )


class RandomSearch(ApiModel):
    """RandomAlgorithm is the random search algorithm."""

    seed: Int64 | None = Field(
        None, description="seed is the seed for the random search algorithm."
    )


class GridSearch(ApiModel):
    """GridAlgorithm is the grid search algorithm."""


class TPESearch(ApiModel):
    """trainjob's addition: Bayesian optimisation with a Tree-structured Parzen Estimator (Optuna's
    TPESampler). Each new trial is suggested from the finished ones."""

    seed: Int64 | None = Field(None, description="seed is the seed for the TPE sampler.")


class SearchAlgorithm(ApiModel):
    """The algorithm that suggests each trial's parameters: exactly one of random, grid (and
    trainjob's tpe)."""

    random: RandomSearch | None = Field(None, description="random is the random search algorithm.")
    grid: GridSearch | None = Field(None, description="grid is the grid search algorithm.")
    tpe: TPESearch | None = Field(
        None,
        description="trainjob's addition: tpe is Bayesian optimisation (Tree-structured Parzen "
        "Estimator), seeded; each trial is suggested from the finished ones.",
    )


class Range(ApiModel):
    """A continuous range ``[min, max]``; ``min``/``max`` are decimal strings (``"1e-4"``)."""

    min: str = Field(description="min is the minimum value of the search space.")
    max: str = Field(description="max is the maximum value of the search space.")
    type: ParameterType | None = Field(
        "Float", description='type specifies the underlying data type. Defaults to "Float".'
    )


class UniformSpace(Range):
    """UniformSpace defines a continuous uniform distribution over [Min, Max]."""


class LogUniformSpace(Range):
    """LogUniformSpace defines a continuous log-uniform distribution over [Min, Max]."""


class CategoricalSpace(ApiModel):
    """CategoricalSpace defines a search space over a discrete set of unordered strings."""

    choices: list[str] = Field(description="choices is the set of strings to sample from.")


Categorical = CategoricalSpace  # the name the sweep plan (sweeps.md) gives it


class SearchSpace(ApiModel):
    """The values one hyperparameter takes: exactly one of uniform, logUniform, categorical."""

    uniform: UniformSpace | None = Field(None, description="uniform is the uniform search space.")
    log_uniform: LogUniformSpace | None = Field(
        None, description="logUniform is the log-uniform search space."
    )
    categorical: CategoricalSpace | None = Field(
        None, description="categorical is the categorical search space."
    )


class Parameter(ApiModel):
    """One hyperparameter. Each trial gets its value as ``KUBEFLOW_TRAINER_OPT_<NAME>`` in
    ``spec.trainer.env`` and wherever the template says ``{{.name}}``."""

    name: str = Field(description="name is the name of the hyperparameter.")
    search_space: SearchSpace = Field(
        description="searchSpace is the search space for the hyperparameter."
    )


class MedianStopping(ApiModel):
    """trainjob's addition: stop a running trial whose best value so far at step ``s`` is worse
    than the median of the completed trials' values at ``s`` (Optuna's MedianPruner)."""

    min_trials: Int32 | None = Field(
        3, description="minTrials is the number of completed trials before any trial is stopped."
    )
    start_step: Int64 | None = Field(
        1, description="startStep is the first step at which a trial may be stopped."
    )


class EarlyStopping(ApiModel):
    """trainjob's addition: stop trials that are unlikely to beat the others, on the intermediate
    values of the objective metric they report while they run."""

    median: MedianStopping | None = Field(
        None, description="median is median stopping (Optuna's MedianPruner)."
    )


class TrainJobTemplateSpec(ApiModel):
    """TrainJobTemplateSpec is the template for the train job to run. Parameter values go in as
    ``{{.name}}`` placeholders, in any string of ``spec`` (and of ``metadata``'s labels and
    annotations)."""

    metadata: ObjectMeta | None = Field(
        None, description="metadata is the metadata for the train job."
    )
    spec: TrainJobSpec = Field(description="spec is the spec for the train job.")


class OptimizationJobSpec(ApiModel):
    """OptimizationJobSpec defines the desired state of OptimizationJob."""

    objectives: list[Objective] = Field(
        description="objectives is the list of objectives to optimize."
    )
    search_algorithm: SearchAlgorithm | None = Field(
        default_factory=lambda: SearchAlgorithm(random=RandomSearch()),
        description="searchAlgorithm is the algorithm to use for searching over the hyperparameters.",
    )
    parameters: list[Parameter] = Field(
        description="parameters is the list of hyperparameters to search over."
    )
    num_trials: Int32 | None = Field(
        1, description="numTrials is the total number of trials to run."
    )
    parallel_trials: Int32 | None = Field(
        1, description="parallelTrials is the number of trials to run in parallel. Defaults to 1."
    )
    train_job_template: TrainJobTemplateSpec = Field(
        description="trainJobTemplate is the template for the train job to run."
    )
    max_failed_trials: Int32 | None = Field(
        None,
        description="trainjob's addition: maxFailedTrials is how many trials may fail before the "
        "OptimizationJob fails. Unset: it fails only when every trial failed.",
    )
    early_stopping: EarlyStopping | None = Field(
        None,
        description="trainjob's addition: earlyStopping stops running trials that are unlikely to "
        "beat the completed ones. Unset: every trial runs to its end.",
    )


class ParameterAssignment(ApiModel):
    """ParameterAssignment represents a single hyperparameter and its assigned value."""

    name: str = Field(description="name is the name of the hyperparameter.")
    value: str = Field(description="value is the value of the hyperparameter.")


class OptimizationResult(ApiModel):
    """Result tracks the parameters of the highest performing trial."""

    train_job_name: str = Field(
        description="trainJobName is the name of the underlying TrainJob that achieved this result."
    )
    parameters: list[ParameterAssignment] | None = Field(
        None, description="parameters is the list of parameters for the result."
    )


TrialPhase = Literal["Pending", "Running", "Succeeded", "Failed", "Stopped"]


class TrialStatus(ApiModel):
    """trainjob's addition: one trial (a TrainJob) of the sweep."""

    name: str = Field(description="name is the name of the trial's TrainJob.")
    parameters: list[ParameterAssignment] | None = Field(
        None, description="parameters is the trial's hyperparameter values."
    )
    phase: TrialPhase = Field(
        description="phase is Pending, Running, Succeeded, Failed or Stopped (stopped early)."
    )
    objective: str | None = Field(
        None, description="objective is the trial's final value of the objective metric."
    )
    reason: str | None = Field(None, description="reason says why a trial failed or was stopped.")


class OptimizationJobStatus(ApiModel):
    """OptimizationJobStatus is the status of the optimization job."""

    conditions: list[Condition] | None = Field(
        None, description="conditions is the list of conditions for the optimization job."
    )
    result: OptimizationResult | None = Field(
        None, description="result is the result of the optimization job."
    )
    trials: list[TrialStatus] | None = Field(
        None,
        description="trainjob's addition: trials lists every trial made so far, with its "
        "parameters, phase and objective value.",
    )


class OptimizationJob(ApiModel):
    """OptimizationJob is the Schema for the optimizationjobs API."""

    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = c.API_VERSION  # type: ignore[assignment]
    kind: Literal["OptimizationJob"] = "OptimizationJob"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: OptimizationJobSpec = Field(description="spec is the spec for the optimization job.")
    status: OptimizationJobStatus | None = Field(
        None, description="status is the status for the optimization job."
    )


def parse_optimization_job(obj: Mapping[str, Any]) -> OptimizationJob:
    """A manifest (dict) -> a valid OptimizationJob. Raises :class:`trainjob.errors.InvalidError`
    naming every bad field (the shape's errors first; then, if the shape is sound, the rules of
    :func:`trainjob.api.optimization_validation.validate_optimization_job`)."""
    from trainjob.api import load, optimization_validation
    from trainjob.errors import FieldError, InvalidError

    doc = dict(obj)
    doc.setdefault("apiVersion", c.API_VERSION)
    doc.setdefault("kind", c.OPTIMIZATION_JOB_KIND)
    job = load.parse(doc)
    if not isinstance(job, OptimizationJob):
        raise InvalidError(
            [FieldError.not_supported("kind", doc.get("kind"), [c.OPTIMIZATION_JOB_KIND])]
        )
    errs = optimization_validation.validate_optimization_job(job)
    if errs:
        raise InvalidError(errs, f"{c.OPTIMIZATION_JOB_KIND}.{c.GROUP}", job.metadata.name or "")
    return job
