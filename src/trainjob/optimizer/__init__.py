"""Sweeps (OptimizationJob): the pure engine that decides the next trials and which to stop
(:mod:`trainjob.optimizer.engine`, on Optuna), the trial TrainJobs made from the template
(:mod:`trainjob.optimizer.template`), the OptimizationJob's status
(:mod:`trainjob.optimizer.status`) and the loop every backend runs over its executor
(:mod:`trainjob.optimizer.driver`). Each backend only creates, watches and stops TrainJobs.

It is also the public face of the Kubeflow SDK's ``kubeflow.optimizer``: ``from
kubeflow.optimizer import X`` becomes ``from trainjob.optimizer import X``. Those names
(``OptimizerClient`` and its types) live in :mod:`trainjob.client` and are imported on first
use, by name (a static import would point this package, below the client in the layers, up at
it). Importing this package imports neither Optuna nor pydantic: the engine imports Optuna
itself.
"""

from __future__ import annotations

from trainjob import lazy

_EXPORTS = {
    "OptimizerClient": "trainjob.client.optimizer",
    "CategoricalSearchSpace": "trainjob.client.optimizer_types",
    "ContinuousSearchSpace": "trainjob.client.optimizer_types",
    "Direction": "trainjob.client.optimizer_types",
    "Distribution": "trainjob.client.optimizer_types",
    "GridSearch": "trainjob.client.optimizer_types",
    "MedianStopping": "trainjob.client.optimizer_types",
    "Metric": "trainjob.client.optimizer_types",
    "Objective": "trainjob.client.optimizer_types",
    "OptimizationJob": "trainjob.client.optimizer_types",
    "RandomSearch": "trainjob.client.optimizer_types",
    "Result": "trainjob.client.optimizer_types",
    "Search": "trainjob.client.optimizer_types",
    "TPESearch": "trainjob.client.optimizer_types",
    "Trial": "trainjob.client.optimizer_types",
    "TrialConfig": "trainjob.client.optimizer_types",
    "TrainJobTemplate": "trainjob.client.types",
    "KubernetesBackendConfig": "trainjob.client.config",
    "LocalProcessBackendConfig": "trainjob.client.config",
    "ContainerBackendConfig": "trainjob.client.config",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS)
