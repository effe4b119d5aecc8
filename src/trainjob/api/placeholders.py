"""How a trial's parameter values get into its TrainJob: env vars and ``{{.name}}`` placeholders.

Two ways, both always on (:func:`fill`): upstream's KEP 2605 (section 8.2) sets each value as
``KUBEFLOW_TRAINER_OPT_<NAME>`` in ``spec.trainer.env``; and Go-template-style ``{{.name}}``
placeholders (``{{ .name }}`` too) anywhere in the template's strings are filled in (the KEP's
first text; handy for ``args: ["--lr={{.lr}}"]``). Substitution is on the parsed values, never on
YAML text, so a value can never inject structure:

* a string that *contains* a placeholder (``"--lr={{.lr}}"``) gets the value as text;
* a string that *is* one placeholder (``"{{.procs}}"``) becomes what its field takes: an integer
  value in an int-or-string field (``numProcPerNode``, a quantity such as ``cpu``) becomes the
  number, anything else stays a string (an env value ``"0.01"`` or ``"2"`` stays a string). A
  field that takes only a number (``numNodes``) cannot hold a placeholder: the template's schema
  is TrainJob's, which refuses a string there, here as on the apiserver.

The field's type comes from the API model the value is going into (``TrainJobSpec``), walked by
the wire names; where the model does not type a field (pass-through Kubernetes parts) the value
stays a string. Used by :mod:`trainjob.api.optimization_validation` (no unknown placeholder, the
filled template valid) and by :mod:`trainjob.optimizer.template` (a trial's TrainJob).
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from trainjob.api import constants as c

# What a parameter's name must be: a placeholder's name, and the tail of an env var's.
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
PLACEHOLDER = re.compile(r"\{\{\s*\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_INTEGER = re.compile(r"^[+-]?[0-9]+$")


def env_name(parameter: str) -> str:
    """The env var a trial's trainer gets the parameter in (KEP 2605): ``lr`` ->
    ``KUBEFLOW_TRAINER_OPT_LR``."""
    return c.ENV_TRIAL_PARAMETER_PREFIX + parameter.upper()


def placeholders(value: Any) -> set[str]:
    """The parameter names used as ``{{.name}}`` in any string of ``value`` (dicts and lists
    walked; map keys too, e.g. a label's key)."""
    found: set[str] = set()
    if isinstance(value, str):
        found.update(PLACEHOLDER.findall(value))
    elif isinstance(value, Mapping):
        for k, v in value.items():
            found |= placeholders(k) | placeholders(v)
    elif isinstance(value, list | tuple):
        for v in value:
            found |= placeholders(v)
    return found


def substitute(value: Any, values: Mapping[str, str], model: Any = None) -> Any:
    """``value`` with every ``{{.name}}`` replaced by ``values[name]`` (a name not in ``values``
    is left as written). ``model``: the type ``value`` is going into (a pydantic model class, or
    an annotation such as ``list[EnvVar]``), for the type of a whole-value placeholder."""
    if isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value)
        if whole and whole.group(1) in values:
            return _typed(values[whole.group(1)], model)
        return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), value)
    if isinstance(value, Mapping):
        return {
            substitute(k, values): substitute(v, values, _field_type(model, k))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        item = _item_type(model)
        return [substitute(v, values, item) for v in value]
    return value


def fill(spec: Mapping[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    """A TrainJob spec (a dict) as a trial with ``values`` runs it: placeholders filled
    (:func:`substitute`, typed by ``TrainJobSpec``) and each value in ``spec.trainer.env`` as
    ``KUBEFLOW_TRAINER_OPT_<NAME>`` (upstream's way, KEP 2605 section 8.2; appended, in the
    parameters' order)."""
    from trainjob.api.trainer import TrainJobSpec

    out: dict[str, Any] = substitute(spec, values, TrainJobSpec)
    trainer = dict(out.get("trainer") or {})
    env = list(trainer.get("env") or [])
    env.extend({"name": env_name(k), "value": v} for k, v in values.items())
    trainer["env"] = env
    out["trainer"] = trainer
    return out


def _members(annotation: Any) -> tuple[Any, ...]:
    """The types of a union (``X | None`` -> ``(X,)``), or ``(annotation,)``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return tuple(
            t for a in typing.get_args(annotation) for t in _members(a) if t is not type(None)
        )
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    return (annotation,)


def _field_type(model: Any, key: Any) -> Any:
    """The annotation of the field ``key`` (a wire name) of ``model``, or the value type of a
    ``dict[str, X]``; None when unknown."""
    for member in _members(model):
        if isinstance(member, type) and issubclass(member, BaseModel):
            for name, info in member.model_fields.items():
                if key in (info.alias, name):
                    return info.annotation
        elif typing.get_origin(member) is dict:
            return typing.get_args(member)[1]
    return None


def _item_type(model: Any) -> Any:
    for member in _members(model):
        if typing.get_origin(member) is list:
            return typing.get_args(member)[0]
    return None


def _typed(text: str, model: Any) -> Any:
    """``text`` as the field takes it. Only an int-or-string field can hold a placeholder and
    need a number (a field that takes only a number refuses the placeholder's string when the
    template is parsed, as the apiserver does): an integer there is the number."""
    kinds = set(_members(model))
    if int in kinds and str in kinds and _INTEGER.match(text):
        return int(text)
    return text
