"""``OptimizerClient``: the Kubeflow SDK 0.5.0's hyperparameter-optimization client, over
trainjob's OptimizationJob on the local, container or Kubernetes backend.

Method names, parameters and results are upstream's (``kubeflow.optimizer.OptimizerClient``):
``optimize`` turns a :class:`~trainjob.client.types.TrainJobTemplate` and a search space into an
OptimizationJob (``trainer.kubeflow.org/v1alpha1``) whose trials are TrainJobs; the function of
the template's CustomTrainer gets each trial's parameters as keyword arguments (numbers as
numbers, as upstream passes them: each ``func_args`` value becomes a ``{{.name}}`` placeholder,
:class:`trainjob.client.function.Placeholder`), and reports its metrics with
``update_trainjob_status`` or, as a function written for Katib does, by printing
``name=value`` lines. The sweep runs on the backend's :class:`~trainjob.executor.sweeps.
SweepExecutor` (locally a sweep supervisor process that outlives this client), its trials on
the TrainerClient of the same backend, so ``TrainerClient().get_job(trial)`` works too.

    from trainjob.optimizer import OptimizerClient, Search, TrialConfig, Objective
    from trainjob import CustomTrainer, TrainJobTemplate

    client = OptimizerClient()
    name = client.optimize(
        trial_template=TrainJobTemplate(trainer=CustomTrainer(func=train)),
        trial_config=TrialConfig(num_trials=6, parallel_trials=2),
        search_space={"lr": Search.loguniform(1e-4, 1e-1)},
        objectives=[Objective(metric="loss", direction="minimize")],
    )
    client.wait_for_job_status(name)
    print(client.get_best_results(name))
"""

from __future__ import annotations

import copy
import logging
import os
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from trainjob.client import builder, types
from trainjob.client import constants as c
from trainjob.client import optimizer_types as ot
from trainjob.client.client import TrainerClient
from trainjob.client.config import (
    ContainerBackendConfig,
    KubernetesBackendConfig,
    LocalProcessBackendConfig,
)
from trainjob.client.function import Placeholder
from trainjob.client.status import parse_time
from trainjob.errors import AlreadyExistsError, ConfigError, InvalidError, NotFoundError
from trainjob.executor import sweeps

if TYPE_CHECKING:
    from trainjob.api.optimization import OptimizationJob as JobModel
    from trainjob.executor.sweeps import SweepExecutor

logger = logging.getLogger(__name__)

STATUSES = frozenset(sweeps.PHASES)
UNSAFE_CHOICE_CHARACTERS = ("'", "\\", "\n", "\r")
"""What a string choice cannot hold: it is written inside the quoted placeholder of the shipped
script (upstream's rule)."""


