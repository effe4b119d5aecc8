"""The typed training config: a recipe's defaults with the command's ``key=value`` overrides.

``tune run`` merges dotted overrides (``batch_size=2``, ``model.lora_rank=8``,
``dataset.column_map={'input': 'q'}``) into a YAML recipe config; here every key this trainer
understands is listed in :data:`.overrides.KEYS` with its parser, so an unknown or malformed
override is a one-line :class:`TrainerError` rather than a silent no-op. Called by :mod:`.launch` (to check
before starting processes) and by :mod:`.train` (each rank parses the same argv again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trainjob.trainers.llm import defaults, recipes, schedule
from trainjob.trainers.llm.errors import TrainerError
from trainjob.trainers.llm.overrides import (
    CHAT_DATASET,
    CHECK_ONLY,
    KEYS,
    LORA_ATTN_MODULES,
    Value,
    parse_overrides,
)


@dataclass(frozen=True)
class DatasetConfig:
    """``dataset.*``: an instruct dataset read from local files."""

    component: str = "torchtune.datasets.instruct_dataset"
    source: str | None = None
    data_dir: str | None = None
    data_files: tuple[str, ...] = ()
    split: str = "train"
    column_map: dict[str, str] = field(default_factory=dict)
    train_on_input: bool = False
    new_system_prompt: str | None = None
    packed: bool = False
    """Pack several examples into each sequence of ``tokenizer.max_seq_len`` tokens (TRL's
    best-fit packing; attention stays within each example)."""
    conversation_column: str = "messages"
    """chat_dataset: the column holding each conversation (a list of messages)."""
    conversation_style: str = "openai"
    """chat_dataset: ``openai`` ({role, content}) or ``sharegpt`` ({from, value})."""

    @property
    def chat(self) -> bool:
        """Whether rows are conversations (``torchtune.datasets.chat_dataset``)."""
        return self.component == CHAT_DATASET


@dataclass(frozen=True)
class ValDatasetConfig:
    """``dataset_val.*``: the eval split, read like ``dataset`` (same files unless given)."""

    split: str | None = None
    data_dir: str | None = None
    data_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoraConfig:
    """``model.*``: the LoRA adapter (ignored by full fine-tuning, where setting it is an error)."""

    lora_attn_modules: tuple[str, ...] = ("q_proj", "v_proj", "output_proj")
    apply_lora_to_mlp: bool = True
    apply_lora_to_output: bool = False
    lora_rank: int = 64
    lora_alpha: float = 128.0
    lora_dropout: float = 0.0
    use_dora: bool = False
    quantize_base: bool = False


@dataclass(frozen=True)
class TrainConfig:
    """Everything one training run needs, after defaults and overrides."""

    recipe: recipes.Recipe
    checkpoint_dir: str
    output_dir: str
    epochs: int = 1
    batch_size: int = 4
    max_steps_per_epoch: int | None = None
    gradient_accumulation_steps: int = 1
    lr: float = 2e-5
    weight_decay: float = 0.01
    lr_scheduler: str | None = None
    """None: constant ``lr``; :data:`.schedule.COSINE`: torchtune's cosine with warmup."""
    warmup_steps: int = 0
    num_cycles: float = 0.5
    clip_grad_norm: float | None = None
    activation_checkpointing: bool = False
    fsdp: bool = False
    """Shard parameters, gradients and optimizer state over the processes (FSDP2, as torchtune's
    distributed recipes do) instead of a full replica on each (DDP). On by default for the
    ``*_full_multinode`` configs: a model too large for one node (KEP-2401's 70B example)."""
    fsdp_reshard_after_forward: bool = True
    """FSDP2: free each layer's gathered parameters after its forward (False: keep them for the
    backward, less communication and more memory; torchtune's key)."""
    fsdp_cpu_offload: bool = False
    """FSDP2: keep the sharded parameters and optimizer state in CPU memory between uses (GPU)."""
    save_adapter_weights_only: bool = False
    """LoRA: save only the adapter (False, torchtune's default: the merged model too)."""
    save_every_n_steps: int | None = None
    """A resumable checkpoint every N optimizer steps (besides the one after each epoch)."""
    resume_from_checkpoint: bool = True
    """Continue from the newest complete checkpoint in output_dir when there is one."""
    run_val_every_n_steps: int | None = None
    """Eval loss every N steps (None: after each epoch) when ``dataset_val`` is set."""
    log_every_n_steps: int = 1
    shuffle: bool = True
    compile: bool = False
    fused: bool = False
    export_uri: str | None = None
    """After training, upload output_dir's model or adapter here (s3://bucket/prefix, hf://repo)."""
    dtype: str | None = None
    seed: int | None = None
    device: str | None = None
    loss: str | None = None
    tokenizer_path: str | None = None
    tokenizer_merges_file: str | None = None
    max_seq_len: int | None = None
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    dataset_val: ValDatasetConfig | None = None
    lora: LoraConfig = field(default_factory=LoraConfig)


