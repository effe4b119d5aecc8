"""``train(...)`` arguments -> the ``trainer.kubeflow.org/v1alpha1`` TrainJob to submit. Pure.

The TrainJob is the one upstream's Kubernetes backend builds: a CustomTrainer's function becomes
``spec.trainer.command`` (``bash -c`` script that writes the function to a file and runs it with
``torchrun``, ``mpirun ... python`` or ``python``, after an optional ``pip install``); a
BuiltinTrainer becomes the runtime's ``tune run`` plus ``key=value`` overrides; initializers
become ``spec.initializer``. Two deliberate differences: every user string that reaches a shell
is quoted with ``shlex.quote``, and a function that cannot run elsewhere is refused here (see
``client.function``). Called by both backends.
"""

from __future__ import annotations

import dataclasses
import os
import random
import shlex
import string
import textwrap
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

from trainjob.api import load, validation
from trainjob.api.trainer import TrainJob as TrainJobModel
from trainjob.client import constants as c
from trainjob.client import function, runtimes, types
from trainjob.errors import InvalidError
from trainjob.local import home as homes


def generate_name() -> str:
    """A random TrainJob name: a lowercase letter + 11 hex characters (12 in all), as upstream."""
    return random.choice(string.ascii_lowercase) + uuid.uuid4().hex[: c.JOB_NAME_UUID_LENGTH]


# ---------------------------------------------------------------------------------------------
# CustomTrainer


_PIP = "PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_BREAK_SYSTEM_PACKAGES=1 python -m pip install"
_PIP_SCRIPT = textwrap.dedent(
    """
    if ! [ -x "$(command -v pip)" ]; then
        python -m ensurepip || python -m ensurepip --user || apt-get install python-pip
    fi

    """
) + textwrap.dedent(
    f"""
    PACKAGES=(__PACKAGES__)
    PIP_OPTS=(__OPTS__)
    LOG_FILE=__LOG_FILE__
    rm -f "$LOG_FILE"

    if {_PIP} --quiet \\
        --no-warn-script-location "${{PIP_OPTS[@]}}" --user "${{PACKAGES[@]}}" >"$LOG_FILE" 2>&1; then
        echo "Successfully installed Python packages (user): ${{PACKAGES[*]}}"
    elif {_PIP} --quiet \\
        --no-warn-script-location "${{PIP_OPTS[@]}}" "${{PACKAGES[@]}}" >>"$LOG_FILE" 2>&1; then
        echo "Successfully installed Python packages (system-wide): ${{PACKAGES[*]}}"
    else
        echo "ERROR: Failed to install Python packages: ${{PACKAGES[*]}}" >&2
        cat "$LOG_FILE" >&2
        exit 1
    fi

    """
)


TEMP_LOG_FILE = None
"""``log_file`` for a fresh temporary file (``mktemp``), so the working directory is left alone."""


def pip_install_script(
    packages: Sequence[str], index_urls: Sequence[str], log_file: str | None = "pip_install.log"
) -> str:
    """The bash prefix that installs ``packages`` (user site first, then system-wide), logging to
    ``log_file`` (upstream's ``pip_install.log`` by default; ``TEMP_LOG_FILE``: a temp file)."""
    if not index_urls:
        raise ValueError("pip_index_urls must name at least one package index")
    log = '"$(mktemp 2>/dev/null || echo pip_install.log)"' if log_file is None else _dq(log_file)
    pkgs = " ".join(shlex.quote(str(p)) for p in packages)
    opts = " ".join(
        [f"--index-url {shlex.quote(str(index_urls[0]))}"]
        + [f"--extra-index-url {shlex.quote(str(u))}" for u in index_urls[1:]]
    )
    return (
        _PIP_SCRIPT.replace("__PACKAGES__", pkgs)
        .replace("__OPTS__", opts)
        .replace("__LOG_FILE__", log)
    )


JOB_TMP_ENV = homes.ENV_JOB_TMP
"""Set by the local backend in every container: a directory inside the job's own, removed with
the job (``trainjob delete``), for what a pod writes aside (its packages' environment)."""