class OptimizerClient:
    """Create, watch and delete OptimizationJobs (hyperparameter sweeps).

    Parameters:
        backend_config: (optional) ``LocalProcessBackendConfig``, ``ContainerBackendConfig``
            or ``KubernetesBackendConfig``; default as TrainerClient's (``$TRAINJOB_BACKEND``,
            else Kubernetes when a kubeconfig exists, else local).

    Raises:
        ValueError: the backend config is not one of these.
    """

    def __init__(
        self,
        backend_config: (
            LocalProcessBackendConfig | ContainerBackendConfig | KubernetesBackendConfig | None
        ) = None,
    ) -> None:
        self.trainer = TrainerClient(backend_config)
        self.sweeps: SweepExecutor = _sweep_executor(self.trainer)
        self.namespace = self.trainer.backend.namespace

    def __repr__(self) -> str:
        return (
            f"OptimizerClient(backend={self.trainer.backend.name!r}, namespace={self.namespace!r})"
        )

    # -- creating -------------------------------------------------------------------------------

    def optimize(
        self,
        trial_template: types.TrainJobTemplate,
        *,
        trial_config: ot.TrialConfig | None = None,
        search_space: dict[str, Any],
        objectives: list[ot.Objective] | None = None,
        algorithm: ot.BaseAlgorithm | None = None,
        early_stopping: ot.MedianStopping | None = None,
    ) -> str:
        """Create an OptimizationJob for hyperparameter tuning; its name.

        Parameters:
            trial_template: The TrainJob each trial runs (a CustomTrainer whose function takes
                the parameters as keyword arguments).
            trial_config: (optional) How many trials, how many at once, how many may fail.
            search_space: Parameter name -> ``Search.uniform()``, ``Search.loguniform()`` or
                ``Search.choice()``.
            objectives: (optional) The metric to optimize (one); default ``loss``, minimized.
            algorithm: (optional) ``RandomSearch()`` (default), ``GridSearch()`` or trainjob's
                ``TPESearch()``.
            early_stopping: (optional, trainjob's addition) ``MedianStopping()``.

        Raises:
            ValueError: invalid input (checked before anything is created).
            RuntimeError: the OptimizationJob could not be created.
        """
        obj = self._manifest(trial_template, trial_config, search_space, objectives, algorithm,
                             early_stopping)  # fmt: skip
        name = obj["metadata"]["name"]
        from trainjob.api.optimization import parse_optimization_job

        try:
            job = parse_optimization_job(obj)
            self.sweeps.create(job, cwd=_cwd(self.trainer))
        except (InvalidError, NotFoundError) as e:
            raise ValueError(str(e)) from e
        except (AlreadyExistsError, ConfigError) as e:
            raise RuntimeError(
                f"Failed to create {sweeps.KIND}: {self.namespace}/{name}: {e}"
            ) from e
        logger.debug("%s %s/%s has been created", sweeps.KIND, self.namespace, name)
        return str(name)

    def _manifest(
        self,
        trial_template: types.TrainJobTemplate,
        trial_config: ot.TrialConfig | None,
        search_space: dict[str, Any],
        objectives: list[ot.Objective] | None,
        algorithm: ot.BaseAlgorithm | None,
        early_stopping: ot.MedianStopping | None,
    ) -> dict[str, Any]:
        """The OptimizationJob ``optimize`` creates (upstream's trainer-native mapping)."""
        if not search_space:
            raise ValueError("Search space must be set.")
        if not isinstance(trial_template, types.TrainJobTemplate):
            raise ValueError(f"trial_template must be a TrainJobTemplate, got {trial_template!r}")
        if not isinstance(trial_template.trainer, types.CustomTrainer):
            raise ValueError(
                "trial_template.trainer must be a CustomTrainer: its function gets each "
                f"trial's parameters, got {type(trial_template.trainer).__name__}"
            )
        objectives = objectives or [ot.Objective()]
        if len(objectives) != 1:
            raise ValueError(
                f"An OptimizationJob supports exactly one objective, got {len(objectives)}"
            )
        algorithm = algorithm or ot.RandomSearch()
        trial_config = trial_config or ot.TrialConfig()
        trainer = copy.copy(trial_template.trainer)
        func_args = dict(trainer.func_args or {})
        parameters = []
        for pname, space in search_space.items():
            parameters.append({"name": pname, "searchSpace": _search_space(pname, space)})
            literal = isinstance(space, ot.ContinuousSearchSpace) or bool(space.literal)
            func_args[pname] = Placeholder(pname, literal)
        trainer.func_args = func_args
        backend = self.trainer.backend
        rt = backend.resolve_runtime(trial_template.runtime)
        local_cfg = getattr(backend, "cfg", None)
        job = builder.build(
            rt,
            trial_template.initializer,
            trainer,
            None,
            namespace=self.namespace,
            backend=backend,
            extra_env=(local_cfg.env or None) if local_cfg is not None else None,
            venv=local_cfg.cleanup_venv if local_cfg is not None else None,
        )
        spec: dict[str, Any] = {
            "objectives": [
                {"metric": o.metric, "direction": o.direction.value.capitalize()}
                for o in objectives
            ],
            "searchAlgorithm": _algorithm(algorithm),
            "parameters": parameters,
            "numTrials": trial_config.num_trials,
            "parallelTrials": trial_config.parallel_trials,
            "trainJobTemplate": {"spec": job["spec"]},
        }
        if trial_config.max_failed_trials is not None:
            spec["maxFailedTrials"] = trial_config.max_failed_trials
        if early_stopping is not None:
            spec["earlyStopping"] = {
                "median": {
                    "minTrials": early_stopping.min_trials,
                    "startStep": early_stopping.start_step,
                }
            }
        return {
            "apiVersion": c.API_VERSION,
            "kind": sweeps.KIND,
            "metadata": {"name": builder.generate_name(), "namespace": self.namespace},
            "spec": spec,
        }

    # -- reading --------------------------------------------------------------------------------

    def _model(self, name: str) -> JobModel:
        try:
            return self.sweeps.get(name, self.namespace)
        except NotFoundError as e:
            raise RuntimeError(f"{sweeps.KIND} {self.namespace}/{name} not found") from e
        except ConfigError as e:
            raise RuntimeError(f"Failed to get {sweeps.KIND}: {self.namespace}/{name}: {e}") from e

    def list_jobs(self) -> list[ot.OptimizationJob]:
        """The OptimizationJobs of this namespace (``[]`` if none), oldest first."""
        try:
            found = self.sweeps.list(self.namespace)
        except ConfigError as e:
            raise RuntimeError(
                f"Failed to list {sweeps.KIND}s in namespace: {self.namespace}: {e}"
            ) from e
        return [self._to_sdk(j, details=False) for j in found]

    def get_job(self, name: str) -> ot.OptimizationJob:
        """The OptimizationJob, with its trials' parameters, TrainJobs and metrics."""
        return self._to_sdk(self._model(name), details=True)

    def _to_sdk(self, job: JobModel, *, details: bool) -> ot.OptimizationJob:
        spec = job.spec
        status = job.status.to_dict() if job.status is not None else {}
        trials = [self._trial(t, details) for t in status.get("trials") or ()]
        return ot.OptimizationJob(
            name=job.metadata.name or "",
            search_space=_search_space_of(job),
            objectives=[
                ot.Objective(
                    metric=o.metric, direction=ot.Direction((o.direction or "Minimize").lower())
                )
                for o in spec.objectives
            ],
            algorithm=_algorithm_of(job),
            trial_config=ot.TrialConfig(
                num_trials=spec.num_trials or 1,
                parallel_trials=spec.parallel_trials or 1,
                max_failed_trials=spec.max_failed_trials,
            ),
            trials=trials,
            creation_timestamp=parse_time(job.metadata.creation_timestamp),
            status=sweeps.phase(status),
        )

    def _trial(self, t: dict[str, Any], details: bool) -> ot.Trial:
        name = str(t.get("name") or "")
        trial = ot.Trial(
            name=name,
            parameters={p["name"]: p["value"] for p in t.get("parameters") or ()},
            phase=str(t.get("phase") or ot.UNKNOWN),
            reason=str(t.get("reason") or ""),
        )
        if details:
            try:
                trial.trainjob = self.trainer.get_job(name)
            except RuntimeError:
                trial.trainjob = None  # deleted by hand
            trial.metrics = self._metrics(name)
        return trial

    def _metrics(self, trial: str) -> list[ot.Metric]:
        """Each metric the trial reported: its lowest, highest and latest value."""
        executor = self.sweeps.trials
        try:
            samples = executor.metric_history(trial, self.namespace)
        except (NotFoundError, ConfigError):
            return []
        seen: dict[str, list[str]] = {}
        for s in samples:
            for k, v in s.metrics.items():
                seen.setdefault(k, []).append(v)
        out = []
        for k, values in seen.items():
            numbers = [float(v) for v in values if _is_number(v)]
            low = min(numbers) if numbers else None
            high = max(numbers) if numbers else None
            out.append(
                ot.Metric(
                    name=k,
                    min=_text(low, values),
                    max=_text(high, values),
                    latest=values[-1],
                )
            )
        return out

    def get_best_results(self, name: str) -> ot.Result | None:
        """The best trial's parameters and metrics, or None before any trial has a result."""
        job = self._model(name)
        result = job.status.result if job.status is not None else None
        if result is None or not result.train_job_name:
            return None
        return ot.Result(
            parameters={p.name: p.value for p in result.parameters or ()},
            metrics=self._metrics(result.train_job_name),
            trial_name=result.train_job_name,
        )

    def get_job_logs(
        self, name: str, trial_name: str | None = None, follow: bool = False
    ) -> Iterator[str]:
        """Log lines of one trial: ``trial_name``, else the best trial so far, else the first."""
        if trial_name is None:
            job = self._model(name)
            status = job.status
            if status is not None and status.result is not None and status.result.train_job_name:
                trial_name = status.result.train_job_name
            elif status is not None and status.trials:
                trial_name = status.trials[0].name
            else:
                return
            logger.debug("Getting logs from trial: %s", trial_name)
        yield from self.trainer.get_job_logs(trial_name, follow=follow)

    def get_job_events(self, name: str) -> list[types.Event]:
        """The OptimizationJob's events and its trials', oldest first."""
        job = self._model(name)
        try:
            own = self.sweeps.events(name, self.namespace)
        except NotFoundError as e:
            raise RuntimeError(f"{sweeps.KIND} {self.namespace}/{name} not found") from e
        events = [
            types.Event(
                involved_object_kind=e.involved_kind,
                involved_object_name=e.involved_name or name,
                message=e.message,
                reason=e.reason,
                event_time=parse_time(e.timestamp),
            )
            for e in own
        ]
        for t in (job.status.trials if job.status is not None else None) or ():
            try:
                events += self.trainer.get_job_events(t.name)
            except RuntimeError:
                continue  # deleted by hand
        return sorted(events, key=lambda e: e.event_time)

    def wait_for_job_status(
        self,
        name: str,
        status: set[str] = {sweeps.COMPLETE},  # noqa: B006 - upstream's signature
        timeout: int = 3600,
        polling_interval: float = 2,
        callbacks: list[Callable[[ot.OptimizationJob], None]] | None = None,
    ) -> ot.OptimizationJob:
        """Wait until the OptimizationJob reaches one of ``status`` and return it.

        Raises:
            ValueError: ``status`` is not a subset of Created, Running, Complete and Failed, or
                ``polling_interval`` is not less than ``timeout``.
            RuntimeError: it Failed (and Failed is not in ``status``).
            TimeoutError: ``timeout`` passed.
        """
        if not set(status) <= STATUSES:
            raise ValueError(f"Expected status {status} must be a subset of {set(STATUSES)}")
        if polling_interval <= 0 or polling_interval >= timeout:
            raise ValueError(
                "Polling interval must be strictly less than timeout (and positive). "
                f"Received polling_interval={polling_interval}, timeout={timeout}"
            )
        deadline = time.monotonic() + timeout
        while True:
            # each look reads the job alone (its trials' TrainJobs and metrics once, at the end)
            job = self._to_sdk(self._model(name), details=False)
            for callback in callbacks or ():
                callback(job)
            if sweeps.FAILED not in status and job.status == sweeps.FAILED:
                raise RuntimeError(f"{sweeps.KIND} {name} is Failed{_why(self, name)}")
            if job.status in status:
                return self.get_job(name)
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"Timeout waiting for {sweeps.KIND} {name} to reach status: {status}"
                )
            time.sleep(min(polling_interval, max(0.0, deadline - time.monotonic())))

    def delete_job(self, name: str, purge: bool = False) -> None:
        """Delete the OptimizationJob and its trials (their outputs stay unless ``purge``)."""
        try:
            self.sweeps.delete(name, self.namespace, purge=purge)
        except NotFoundError as e:
            raise RuntimeError(f"{sweeps.KIND} {self.namespace}/{name} not found") from e
        logger.debug("%s %s/%s has been deleted", sweeps.KIND, self.namespace, name)


