"""``train(...)`` arguments -> the ``trainer.kubeflow.org/v1alpha1`` TrainJob to submit. Pure.

The TrainJob is the one upstream's Kubernetes backend builds: a CustomTrainer's function becomes
``spec.trainer.command`` (``bash -c`` script that writes the function to a file and runs it with
``torchrun``, ``mpirun ... python`` or ``python``, after an optional ``pip install``); a
BuiltinTrainer becomes the runtime's ``tune run`` plus ``key=value`` overrides; initializers
become ``spec.initializer``. Two deliberate differences: every user string that reaches a shell
is quoted with ``shlex.quote``, and a function that cannot run elsewhere is refused here (see
``client.function``). The trainers' and initializers' parts are built in
:mod:`trainjob.client.custom_trainer`, :mod:`trainjob.client.builtin_trainer` and
:mod:`trainjob.client.initializer_spec` (their names are exported here too). Called by both
backends.
"""

from __future__ import annotations

import random
import string
import uuid
from collections.abc import Sequence
from typing import Any

from trainjob.api import load, validation
from trainjob.api.trainer import TrainJob as TrainJobModel
from trainjob.client import constants as c
from trainjob.client import types
from trainjob.client.builtin_trainer import (
    builtin_trainer,
    dataset_args,
    framework_of,
    knob_args,
    lora_args,
    torchtune_args,
    trl_args,
    trl_command,
)
from trainjob.client.custom_trainer import (
    JOB_TMP_ENV,
    TEMP_LOG_FILE,
    custom_trainer,
    function_command,
    pip_install_script,
    venv_install_script,
)
from trainjob.client.initializer_spec import (
    dataset_initializer,
    initializer_env,
    initializer_spec,
    model_initializer,
)
from trainjob.client.trainer_fields import env_list
from trainjob.errors import InvalidError

__all__ = [
    "JOB_TMP_ENV",
    "TEMP_LOG_FILE",
    "build",
    "builtin_trainer",
    "custom_trainer",
    "dataset_args",
    "dataset_initializer",
    "framework_of",
    "function_command",
    "generate_name",
    "initializer_env",
    "initializer_spec",
    "job_name",
    "knob_args",
    "lora_args",
    "model",
    "model_initializer",
    "pip_install_script",
    "torchtune_args",
    "trainer_spec",
    "trl_args",
    "trl_command",
    "venv_install_script",
]


def generate_name() -> str:
    """A random TrainJob name: a lowercase letter + 11 hex characters (12 in all), as upstream."""
    return random.choice(string.ascii_lowercase) + uuid.uuid4().hex[: c.JOB_NAME_UUID_LENGTH]


def trainer_spec(
    runtime: types.Runtime,
    trainer: types.AnyTrainer | None,
    initializer: types.Initializer | None,
    venv: bool | None = None,
) -> dict[str, Any]:
    """``spec.trainer`` for any trainer; raises ValueError when it does not fit the runtime."""
    if trainer is None:
        return {}
    if isinstance(trainer, types.CustomTrainer | types.CustomTrainerContainer):
        if runtime.trainer.trainer_type != types.TrainerType.CUSTOM_TRAINER:
            raise ValueError(
                f"{type(trainer).__name__} can't be used with {runtime.name} runtime: it runs "
                f"a {runtime.trainer.trainer_type.value} ({runtime.trainer.framework})"
            )
        return custom_trainer(runtime, trainer, venv)
    if isinstance(trainer, types.BuiltinTrainer | types.ConfigTrainer):
        if runtime.trainer.trainer_type != types.TrainerType.BUILTIN_TRAINER:
            raise ValueError(
                f"{type(trainer).__name__} can't be used with {runtime.name} runtime: it runs a "
                f"{runtime.trainer.trainer_type.value} ({runtime.trainer.framework})"
            )
        return builtin_trainer(runtime, trainer, initializer)
    raise ValueError(
        f"The trainer type {type(trainer)} is not supported. "
        "Please use CustomTrainer, CustomTrainerContainer, BuiltinTrainer or ConfigTrainer."
    )


def build(
    runtime: types.Runtime,
    initializer: types.Initializer | None = None,
    trainer: types.AnyTrainer | None = None,
    options: Sequence[Any] | None = None,
    *,
    name: str | None = None,
    namespace: str | None = None,
    backend: Any = None,
    extra_env: dict[str, str] | None = None,
    venv: bool | None = None,
    validate: bool = True,
) -> dict[str, Any]:
    """The TrainJob to submit, as the dict Kubernetes would store. Raises ValueError if invalid.

    ``validate=False``: the backend's executor validates it (see :func:`parse`).

    ``extra_env`` (a backend config's ``env``) goes before the trainer's env, which wins.
    ``venv``: ``packages_to_install`` into a virtual environment per job (the local backend;
    True removes it when each node ends); None: upstream's install into the container.
    """
    spec: dict[str, Any] = {"runtimeRef": {"name": runtime.name}}
    if runtime.kind == types.RuntimeKind.TRAINING_RUNTIME:
        spec["runtimeRef"].update(apiGroup=c.GROUP, kind=c.TRAINING_RUNTIME_KIND)
    tspec = trainer_spec(runtime, trainer, initializer, venv)
    if extra_env:
        own = {e["name"] for e in tspec.get("env") or ()}
        base = [e for e in env_list(extra_env) or () if e["name"] not in own]
        tspec["env"] = base + list(tspec.get("env") or ())
    if tspec:
        spec["trainer"] = tspec
    init = initializer_spec(initializer)
    if init:
        spec["initializer"] = init
    metadata: dict[str, Any] = {"name": name or generate_name()}
    if namespace:
        metadata["namespace"] = namespace
    job: dict[str, Any] = {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB_KIND,
        "metadata": metadata,
        "spec": spec,
    }
    for option in options or ():
        if not callable(option):
            raise ValueError(f"Invalid option {option!r}: options must be callables")
        option(job, trainer, backend)
    if validate:
        model(job)  # validate now: errors before submission, as field paths
    return job


def parse(job: dict[str, Any]) -> TrainJobModel:
    """The TrainJob dict as the API model, not validated; ValueError if it does not parse.

    For a backend whose executor validates what it is handed (the local one: ``submit`` runs
    :func:`trainjob.executor.catalog.admit`), so a TrainJob is parsed once and validated once."""
    try:
        tj = load.parse(job)
    except InvalidError as e:
        raise ValueError(str(e)) from None
    assert isinstance(tj, TrainJobModel)
    return tj


def model(job: dict[str, Any]) -> TrainJobModel:
    """The TrainJob dict as the API model; ValueError listing every invalid field."""
    tj = parse(job)
    errors = validation.validate_trainjob(tj)
    if errors:
        raise ValueError(str(InvalidError(errors, f"{c.TRAINJOB_KIND}.{c.GROUP}", job_name(job))))
    return tj


def job_name(job: dict[str, Any]) -> str:
    return str((job.get("metadata") or {}).get("name") or "")
