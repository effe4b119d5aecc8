"""Builders for the optimizer tests: an OptimizationJob from a few keywords, trials by phase."""

from __future__ import annotations

from typing import Any

from trainjob.api.optimization import OptimizationJob, parse_optimization_job
from trainjob.optimizer.engine import Trial

Obj = dict[str, Any]

LR = {"name": "lr", "searchSpace": {"logUniform": {"min": "1e-4", "max": "0.1"}}}
UNITS = {"name": "units", "searchSpace": {"uniform": {"min": "16", "max": "256", "type": "Int"}}}
OPT = {"name": "opt", "searchSpace": {"categorical": {"choices": ["sgd", "adam", "lamb"]}}}


def sweep(
    *parameters: Obj,
    name: str = "sweep",
    algorithm: Obj | None = None,
    direction: str = "Minimize",
    template: Obj | None = None,
    metadata: Obj | None = None,
    **spec: Any,
) -> OptimizationJob:
    """A valid OptimizationJob (objective ``loss``) over ``parameters`` (default: lr and opt);
    the template passes every parameter as an argument unless ``template`` is given."""
    params = list(parameters) or [LR, OPT]
    body: Obj = {
        "objectives": [{"metric": "loss", "direction": direction}],
        "parameters": params,
        "trainJobTemplate": template
        or {
            "spec": {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {"args": [f"--{p['name']}={{{{.{p['name']}}}}}" for p in params]},
            }
        },
        **spec,
    }
    if algorithm is not None:
        body["searchAlgorithm"] = algorithm
    return parse_optimization_job(
        {"metadata": metadata or {"name": name, "namespace": "default"}, "spec": body}
    )


def trial(
    index: int,
    phase: str = "Running",
    objective: float | None = None,
    history: tuple[tuple[int, float], ...] = (),
    **parameters: str,
) -> Trial:
    return Trial(
        name=f"sweep-{index}",
        index=index,
        parameters=parameters or {"lr": "0.01", "opt": "sgd"},
        phase=phase,  # type: ignore[arg-type]
        objective=objective,
        history=history,
    )