def recipe_defaults(
    rec: recipes.Recipe,
) -> tuple[dict[str, Value], dict[str, Value], dict[str, Value]]:
    """torchtune 0.6.1's values for this config (:mod:`.defaults`): top, dataset and LoRA fields."""
    d = defaults.for_config(rec.config)
    top: dict[str, Value] = {
        "batch_size": d.batch_size,
        "gradient_accumulation_steps": d.gradient_accumulation_steps,
        "epochs": d.epochs,
        "lr": d.lr,
        "weight_decay": d.weight_decay,
        "clip_grad_norm": d.clip_grad_norm,
        "activation_checkpointing": d.activation_checkpointing,
        "save_adapter_weights_only": d.save_adapter_weights_only,
        "max_seq_len": d.max_seq_len,
        "fsdp": rec.variant == "full_multinode",
    }
    if d.warmup_steps is not None:
        top["lr_scheduler"] = schedule.COSINE
        top["warmup_steps"] = d.warmup_steps
    dataset: dict[str, Value] = {"packed": d.packed}
    lora: dict[str, Value] = {}
    if rec.method is recipes.Method.LORA and d.lora_rank is not None:
        lora = {
            "lora_rank": d.lora_rank,
            "lora_alpha": d.lora_alpha,
            "lora_dropout": d.lora_dropout,
            "lora_attn_modules": d.lora_attn_modules,
            "apply_lora_to_mlp": d.apply_lora_to_mlp,
            "apply_lora_to_output": d.apply_lora_to_output,
        }
    if rec.method is recipes.Method.LORA:
        lora["quantize_base"] = rec.qlora
    return top, dataset, lora


def build(recipe: str, config: str, overrides: Sequence[str]) -> TrainConfig:
    """The run's config: ``RECIPE --config CONFIG`` defaults (torchtune's for that config), then
    the overrides, then checks."""
    rec = recipes.parse(recipe, config)
    parsed = parse_overrides(overrides)
    top, dataset, lora = recipe_defaults(rec)
    val: dict[str, Value] = {}
    for key, (_raw, value) in parsed.items():
        target = KEYS[key][0]
        if target.startswith("lora.") and rec.method is recipes.Method.FULL:
            raise TrainerError(
                f'override "{key}" is for LoRA, but recipe "{rec.recipe}" is a full fine-tune; '
                f"use lora_finetune_{'distributed' if rec.distributed else 'single_device'} "
                f"--config {rec.model}_lora{'' if rec.distributed else '_single_device'}, "
                f'or drop "{key}"'
            )
        if target in CHECK_ONLY:
            continue
        scope, _, name = target.rpartition(".")
        {"": top, "dataset": dataset, "lora": lora, "val": val}[scope][name] = value
    for name in ("output_dir", "checkpoint_dir"):
        if not top.get(name):
            key = "checkpointer.checkpoint_dir" if name == "checkpoint_dir" else name
            raise TrainerError(
                f"{key} is not set; add {key}=<dir> "
                f"(the runtimes use {key}=/workspace/{'model' if name == 'checkpoint_dir' else 'output'})"
            )
    _check_scheduler(parsed, top)
    _check_fsdp(rec, parsed, top)
    _check_lora(lora)
    if not dataset.get("data_dir") and not dataset.get("data_files"):
        found = initializer_dataset_dir(str(top["checkpoint_dir"]))
        if found is not None:
            dataset["data_dir"] = found
    _check_dataset(dataset)
    if dataset.get("packed") and not top.get("max_seq_len"):
        raise TrainerError(
            "dataset.packed=True needs tokenizer.max_seq_len=N (the length of each packed sequence)"
        )
    dataset_val = None
    if val:
        if "split" not in val:
            raise TrainerError(
                "dataset_val.* is set but not dataset_val.split; add dataset_val.split=validation"
            )
        dataset_val = ValDatasetConfig(**val)
    elif "run_val_every_n_steps" in parsed:
        raise TrainerError(
            "run_val_every_n_steps is set but there is no eval data; add dataset_val.split=validation"
        )
    return TrainConfig(
        recipe=rec,
        dataset=DatasetConfig(**dataset),
        dataset_val=dataset_val,
        lora=LoraConfig(**lora),
        **top,
    )


