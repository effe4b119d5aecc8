"""The OptimizerClient's types, with the names, fields and defaults of the Kubeflow SDK 0.5.0's
``kubeflow.optimizer`` (``types/optimization_types.py``, ``algorithm_types.py``,
``search_types.py``), and trainjob's additions: :class:`TPESearch` and :class:`MedianStopping`.

What ``optimize`` takes (:class:`Search`'s spaces, :class:`TrialConfig`, :class:`Objective`,
an algorithm) becomes an OptimizationJob's spec (:mod:`trainjob.client.optimizer`); what
``get_job`` and ``get_best_results`` return (:class:`OptimizationJob`, :class:`Trial`,
:class:`Metric`, :class:`Result`) is read back from it and its trials. Plain dataclasses: no
Kubernetes or Katib model is needed to build them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from trainjob.client.results import TrainJob

UNKNOWN = "Unknown"


class Direction(Enum):
    """Direction for optimization objective."""

    MAXIMIZE = "maximize"
    MINIMIZE = "minimize"


@dataclass
class Objective:
    """Objective configuration for hyperparameter optimization.

    Args:
        metric: The name of the metric to optimize. Defaults to "loss".
        direction: Whether to maximize or minimize the metric. Defaults to "minimize".
    """

    metric: str = "loss"
    direction: Direction = Direction.MINIMIZE

    def __post_init__(self) -> None:
        if isinstance(self.direction, str):
            self.direction = Direction(self.direction.lower())


@dataclass
class TrialConfig:
    """Trial configuration for hyperparameter optimization.

    Args:
        num_trials: Number of trials to run. Defaults to 10.
        parallel_trials: Number of trials to run in parallel. Defaults to 1.
        max_failed_trials: Maximum number of failed trials before stopping.
    """

    num_trials: int = 10
    parallel_trials: int = 1
    max_failed_trials: int | None = None


class Distribution(Enum):
    UNIFORM = "uniform"
    LOG_UNIFORM = "logUniform"


@dataclass
class ContinuousSearchSpace:
    """A range to sample floats from (``Search.uniform``, ``Search.loguniform``)."""

    min: float | int
    max: float | int
    distribution: Distribution


@dataclass
class CategoricalSearchSpace:
    """Values to choose from (``Search.choice``). ``literal``: every value was given as a finite
    number or a boolean, so the training function gets it with its type, not as a string."""

    choices: list[Any]
    literal: bool = False


def _is_python_literal(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, bool | int)


class Search:
    """Helper class for defining search space parameters."""

    @staticmethod
    def uniform(min: float, max: float) -> ContinuousSearchSpace:
        """Sample a float value uniformly between ``min`` and ``max``."""
        return ContinuousSearchSpace(min=min, max=max, distribution=Distribution.UNIFORM)

    @staticmethod
    def loguniform(min: float, max: float) -> ContinuousSearchSpace:
        """Sample a float value with log-uniform distribution between ``min`` and ``max``."""
        return ContinuousSearchSpace(min=min, max=max, distribution=Distribution.LOG_UNIFORM)

    @staticmethod
    def choice(values: list[Any]) -> CategoricalSearchSpace:
        """Sample a categorical value from the list: with its type when every value is a number
        or a boolean, else as a string."""
        return CategoricalSearchSpace(
            choices=list(values),
            literal=bool(values) and all(_is_python_literal(v) for v in values),
        )


class BaseAlgorithm:
    """A search algorithm (``algorithm_name`` names it)."""

    algorithm_name = ""


@dataclass
class GridSearch(BaseAlgorithm):
    """Grid search algorithm: every combination of the (categorical) parameters' choices."""

    algorithm_name = "grid"


@dataclass
class RandomSearch(BaseAlgorithm):
    """Random search algorithm.

    Args:
        random_state: Random seed for reproducibility.
    """

    algorithm_name = "random"
    random_state: int | None = None


@dataclass
class TPESearch(BaseAlgorithm):
    """trainjob's addition: Bayesian optimization with Optuna's TPE sampler (seeded by
    ``random_state``: with ``parallel_trials=1`` two runs propose the same trials)."""

    algorithm_name = "tpe"
    random_state: int | None = None


@dataclass
class MedianStopping:
    """trainjob's addition: early stopping. A running trial whose latest reported objective is
    worse than the median of the completed trials' values at the same step is stopped (its
    TrainJob suspended, the reason in its status), once ``min_trials`` trials have completed and
    from step ``start_step`` on."""

    min_trials: int = 3
    start_step: int = 1


@dataclass
class Metric:
    """A metric of a trial: its lowest, highest and latest reported value (strings, as the
    TrainJob's ``status.trainerStatus.metrics`` has them)."""

    name: str
    min: str
    max: str
    latest: str


@dataclass
class Trial:
    """One trial: its TrainJob's name, the parameters it ran with, its TrainJob and metrics."""

    name: str
    parameters: dict[str, str]
    trainjob: TrainJob | None = None
    metrics: list[Metric] = field(default_factory=list)
    phase: str = UNKNOWN
    """trainjob's addition: Pending, Running, Succeeded, Failed or Stopped."""
    reason: str = ""
    """trainjob's addition: why it was stopped or failed."""


@dataclass
class Result:
    """The best trial's parameters and metrics."""

    parameters: dict[str, str]
    metrics: list[Metric]
    trial_name: str = ""


@dataclass
class OptimizationJob:
    """Representation for an optimization job."""

    name: str
    search_space: dict[str, ContinuousSearchSpace | CategoricalSearchSpace]
    objectives: list[Objective]
    algorithm: GridSearch | RandomSearch | TPESearch
    trial_config: TrialConfig
    trials: list[Trial]
    creation_timestamp: datetime
    status: str = UNKNOWN