_VENV_SCRIPT = textwrap.dedent(
    f"""
    PACKAGES=(__PACKAGES__)
    PIP_OPTS=(__OPTS__)
    VENV_ROOT="${{{JOB_TMP_ENV}:-${{TMPDIR:-/tmp}}}}"
    mkdir -p -m 700 "$VENV_ROOT"
    VENV="$(mktemp -d "$VENV_ROOT/venv.XXXXXX")"
    LOG_FILE="$VENV.pip.log"
    __CLEANUP__
    BASE="$(python -c 'import sys; print(sys.prefix)')"
    python -m venv --system-site-packages --without-pip "$VENV"
    SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
    python -c 'import site; print("\\n".join(site.getsitepackages()))' >"$SITE/_trainjob_base.pth"
    export PIP_DISABLE_PIP_VERSION_CHECK=1
    if python -m pip --python "$VENV/bin/python" --version >/dev/null 2>&1; then
        INSTALL=(python -m pip --python "$VENV/bin/python" install --quiet --no-warn-script-location)
    elif {{ command -v uv >/dev/null 2>&1 &&
           uv pip install --quiet --python "$VENV/bin/python" pip >>"$LOG_FILE" 2>&1; }} ||
         "$VENV/bin/python" -m ensurepip --default-pip >>"$LOG_FILE" 2>&1; then
        INSTALL=("$VENV/bin/python" -m pip install --quiet --no-warn-script-location)
    else
        echo "ERROR: cannot install Python packages: no pip (>= 22.3), uv or ensurepip here" >&2
        cat "$LOG_FILE" >&2
        exit 1
    fi
    if "${{INSTALL[@]}}" "${{PIP_OPTS[@]}}" "${{PACKAGES[@]}}" >>"$LOG_FILE" 2>&1; then
        echo "Successfully installed Python packages (into this job's virtual environment $VENV, \\
    over $BASE, whose packages it reuses): ${{PACKAGES[*]}}"
    else
        echo "ERROR: Failed to install Python packages: ${{PACKAGES[*]}}" >&2
        cat "$LOG_FILE" >&2
        exit 1
    fi
    export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" PYTHONPATH="$SITE${{PYTHONPATH:+:$PYTHONPATH}}"

    """
)
_VENV_CLEANUP = (
    "trap 'rm -rf \"$VENV\" \"$LOG_FILE\"' EXIT; trap 'exit 143' TERM; trap 'exit 130' INT"
)
_VENV_KEEP = (
    'echo "Keeping the virtual environment $VENV until the job is deleted (cleanup_venv=False)"'
)


def venv_install_script(
    packages: Sequence[str], index_urls: Sequence[str], cleanup: bool = True
) -> str:
    """The bash prefix that installs ``packages`` into a virtual environment of this job alone,
    for the local backend (upstream's local backend also makes one per job; its Kubernetes
    backend installs into the container, which is the job's own).

    Fast where upstream's is slow: the environment sees the caller's packages (its site-packages
    through a ``.pth`` file, since ``--system-site-packages`` alone would skip a caller that is
    itself a venv: torch is reused, not downloaded again) and is filled by the caller's pip
    (``pip --python``), else by a pip of its own (seeded by ``uv`` in a second, else by
    ``ensurepip``): pip, unlike ``uv pip``, counts the caller's packages as installed. It lives
    in the job's directory (``$TRAINJOB_JOB_TMP``) and is removed when the node's process ends
    (``cleanup``), or with the job. ``python`` and ``torchrun`` both see its packages (``PATH``,
    ``PYTHONPATH``); the caller's environment is never changed.
    """
    if not index_urls:
        raise ValueError("pip_index_urls must name at least one package index")
    pkgs = " ".join(shlex.quote(str(p)) for p in packages)
    opts = " ".join(
        [f"--index-url {shlex.quote(str(index_urls[0]))}"]
        + [f"--extra-index-url {shlex.quote(str(u))}" for u in index_urls[1:]]
    )
    return (
        _VENV_SCRIPT.replace("__PACKAGES__", pkgs)
        .replace("__OPTS__", opts)
        .replace("__CLEANUP__", _VENV_CLEANUP if cleanup else _VENV_KEEP)
    )