def initializer_dataset_dir(checkpoint_dir: str) -> str | None:
    """``/workspace/dataset`` beside ``/workspace/model`` when it exists: where the dataset
    initializer writes. The SDK passes no ``dataset.data_dir`` for an S3 dataset (nor upstream's
    torchtune, which then downloads its default dataset from the Hub); reading what the
    initializer fetched is what the user asked for."""
    beside = Path(checkpoint_dir).parent / "dataset"
    return str(beside) if beside.is_dir() and any(beside.iterdir()) else None


def _check_scheduler(parsed: dict[str, tuple[str, Value]], top: dict[str, Value]) -> None:
    """``lr_scheduler.num_warmup_steps``/``num_cycles`` alone select the cosine schedule, as
    they would extend a torchtune config's; with ``lr_scheduler=null`` they contradict it."""
    tuning = [
        k for k in ("lr_scheduler.num_warmup_steps", "lr_scheduler.num_cycles") if k in parsed
    ]
    if not tuning:
        return
    named = [k for k in ("lr_scheduler", "lr_scheduler._component_") if k in parsed]
    if named and parsed[named[-1]][1] is None:
        raise TrainerError(
            f"{named[-1]}=null turns the scheduler off, but {tuning[0]} is set; drop one of them"
        )
    top["lr_scheduler"] = schedule.COSINE


FSDP_KEYS = ("fsdp_reshard_after_forward", "fsdp_cpu_offload")
"""The FSDP2 options, which mean nothing without ``fsdp``."""


def _check_fsdp(
    rec: recipes.Recipe,
    parsed: dict[str, tuple[str, Value]],
    top: dict[str, Value],
) -> None:
    """FSDP shards over the processes of a distributed recipe; its options need it on."""
    if not top.get("fsdp"):
        on = [k for k in FSDP_KEYS if k in parsed]
        if on:
            raise TrainerError(f"{on[0]} is an FSDP option but fsdp is off; add fsdp=True")
        return
    if not rec.distributed:
        raise TrainerError(
            f'fsdp=True shards the model over processes, but recipe "{rec.recipe}" runs one; '
            f"use {rec.method}_finetune_distributed, or drop fsdp"
        )
    if rec.method is recipes.Method.LORA:
        raise TrainerError(
            "fsdp=True shards a full fine-tune; LoRA trains with a replica of the frozen base on "
            "each process here (DDP of the small adapter): drop fsdp, or use "
            "full_finetune_distributed"
        )


def _check_lora(lora: dict[str, Value]) -> None:
    modules = lora.get("lora_attn_modules", LoraConfig.lora_attn_modules)
    unknown = [m for m in modules if m not in LORA_ATTN_MODULES]
    if unknown:
        raise TrainerError(
            f'model.lora_attn_modules has unknown module "{unknown[0]}"; '
            f"known: {', '.join(LORA_ATTN_MODULES)}"
        )
    dropout = lora.get("lora_dropout", 0.0)
    if not 0.0 <= dropout < 1.0:
        raise TrainerError(f"model.lora_dropout={dropout} must be in [0, 1)")


def _check_dataset(dataset: dict[str, Value]) -> None:
    if dataset.get("data_dir") and dataset.get("data_files"):
        raise TrainerError("dataset.data_dir and dataset.data_files are both set; keep one of them")
    if not dataset.get("data_dir") and not dataset.get("data_files"):
        raise TrainerError(
            "no dataset: set dataset.data_dir=<dir> or dataset.data_files=<file> "
            "(the runtimes use dataset.data_dir=/workspace/dataset/data)"
        )