# -- helpers ------------------------------------------------------------------------------------


def _sweep_executor(trainer: TrainerClient) -> SweepExecutor:
    """The SweepExecutor of the TrainerClient's backend."""
    from trainjob.client.backends.local import LocalBackend

    backend = trainer.backend
    if isinstance(backend, LocalBackend):  # the container backend is one too
        from trainjob.local.client.sweeps import LocalSweepExecutor

        return LocalSweepExecutor(backend.cfg.home, runner=getattr(backend.executor, "runner", ""))
    from trainjob.cluster.executor import KubernetesExecutor
    from trainjob.cluster.sweeps import KubernetesSweepExecutor

    trials = getattr(backend, "executor", None)
    return KubernetesSweepExecutor(trials if isinstance(trials, KubernetesExecutor) else None)


def _cwd(trainer: TrainerClient) -> str:
    cfg = getattr(trainer.backend, "cfg", None)
    return str(getattr(cfg, "cwd", None) or os.getcwd())


def _search_space(name: str, space: Any) -> dict[str, Any]:
    if isinstance(space, ot.ContinuousSearchSpace):
        key = "logUniform" if space.distribution == ot.Distribution.LOG_UNIFORM else "uniform"
        return {key: {"min": str(space.min), "max": str(space.max), "type": "Float"}}
    if isinstance(space, ot.CategoricalSearchSpace):
        choices = [str(v) for v in space.choices]
        if not space.literal:
            for choice in choices:
                if any(ch in choice for ch in UNSAFE_CHOICE_CHARACTERS):
                    raise ValueError(
                        f"Search space parameter '{name}' has the value {choice!r}, which "
                        "contains a single quote, a backslash, or a line break. These values "
                        "can't be passed to the training function."
                    )
        return {"categorical": {"choices": choices}}
    raise ValueError(
        f"search_space[{name!r}] must be Search.uniform(), Search.loguniform() or "
        f"Search.choice(), got {space!r}"
    )