def _dq(value: str) -> str:
    """``"value"`` as upstream writes it when that is safe in bash, else shell-quoted."""
    return f'"{value}"' if shlex.quote(value) == value else shlex.quote(value)


def function_command(
    runtime: types.Runtime,
    func: Any,
    func_args: dict[str, Any] | None,
    pip_index_urls: Sequence[str],
    packages_to_install: Sequence[str] | None,
    venv: bool | None = None,
) -> list[str]:
    """The trainer container command that runs ``func(**func_args)`` on ``runtime``.

    ``venv`` (the local backend): ``packages_to_install`` go into a virtual environment of the
    job (removed when the node ends if True, kept until the job is deleted if False) instead of
    upstream's ``pip install --user`` into the container."""
    shipped = function.ship(func, func_args)
    command = runtime.trainer.command
    if not command:
        raise ValueError(f"Runtime {runtime.name} has no trainer command")
    is_mpi = command[0] == "mpirun"
    # upstream logs to ./pip_install.log; a temp file keeps a local job out of the caller's cwd
    log_file = os.path.join(c.DEFAULT_MPI_USER_HOME, "pip_install.log") if is_mpi else TEMP_LOG_FILE
    install = ""
    if packages_to_install and venv is not None and not is_mpi:
        install = venv_install_script(packages_to_install, pip_index_urls, cleanup=venv)
    elif packages_to_install:
        install = pip_install_script(packages_to_install, pip_index_urls, log_file)
    out: list[str] = []
    for part in command:
        if "{func_file}" in part:
            script = part.format(
                func_code=shlex.quote(shipped.script), func_file=shlex.quote(shipped.file_name)
            )
            out.append(install + script)
        else:
            out.append(part)
    return out


def _env_list(env: dict[str, str] | None) -> list[dict[str, str]] | None:
    """``{"A": "1"}`` -> ``[{"name": "A", "value": "1"}]``; names as Kubernetes accepts them
    (a pod with any other name would fail only once the job runs). ``None`` is ``""``."""
    if not env:
        return None
    if not isinstance(env, dict):
        raise ValueError(f"env must be a dict of names to values, got {type(env).__name__}")
    out = []
    for key, value in env.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"env names must be non-empty strings, got {key!r}")
        if "=" in key or not all(" " <= ch <= "~" for ch in key):
            raise ValueError(
                f"env name {key!r} is invalid: a valid environment variable name must consist "
                "only of printable ASCII characters other than '='"
            )
        out.append({"name": key, "value": "" if value is None else str(value)})
    return out


def custom_trainer(
    runtime: types.Runtime,
    trainer: types.CustomTrainer | types.CustomTrainerContainer,
    venv: bool | None = None,
) -> dict[str, Any]:
    """``spec.trainer`` for a CustomTrainer or CustomTrainerContainer (``venv``: see
    :func:`function_command`)."""
    out: dict[str, Any] = {}
    if (nodes := _num_nodes(trainer.num_nodes)) is not None:
        out["numNodes"] = nodes
    if trainer.resources_per_node:
        out["resourcesPerNode"] = runtimes.resources_per_node(trainer.resources_per_node)
    if isinstance(trainer, types.CustomTrainer):
        out["command"] = function_command(
            runtime,
            trainer.func,
            trainer.func_args,
            trainer.pip_index_urls,
            trainer.packages_to_install,
            venv,
        )
        if trainer.image:
            out["image"] = trainer.image
    else:
        if not trainer.image:
            raise ValueError("CustomTrainerContainer needs an image")
        out["image"] = trainer.image
    env = _env_list(trainer.env)
    if env:
        out["env"] = env
    return out


def _num_nodes(value: Any) -> int | None:
    """``numNodes`` for a trainer's ``num_nodes``: None or 0 leave the runtime's number (as
    upstream's ``if trainer.num_nodes:``); a negative number or a non-integer is an error."""
    if value is None or (value == 0 and not isinstance(value, bool)):
        return None
    return _positive("num_nodes", value)


