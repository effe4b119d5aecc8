"""A BuiltinTrainer or ConfigTrainer -> ``spec.trainer``: TorchTune's ``tune run`` with
``key=value`` overrides, or ``trl`` with the TRLConfig's flags. Used by
:mod:`trainjob.client.builder`.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any
from urllib.parse import urlparse

from trainjob.client import constants as c
from trainjob.client import runtimes, types
from trainjob.client.trainer_fields import num_nodes, positive


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
        args.append(f"batch_size={positive('batch_size', config.batch_size)}")
    if config.epochs is not None:
        args.append(f"epochs={positive('epochs', config.epochs)}")
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
            args.append(f"{key}={positive(name, value)}")
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
    if (count := num_nodes(nodes)) is not None:
        out["numNodes"] = count
    if resources:
        out["resourcesPerNode"] = runtimes.resources_per_node(resources)
    if isinstance(config, types.TRLConfig):
        out["command"], out["args"] = trl_command(runtime, config, initializer)
    else:
        out["command"] = list(runtime.trainer.command)
        out["args"] = torchtune_args(config, initializer)
    return out