def _algorithm(algorithm: ot.BaseAlgorithm) -> dict[str, Any]:
    if isinstance(algorithm, ot.GridSearch):
        return {"grid": {}}
    if isinstance(algorithm, ot.RandomSearch | ot.TPESearch):
        settings = {} if algorithm.random_state is None else {"seed": algorithm.random_state}
        return {algorithm.algorithm_name: settings}
    raise ValueError(
        f"algorithm must be RandomSearch(), GridSearch() or TPESearch(), got {algorithm!r}"
    )


def _algorithm_of(job: JobModel) -> ot.GridSearch | ot.RandomSearch | ot.TPESearch:
    algo = job.spec.search_algorithm
    if algo is not None and algo.grid is not None:
        return ot.GridSearch()
    if algo is not None and algo.tpe is not None:
        return ot.TPESearch(random_state=algo.tpe.seed)
    return ot.RandomSearch(random_state=algo.random.seed if algo and algo.random else None)


def _search_space_of(
    job: JobModel,
) -> dict[str, ot.ContinuousSearchSpace | ot.CategoricalSearchSpace]:
    out: dict[str, ot.ContinuousSearchSpace | ot.CategoricalSearchSpace] = {}
    for p in job.spec.parameters:
        space = p.search_space
        if space.categorical is not None:
            out[p.name] = ot.CategoricalSearchSpace(choices=list(space.categorical.choices))
        elif space.log_uniform is not None:
            log = space.log_uniform
            out[p.name] = ot.ContinuousSearchSpace(
                float(log.min), float(log.max), ot.Distribution.LOG_UNIFORM
            )
        elif space.uniform is not None:
            lin = space.uniform
            out[p.name] = ot.ContinuousSearchSpace(
                float(lin.min), float(lin.max), ot.Distribution.UNIFORM
            )
    return out


def _why(client: OptimizerClient, name: str) -> str:
    """``: Reason: message`` of a Failed job's condition."""
    job = client._model(name)
    for cond in (job.status.conditions if job.status is not None else None) or ():
        if cond.type == sweeps.FAILED and cond.status == "True":
            return f": {cond.reason}: {cond.message}"
    return ""


def _is_number(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


def _text(value: float | None, values: list[str]) -> str:
    """A min or max as the report wrote it (the first string equal to it), else ``""``."""
    if value is None:
        return ""
    return next((v for v in values if _is_number(v) and float(v) == value), str(value))