def _positive(field: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{field} must be a positive integer, got {value!r}")
    return value


# ---------------------------------------------------------------------------------------------
# BuiltinTrainer (TorchTune)


def _enum_value(value: Any, enum: type[Any], what: str) -> str:
    if isinstance(value, enum):
        return str(value.value)
    try:
        return str(enum(value).value)
    except ValueError:
        raise ValueError(f"Invalid {what}: {value}.") from None


def torchtune_args(
    config: types.TorchTuneConfig, initializer: types.Initializer | None = None
) -> list[str]:
    """The ``key=value`` overrides the torchtune runtime plugin merges into the recipe config."""
    args: list[str] = []
    if config.dtype:
        args.append(f"dtype={_enum_value(config.dtype, types.DataType, 'dtype')}")
    if config.batch_size is not None:
        args.append(f"batch_size={_positive('batch_size', config.batch_size)}")
    if config.epochs is not None:
        args.append(f"epochs={_positive('epochs', config.epochs)}")
    if config.loss:
        args.append(f"loss={_enum_value(config.loss, types.Loss, 'loss')}")
    if (
        initializer is not None
        and isinstance(initializer.dataset, types.HuggingFaceDatasetInitializer)
        and initializer.dataset.storage_uri.startswith("hf://")
    ):
        # a file:// or s3:// copy: the trainer reads what the initializer wrote, as for S3
        uri = initializer.dataset.storage_uri
        parts = urlparse(uri).path.strip("/").split("/")
        rel = "/".join(parts[1:]) if len(parts) > 1 else "."
        key = "data_files" if rel != "." and "." in rel else "data_dir"
        args.append(f"dataset.{key}={os.path.join(c.DATASET_PATH, rel)}")
    if config.peft_config is not None:
        args += lora_args(config.peft_config)
    if config.dataset_preprocess_config is not None:
        args += dataset_args(config.dataset_preprocess_config)
    return args + knob_args(config)


def knob_args(config: types.TorchTuneConfig) -> list[str]:
    """trainjob's TorchTuneConfig fields (learning rate, steps, sequence length, accumulation)
    as the torchtune config keys they set, then the free-form ``overrides``."""
    args: list[str] = []
    if config.learning_rate is not None:
        rate = config.learning_rate
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not rate > 0:
            raise ValueError(f"learning_rate must be a number > 0, got {rate!r}")
        args.append(f"optimizer.lr={rate}")
    for name, key in (
        ("gradient_accumulation_steps", "gradient_accumulation_steps"),
        ("max_steps_per_epoch", "max_steps_per_epoch"),
        ("max_seq_len", "tokenizer.max_seq_len"),
    ):
        value = getattr(config, name)
        if value is not None:
            args.append(f"{key}={_positive(name, value)}")
    if config.warmup_steps is not None:
        warmup = config.warmup_steps
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise ValueError(f"warmup_steps must be an integer >= 0, got {warmup!r}")
        args.append(f"lr_scheduler.num_warmup_steps={warmup}")
    for item in config.overrides or ():
        if not isinstance(item, str) or "=" not in item:
            raise ValueError(f"overrides must be key=value strings, got {item!r}")
        args.append(item)
    return args


def lora_args(peft: types.LoraConfig) -> list[str]:
    if not isinstance(peft, types.LoraConfig):
        raise ValueError(f"Invalid PEFT config type: {type(peft)}.")
    args = []
    for name in (
        "apply_lora_to_mlp",
        "apply_lora_to_output",
        "lora_rank",
        "lora_alpha",
        "lora_dropout",
        "quantize_base",
        "use_dora",
    ):
        value = getattr(peft, name)
        if value is not None:
            args.append(f"model.{name}={value}")
    if peft.lora_attn_modules:
        args.append(f"model.lora_attn_modules=[{','.join(peft.lora_attn_modules)}]")
    return args


def dataset_args(ds: types.TorchTuneInstructDataset) -> list[str]:
    if not isinstance(ds, types.TorchTuneInstructDataset):
        raise ValueError(f"Invalid dataset preprocess config type: {type(ds)}.")
    args = [f"dataset={c.TORCH_TUNE_INSTRUCT_DATASET}"]
    if ds.source:
        args.append(f"dataset.source={_enum_value(ds.source, types.DataFormat, 'data format')}")
    if ds.split:
        args.append(f"dataset.split={ds.split}")
    if ds.train_on_input is not None:
        args.append(f"dataset.train_on_input={ds.train_on_input}")
    if ds.new_system_prompt:
        args.append(f"dataset.new_system_prompt={ds.new_system_prompt}")
    if ds.column_map:
        args.append(f"dataset.column_map={ds.column_map}")
    return args


# ---------------------------------------------------------------------------------------------
# TRLConfig


def _fetched_by(uri: str, name: str) -> bool:
    """Whether ``name`` (a TRLConfig model or dataset) is what the initializer at ``uri``
    fetches: the URI itself, or the Hub name of an ``hf://`` URI."""
    if name == uri:
        return True
    return uri.startswith("hf://") and name.strip("/") == uri[len("hf://") :].strip("/")


def trl_args(config: types.TRLConfig, initializer: types.Initializer | None = None) -> list[str]:
    """``[<method>, --flag, value, ...]`` for the ``trl`` command: the config's flags, with the
    initializers' copies (``/workspace/model``, ``/workspace/dataset``) in place of what they
    fetched, and ``--output_dir /workspace/output`` (the runtime's volume) unless set."""
    model, dataset = config.model_name_or_path, config.dataset_name
    init_model = initializer.model if initializer is not None else None
    init_dataset = initializer.dataset if initializer is not None else None
    if init_model is not None and _fetched_by(init_model.storage_uri, model):
        model = c.MODEL_PATH
    if init_dataset is not None and _fetched_by(init_dataset.storage_uri, dataset):
        dataset = c.DATASET_PATH
    args = dataclasses.replace(config, model_name_or_path=model, dataset_name=dataset).to_args()
    extra = config.extra_args or []
    if not any(a == "--output_dir" or a.startswith("--output_dir=") for a in extra):
        args += ["--output_dir", c.OUTPUT_PATH]
    return args


def trl_command(
    runtime: types.Runtime, config: types.TRLConfig, initializer: types.Initializer | None = None
) -> tuple[list[str], list[str]]:
    """``(command, args)`` of a TRLConfig for ``runtime``: ``trl <method> --flag ...`` (trainjob's
    ``trl-distributed``), or, for a runtime whose command runs a TRL script as a module
    (KEP-2839's ``torchrun -m trl.scripts.sft``), that command with the method's script
    (``trl.scripts.dpo`` for DPO) and the flags alone."""
    args = trl_args(config, initializer)
    command = list(runtime.trainer.command)
    if "-m" in command:
        at = command.index("-m") + 1
        if at < len(command) and command[at].startswith(c.TRL_SCRIPTS):
            command[at] = c.TRL_SCRIPTS + config.method.value
            return command, args[1:]
    return list(c.TRL_COMMAND), args


def framework_of(config: Any) -> str:
    """The runtime framework label a BuiltinTrainer/ConfigTrainer config is for."""
    return c.TRL if isinstance(config, types.TRLConfig) else c.TORCH_TUNE


def builtin_trainer(
    runtime: types.Runtime,
    trainer: types.BuiltinTrainer | types.ConfigTrainer,
    initializer: types.Initializer | None = None,
) -> dict[str, Any]:
    """``spec.trainer`` for a BuiltinTrainer or ConfigTrainer: TorchTune's runtime command plus
    config overrides, or ``trl`` with the TRLConfig's flags."""
    config = trainer.config
    if not isinstance(config, types.TorchTuneConfig | types.TRLConfig):
        raise ValueError(f"The BuiltinTrainer config is invalid: {config}")
    framework = framework_of(config)
    if runtime.trainer.framework != framework:
        raise ValueError(
            f"{type(config).__name__} supports frameworks ('{framework}',), but runtime "
            f"'{runtime.name}' has framework '{runtime.trainer.framework}'"
        )
    nodes, resources = config.num_nodes, config.resources_per_node
    out: dict[str, Any] = {}
    if isinstance(trainer, types.ConfigTrainer):
        nodes = trainer.num_nodes if trainer.num_nodes is not None else nodes
        resources = trainer.resources_per_node or resources
        if trainer.image:
            out["image"] = trainer.image
    if (count := _num_nodes(nodes)) is not None:
        out["numNodes"] = count
    if resources:
        out["resourcesPerNode"] = runtimes.resources_per_node(resources)
    if isinstance(config, types.TRLConfig):
        out["command"], out["args"] = trl_command(runtime, config, initializer)
    else:
        out["command"] = list(runtime.trainer.command)
        out["args"] = torchtune_args(config, initializer)
    return out


# ---------------------------------------------------------------------------------------------
# Initializers


def initializer_env(init: types.BaseInitializer, skip: set[str]) -> list[dict[str, str]]:
    """Optional initializer fields as env vars: NAME upper-cased, lists joined with ','."""
    env = []
    for f in dataclasses.fields(init):
        if f.name in skip:
            continue
        value = getattr(init, f.name)
        if value is None:
            continue
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        env.append({"name": f.name.upper(), "value": str(value)})
    return env


def dataset_initializer(ds: Any) -> dict[str, Any]:
    if isinstance(ds, types.HuggingFaceDatasetInitializer | types.S3DatasetInitializer):
        out: dict[str, Any] = {"storageUri": ds.storage_uri}
        env = initializer_env(ds, {"storage_uri"})
    elif isinstance(ds, types.DataCacheInitializer):
        out = {"storageUri": ds.storage_uri}
        env = [
            {"name": "CLUSTER_SIZE", "value": str(ds.num_data_nodes + 1)},
            {"name": "METADATA_LOC", "value": ds.metadata_loc},
            *initializer_env(ds, {"storage_uri", "metadata_loc", "num_data_nodes"}),
        ]
    else:
        raise ValueError(f"Dataset initializer type is invalid: {type(ds)}")
    if env:
        out["env"] = env
    return out


def model_initializer(model: Any) -> dict[str, Any]:
    if not isinstance(model, types.HuggingFaceModelInitializer | types.S3ModelInitializer):
        raise ValueError(f"Model initializer type is invalid: {type(model)}")
    out: dict[str, Any] = {"storageUri": model.storage_uri}
    env = initializer_env(model, {"storage_uri"})
    if env:
        out["env"] = env
    return out


def initializer_spec(init: types.Initializer | None) -> dict[str, Any] | None:
    if init is None:
        return None
    if not isinstance(init, types.Initializer):
        raise ValueError(f"initializer must be an Initializer, got {type(init).__name__}")
    out: dict[str, Any] = {}
    if init.dataset is not None:
        out["dataset"] = dataset_initializer(init.dataset)
    if init.model is not None:
        out["model"] = model_initializer(init.model)
    return out or None


# ---------------------------------------------------------------------------------------------
# The TrainJob


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
) -> dict[str, Any]:
    """The TrainJob to submit, as the dict Kubernetes would store. Raises ValueError if invalid.

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
        base = [e for e in _env_list(extra_env) or () if e["name"] not in own]
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
    model(job)  # validate now: errors before submission, as field paths
    return job


def model(job: dict[str, Any]) -> TrainJobModel:
    """The TrainJob dict as the API model; ValueError listing every invalid field."""
    try:
        tj = load.parse(job)
    except InvalidError as e:
        raise ValueError(str(e)) from None
    assert isinstance(tj, TrainJobModel)
    errors = validation.validate_trainjob(tj)
    if errors:
        raise ValueError(str(InvalidError(errors, f"{c.TRAINJOB_KIND}.{c.GROUP}", job_name(job))))
    return tj


def job_name(job: dict[str, Any]) -> str:
    return str((job.get("metadata") or {}).get("name") or "")
