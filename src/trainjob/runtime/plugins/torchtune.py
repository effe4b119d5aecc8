"""TorchTune: how the Torch plugin turns a trainer command of ``tune run`` into a fine-tuning run.

Upstream keeps no torchtune code in its trainer image: the Torch plugin (``plugins/torch/
torchtune.go``) picks the recipe and config from the runtime's name, the node layout and the
user's ``key=value`` args (LoRA, QLoRA, DoRA), and appends the runtime's immutable overrides
(``output_dir=``, ``tokenizer.path=``, ...). The final container command is::

    tune run [--rdzv_endpoint=<trainjob>-node-0-0.<trainjob>:29500] <recipe> --config <cfg> <overrides>

and the container args stay the user's ``trainer.args``. Pure functions, called by
:mod:`trainjob.runtime.plugins.torch` (``enforce_ml_policy`` and ``validate``).
"""

from __future__ import annotations

from collections.abc import Sequence

from trainjob.api import constants as c
from trainjob.api import quantity
from trainjob.api.k8s_types import ResourceRequirements
from trainjob.api.trainer import TrainJob
from trainjob.errors import FieldError, GoStruct

NumProc = int | str
"""A resolved ``numProcPerNode``: a count, or ``auto``/``gpu`` left for torchrun to resolve."""


def is_torchtune(command: Sequence[str] | None) -> bool:
    """Whether a trainer command asks for the TorchTune rewrite (exactly ``["tune", "run"]``)."""
    return command is not None and tuple(command) == c.TORCHTUNE_ENTRYPOINT


def model_from_runtime_ref(name: str) -> str:
    """``torchtune-llama3.2-1b`` -> ``llama3_2/1B``; "" unless the name has exactly 3 parts."""
    fields = name.split("-")
    if len(fields) != 3:
        return ""
    return f"{fields[1].replace('.', '_')}/{fields[2].upper()}"


def _key_value(arg: str) -> tuple[str, str]:
    key, _, value = arg.partition("=")
    return key.strip(), value.strip()


def is_lora(args: Sequence[str] | None) -> bool:
    """LoRA is on when any arg sets ``model.lora_attn_modules``."""
    return any(c.TORCHTUNE_LORA_ATTN_MODULES in arg for arg in args or ())


def is_qlora(args: Sequence[str] | None) -> bool:
    """QLoRA: ``model.quantize_base=True`` (any case) unless ``model.use_dora=True`` (DoRA wins)."""
    quantize = False
    for arg in args or ():
        key, value = _key_value(arg)
        if value.lower() != "true":
            continue
        if key == c.TORCHTUNE_USE_DORA:
            return False
        if key == c.TORCHTUNE_QUANTIZE_BASE:
            quantize = True
    return quantize


def recipe_and_config(
    num_nodes: int, num_proc_per_node: NumProc, gpus: int, model: str, args: Sequence[str] | None
) -> tuple[str, str]:
    """The torchtune recipe and config name for this node layout and these args.

    Single device (one node and one process or one GPU): QLoRA, LoRA or full single-device
    recipes. One node with more devices: the distributed QLoRA, LoRA or full recipes. More nodes:
    the full distributed recipe with the multi-node config (LoRA is rejected by validation).
    """
    recipe = c.TORCHTUNE_FULL_FINETUNE_DISTRIBUTED
    suffix = c.TORCHTUNE_FULL_FINETUNE_MULTI_DEVICES_CONFIG_SUFFIX
    single_device = num_proc_per_node == 1 or gpus == 1
    if num_nodes == 1 and single_device:
        if is_qlora(args):
            recipe = c.TORCHTUNE_LORA_FINETUNE_SINGLE_DEVICE
            suffix = c.TORCHTUNE_QLORA_FINETUNE_SINGLE_DEVICE_CONFIG_SUFFIX
        elif is_lora(args):
            recipe = c.TORCHTUNE_LORA_FINETUNE_SINGLE_DEVICE
            suffix = c.TORCHTUNE_LORA_FINETUNE_SINGLE_DEVICE_CONFIG_SUFFIX
        else:
            recipe = c.TORCHTUNE_FULL_FINETUNE_SINGLE_DEVICE
            suffix = c.TORCHTUNE_FULL_FINETUNE_SINGLE_DEVICE_CONFIG_SUFFIX
    elif num_nodes == 1 and is_qlora(args):
        recipe = c.TORCHTUNE_LORA_FINETUNE_DISTRIBUTED
        suffix = c.TORCHTUNE_QLORA_FINETUNE_DISTRIBUTED_CONFIG_SUFFIX
    elif num_nodes == 1 and is_lora(args):
        recipe = c.TORCHTUNE_LORA_FINETUNE_DISTRIBUTED
        suffix = c.TORCHTUNE_LORA_FINETUNE_DISTRIBUTED_CONFIG_SUFFIX
    elif num_nodes > 1:
        suffix = c.TORCHTUNE_FULL_FINETUNE_MULTI_NODES_CONFIG_SUFFIX
    return recipe, model + suffix


def needs_rdzv_endpoint(num_nodes: int, num_proc_per_node: NumProc, gpus: int) -> bool:
    """Rendezvous only for more than one process: several nodes, an int > 1, or auto with > 1 GPU."""
    if num_nodes > 1:
        return True
    if isinstance(num_proc_per_node, int):
        return num_proc_per_node > 1
    return gpus > 1


