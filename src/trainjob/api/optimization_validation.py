"""Validation of OptimizationJobs: the CRD's limits and CEL rules with upstream's messages, and
trainjob's checks of the template.

The CEL rules (written into the CRD by :mod:`trainjob.api.crd_rules`) run here too, so the local
backend refuses what the apiserver refuses, in the same words. Beyond them (upstream's KEP leaves
these to a webhook): every ``{{.name}}`` placeholder names a parameter (a parameter need not be
one: every trial gets every value as ``KUBEFLOW_TRAINER_OPT_<NAME>`` too), and the template sets
none of those variables itself; the template, filled in with sample values (each parameter's lowest
and then highest value), is a valid TrainJob; the trial names ``<name>-<index>`` are valid
TrainJob names. Called by :func:`trainjob.api.optimization.parse_optimization_job`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from trainjob.api import constants as c
from trainjob.api import load, meta, placeholders, validation
from trainjob.api.base import to_dict
from trainjob.api.optimization import OptimizationJob, OptimizationJobSpec, Parameter, Range
from trainjob.api.trainer import TrainJob
from trainjob.errors import FieldError

__all__ = ["sample_values", "validate_optimization_job"]

# Upstream's +kubebuilder markers.
DOUBLE = re.compile(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$")
MAX_OBJECTIVES = 1
MAX_PARAMETERS = 100
MAX_CHOICES = 100
MAX_TRIALS = 100
MAX_NAME = 64
MAX_DOUBLE = 64
MAX_CHOICE = 64
MAX_TRAINJOB_NAME = 63

# Upstream's CEL messages, verbatim (crd_rules writes the same texts into the CRD).
MESSAGE_IMMUTABLE = "OptimizationJobSpec is immutable and cannot be updated after creation"
MESSAGE_PARALLEL = "parallelTrials cannot exceed numTrials"
MESSAGE_GRID = (
    "Grid search requires all parameters to be Categorical; Uniform and LogUniform are not "
    "supported."
)
MESSAGE_MIN_LESS_THAN_MAX = "min must be strictly less than max"
MESSAGE_MIN_POSITIVE = "min must be strictly greater than 0"
MESSAGE_TEMPLATE_METADATA = "name and namespace cannot be set in a template."
# controller-gen's ExactlyOneOf message; trainjob's tpe is one more member.
MESSAGE_ONE_ALGORITHM = "exactly one of the fields in [random grid tpe] must be set"
MESSAGE_ONE_SEARCH_SPACE = (
    "exactly one of the fields in [uniform logUniform categorical] must be set"
)
MESSAGE_ONE_EARLY_STOPPING = "exactly one of the fields in [median] must be set"


def validate_optimization_job(
    job: OptimizationJob, old: OptimizationJob | None = None
) -> list[FieldError]:
    """Every problem of ``job`` (an update of ``old`` when given), as field errors."""
    errs: list[FieldError] = []
    errs.extend(_validate_name(job))
    errs.extend(meta.validate_namespace(job.metadata.namespace))
    errs.extend(meta.validate_metadata("metadata", job.metadata))
    spec = job.spec
    errs.extend(_validate_objectives(spec))
    errs.extend(_validate_algorithm(spec))
    parameter_errors = _validate_parameters(spec.parameters)
    errs.extend(parameter_errors)
    errs.extend(_validate_trials(spec))
    # Sample values of bad parameters would only add errors that follow from them.
    errs.extend(_validate_template(job, fill=not parameter_errors))
    if old is not None and to_dict(old.spec) != to_dict(spec):
        errs.append(FieldError.invalid("spec", "...", MESSAGE_IMMUTABLE))
    return errs


def _at_least(path: str, value: int | None, low: int) -> list[FieldError]:
    if value is not None and value < low:
        return [FieldError.invalid(path, value, f"should be greater than or equal to {low}")]
    return []


def _at_most(path: str, value: int | None, high: int) -> list[FieldError]:
    if value is not None and value > high:
        return [FieldError.invalid(path, value, f"should be less than or equal to {high}")]
    return []


def _name_length(path: str, value: str, high: int = MAX_NAME) -> list[FieldError]:
    if not value:
        return [FieldError.invalid(path, value, "should be at least 1 chars long")]
    if len(value) > high:
        return [FieldError.too_long(path, value, high)]
    return []


def _validate_name(job: OptimizationJob) -> list[FieldError]:
    """The trials' names (``<name>-<index>``) must be valid TrainJob names: an RFC 1035 label
    of at most 63 characters."""
    name = job.metadata.name
    if not name:
        if job.metadata.generate_name:
            return []
        return [FieldError.required("metadata.name", "name or generateName is required")]
    errs = []
    if not re.match(r"^[a-z]([-a-z0-9]*[a-z0-9])?$", name):
        errs.append(
            FieldError.invalid(
                "metadata.name", name, "metadata.name must match RFC 1035 DNS label format"
            )
        )
    last = f"{name}-{max((job.spec.num_trials or 1) - 1, 0)}"
    if len(last) > MAX_TRAINJOB_NAME:
        errs.append(
            FieldError.invalid(
                "metadata.name",
                name,
                f"must be no more than {MAX_TRAINJOB_NAME - len(last) + len(name)} characters, "
                f"so that the trial names (such as {last}) are valid TrainJob names",
            )
        )
    return errs


def _validate_objectives(spec: OptimizationJobSpec) -> list[FieldError]:
    objectives = spec.objectives
    if not objectives:
        return [FieldError.required("spec.objectives", "must have at least 1 items")]
    errs = []
    if len(objectives) > MAX_OBJECTIVES:
        errs.append(FieldError.too_many("spec.objectives", len(objectives), MAX_OBJECTIVES))
    for i, o in enumerate(objectives):
        errs.extend(_name_length(f"spec.objectives[{i}].metric", o.metric))
    return errs


def _validate_algorithm(spec: OptimizationJobSpec) -> list[FieldError]:
    algo = spec.search_algorithm
    if algo is None:
        return []
    errs = []
    if sum(x is not None for x in (algo.random, algo.grid, algo.tpe)) != 1:
        errs.append(FieldError.invalid("spec.searchAlgorithm", algo, MESSAGE_ONE_ALGORITHM))
    if algo.grid is not None and not all(p.search_space.categorical for p in spec.parameters):
        errs.append(FieldError.invalid("spec", "...", MESSAGE_GRID))
    return errs


def _validate_parameters(parameters: list[Parameter]) -> list[FieldError]:
    if not parameters:
        return [FieldError.required("spec.parameters", "must have at least 1 items")]
    errs = []
    if len(parameters) > MAX_PARAMETERS:
        errs.append(FieldError.too_many("spec.parameters", len(parameters), MAX_PARAMETERS))
    seen: set[str] = set()
    for i, p in enumerate(parameters):
        path = f"spec.parameters[{i}]"
        errs.extend(_name_length(f"{path}.name", p.name))
        if p.name in seen:
            errs.append(FieldError.duplicate(path, {"name": p.name}))
        seen.add(p.name)
        if p.name and not placeholders.NAME.match(p.name):
            errs.append(
                FieldError.invalid(
                    f"{path}.name", p.name, f"should match '{placeholders.NAME.pattern}'"
                )
            )
        space = p.search_space
        path = f"{path}.searchSpace"
        chosen = [
            (f, s)
            for f, s in (
                ("uniform", space.uniform),
                ("logUniform", space.log_uniform),
                ("categorical", space.categorical),
            )
            if s is not None
        ]
        if len(chosen) != 1:
            errs.append(FieldError.invalid(path, space, MESSAGE_ONE_SEARCH_SPACE))
        if space.uniform is not None:
            errs.extend(_validate_range(f"{path}.uniform", space.uniform, log=False))
        if space.log_uniform is not None:
            errs.extend(_validate_range(f"{path}.logUniform", space.log_uniform, log=True))
        if space.categorical is not None:
            choices = space.categorical.choices
            cpath = f"{path}.categorical.choices"
            if not choices:
                errs.append(FieldError.required(cpath, "must have at least 1 items"))
            if len(choices) > MAX_CHOICES:
                errs.append(FieldError.too_many(cpath, len(choices), MAX_CHOICES))
            for j, choice in enumerate(choices):
                if len(choice) > MAX_CHOICE:
                    errs.append(FieldError.too_long(f"{cpath}[{j}]", choice, MAX_CHOICE))
                if choice in choices[:j]:
                    errs.append(FieldError.duplicate(f"{cpath}[{j}]", choice))
    return errs


def _validate_range(path: str, space: Range, *, log: bool) -> list[FieldError]:
    errs = []
    bounds: dict[str, float] = {}
    for end in ("min", "max"):
        text = getattr(space, end)
        if len(text) > MAX_DOUBLE:
            errs.append(FieldError.too_long(f"{path}.{end}", text, MAX_DOUBLE))
        elif not DOUBLE.match(text):
            errs.append(
                FieldError.invalid(f"{path}.{end}", text, f"should match '{DOUBLE.pattern}'")
            )
        elif not math.isfinite(float(text)):
            errs.append(FieldError.invalid(f"{path}.{end}", text, "must be a finite number"))
        else:
            bounds[end] = float(text)
            if space.type == "Int" and not bounds[end].is_integer():
                errs.append(
                    FieldError.invalid(
                        f"{path}.{end}", text, "must be a whole number when type is Int"
                    )
                )
    if len(bounds) == 2:
        if log and bounds["min"] <= 0:
            errs.append(FieldError.invalid(path, space, MESSAGE_MIN_POSITIVE))
        if bounds["min"] >= bounds["max"]:
            errs.append(FieldError.invalid(path, space, MESSAGE_MIN_LESS_THAN_MAX))
    return errs


def _validate_trials(spec: OptimizationJobSpec) -> list[FieldError]:
    errs = []
    for path, value in (
        ("spec.numTrials", spec.num_trials),
        ("spec.parallelTrials", spec.parallel_trials),
    ):
        errs.extend(_at_least(path, value, 1))
        errs.extend(_at_most(path, value, MAX_TRIALS))
    parallel = 1 if spec.parallel_trials is None else spec.parallel_trials
    if parallel > (1 if spec.num_trials is None else spec.num_trials):
        errs.append(FieldError.invalid("spec", "...", MESSAGE_PARALLEL))
    errs.extend(_at_least("spec.maxFailedTrials", spec.max_failed_trials, 0))
    stopping = spec.early_stopping
    if stopping is not None:
        if stopping.median is None:
            errs.append(
                FieldError.invalid("spec.earlyStopping", stopping, MESSAGE_ONE_EARLY_STOPPING)
            )
        else:
            path = "spec.earlyStopping.median"
            errs.extend(_at_least(f"{path}.minTrials", stopping.median.min_trials, 1))
            errs.extend(_at_least(f"{path}.startStep", stopping.median.start_step, 0))
    return errs


def sample_values(parameters: Iterable[Parameter], *, high: bool = False) -> dict[str, str]:
    """One value per parameter: its lowest (its first choice), or with ``high`` its highest
    (its last choice). Values as a trial gets them (an Int range's bounds as integers)."""
    out: dict[str, str] = {}
    for p in parameters:
        space = p.search_space
        rng = space.uniform or space.log_uniform
        if rng is not None:
            text = rng.max if high else rng.min
            try:
                out[p.name] = str(int(float(text))) if rng.type == "Int" else text
            except ValueError:
                out[p.name] = text
        elif space.categorical is not None and space.categorical.choices:
            out[p.name] = space.categorical.choices[-1 if high else 0]
    return out


def _validate_template(job: OptimizationJob, *, fill: bool) -> list[FieldError]:
    template = job.spec.train_job_template
    path = "spec.trainJobTemplate"
    errs = []
    md = template.metadata
    if md is not None:
        if md.name is not None or md.namespace is not None:
            errs.append(FieldError.invalid(f"{path}.metadata", md, MESSAGE_TEMPLATE_METADATA))
        filled = placeholders.substitute(
            {"labels": md.labels, "annotations": md.annotations},
            sample_values(job.spec.parameters),
        )
        errs.extend(meta.validate_metadata(f"{path}.metadata", filled))
    if not job.spec.parameters:
        return errs  # reported as spec.parameters: Required value
    names = [p.name for p in job.spec.parameters]
    used = placeholders.placeholders(to_dict(template))
    for name in sorted(used - set(names)):
        errs.append(
            FieldError.invalid(
                path,
                f"{{{{.{name}}}}}",
                f"names no parameter; spec.parameters has: {', '.join(names)}",
            )
        )
    # A template that takes its values as placeholders must take every one: a parameter it
    # leaves out is most often a typo, and its trials would differ only in an env var the code
    # does not read. A template with no placeholder at all is upstream's KEP 2605 style (8.2):
    # the values come only as KUBEFLOW_TRAINER_OPT_<NAME> env vars, so nothing is required.
    if used:
        for i, name in enumerate(names):
            if name not in used and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                errs.append(
                    FieldError.invalid(
                        f"spec.parameters[{i}].name",
                        name,
                        f"is not used by spec.trainJobTemplate: add {{{{.{name}}}}} where the "
                        f"trial takes it (or read the env var {placeholders.env_name(name)} and "
                        "use no placeholder at all)",
                    )
                )
    env: dict[str, str] = {}
    for i, name in enumerate(names):
        var = placeholders.env_name(name)
        if var in env and env[var] != name:
            errs.append(
                FieldError.invalid(
                    f"spec.parameters[{i}].name",
                    name,
                    f"must differ from parameter {env[var]} in more than case: both would be "
                    f"{var} in the trials' env",
                )
            )
        env.setdefault(var, name)
    trainer = template.spec.trainer
    for i, env_var in enumerate((trainer.env if trainer else None) or ()):
        if env_var.name in env:
            errs.append(
                FieldError.forbidden(
                    f"{path}.spec.trainer.env[{i}].name",
                    f"{env_var.name} is set by the OptimizationJob to each trial's value of "
                    f"parameter {env[env_var.name]}",
                )
            )
    if errs or not fill:
        return errs
    seen: set[str] = set()
    for high in (False, True):
        values = sample_values(job.spec.parameters, high=high)
        for e in _validate_filled(job, values):
            if repr(e) not in seen:  # once, with the first values it was found with
                seen.add(repr(e))
                errs.append(_in_template(e, values))
    return errs


def _validate_filled(job: OptimizationJob, values: Mapping[str, str]) -> list[FieldError]:
    """The template with ``values`` filled in, checked as the trial TrainJob it becomes."""
    spec = placeholders.fill(to_dict(job.spec.train_job_template.spec), values)
    doc: dict[str, Any] = {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB_KIND,
        "metadata": {"name": "trial", "namespace": job.metadata.namespace},
        "spec": spec,
    }
    try:
        trial = TrainJob.model_validate(doc, by_alias=True, by_name=False)
    except ValidationError as e:
        return load.field_errors(e)
    return [err for err in validation.validate_trainjob(trial) if err.field.startswith("spec")]


def _in_template(err: FieldError, values: Mapping[str, str]) -> FieldError:
    """A trial's error as one of the template: ``spec.trainer...`` -> ``spec.trainJobTemplate.
    spec.trainer...``, with the sample values it was found with."""
    field = (
        "spec.trainJobTemplate.spec" + err.field[len("spec") :]
        if err.field.startswith("spec")
        else err.field
    )
    filled = ", ".join(f"{k}={v}" for k, v in sorted(values.items()))
    detail = f"{err.detail} (with {filled})" if err.detail else f"with {filled}"
    return FieldError(err.type, field, detail, err.bad_value)