def rdzv_endpoint(trainjob_name: str) -> str:
    """``--rdzv_endpoint=<trainjob>-node-0-0.<trainjob>:29500`` (the first node pod)."""
    host = f"{trainjob_name}-{c.JOB_NODE}-0-0.{trainjob_name}"
    return f"{c.TORCHTUNE_ARG_RDZV_ENDPOINT}={host}:{c.CONTAINER_TRAINER_PORT}"


def immutable_overrides(runtime_command: Sequence[str] | None) -> list[str]:
    """The runtime node command's ``output_dir=``/``tokenizer.*=``/``checkpointer.*=`` items."""
    return [
        item
        for item in runtime_command or ()
        if item.split("=", 1)[0] in c.TORCHTUNE_IMMUTABLE_CONFIGS
    ]


def command(
    *,
    trainjob_name: str,
    runtime_ref_name: str,
    num_nodes: int,
    num_proc_per_node: NumProc,
    gpus: int,
    args: Sequence[str] | None,
    runtime_command: Sequence[str] | None,
) -> list[str]:
    """The node container's full ``tune run ...`` command (the args stay the user's)."""
    out = list(c.TORCHTUNE_ENTRYPOINT)
    if needs_rdzv_endpoint(num_nodes, num_proc_per_node, gpus):
        out.append(rdzv_endpoint(trainjob_name))
    recipe, config = recipe_and_config(
        num_nodes, num_proc_per_node, gpus, model_from_runtime_ref(runtime_ref_name), args
    )
    out += [recipe, c.TORCHTUNE_ARG_CONFIG, config]
    out += immutable_overrides(runtime_command)
    return out


def validate(trainjob: TrainJob, gpus: int) -> list[FieldError]:
    """Upstream ``validateTorchTune``; ``gpus`` per node from resourcesPerNode or the runtime."""
    trainer = trainjob.spec.trainer
    if trainer is None:
        return []
    errors: list[FieldError] = []
    ref_name = trainjob.spec.runtime_ref.name
    model = model_from_runtime_ref(ref_name)
    if model not in c.TORCHTUNE_SUPPORTED_PRETRAINED_MODELS:
        errors.append(
            FieldError.invalid(
                "spec.runtimeRef.name",
                ref_name,
                f"must have a supported pretrained model, invalid model configured: {model}",
            )
        )
    num_nodes = trainer.num_nodes if trainer.num_nodes is not None else 1
    if num_nodes > 1 and model != c.TORCHTUNE_MODEL_LLAMA3_3_70B:
        errors.append(
            FieldError.invalid("spec.trainer.numNodes", num_nodes, f"must be 1 for {model} model")
        )
    num_proc: NumProc = "auto"
    if trainer.num_proc_per_node is not None:
        num_proc = trainer.num_proc_per_node
        if isinstance(num_proc, str) and num_proc.isdigit():
            num_proc = int(num_proc)
    _, config = recipe_and_config(num_nodes, num_proc, gpus, model, trainer.args)
    if c.TORCHTUNE_QLORA_FINETUNE_DISTRIBUTED_CONFIG_SUFFIX in config:
        if model == c.TORCHTUNE_MODEL_QWEN2_5_1_5B:
            errors.append(
                FieldError.invalid(
                    "spec.runtimeRef.name", ref_name, f"QLoRA is not supported for {model} model"
                )
            )
        if c.TORCHTUNE_QLORA_FINETUNE_SINGLE_DEVICE_CONFIG_SUFFIX not in config and model in (
            c.TORCHTUNE_MODEL_LLAMA3_2_1B,
            c.TORCHTUNE_MODEL_LLAMA3_2_3B,
        ):
            rpn = _go_resources(trainer.resources_per_node)
            # upstream says "must be auto or 1" to "auto" too; auto is one process per GPU, so
            # say what it came to and what to change (issue 12: the message contradicted itself)
            why = (
                f"auto runs one process per GPU ({gpus} per node here), and QLoRA for {model} "
                "model runs one process: set numProcPerNode to 1 or give resourcesPerNode 1 GPU"
                if num_proc == "auto"
                else f"must be auto or 1 for {model} model when using QLoRA"
            )
            errors.append(FieldError.invalid("spec.trainer.numProcPerNode", num_proc, why))
            errors.append(
                FieldError.invalid(
                    "spec.trainer.resourcesPerNode",
                    rpn,
                    f"must have gpu resource with value 1 for {model} model when using QLoRA",
                )
            )
    if num_nodes > 1 and (is_lora(trainer.args) or is_qlora(trainer.args)):
        errors.append(
            FieldError.invalid(
                "spec.trainer.numNodes",
                num_nodes,
                "LoRA fine-tuning is not supported for multi-node training in TorchTune",
            )
        )
    for i, arg in enumerate(trainer.args or ()):
        key = arg.split("=", 1)[0]
        if key in c.TORCHTUNE_IMMUTABLE_CONFIGS:
            errors.append(
                FieldError.invalid(
                    f"spec.trainer.args[{i}]",
                    arg,
                    f'must not set immutable config "{key}" in trainer args; '
                    "it is managed by the runtime",
                )
            )
    return errors


def _go_resources(rr: ResourceRequirements | None) -> GoStruct | None:
    """``resourcesPerNode`` as upstream's error prints it: quantities as canonical strings."""
    if rr is None:
        return None
    out = GoStruct()
    for kind in ("limits", "requests"):
        values = getattr(rr, kind)
        if values:
            out[kind] = {k: _canonical(v) for k, v in values.items()}
    return out


def _canonical(value: str | int | float) -> str | int | float:
    try:
        return str(quantity.parse(value))
    except quantity.QuantityError:
        return value
