"""The typed training config: a recipe's defaults with the command's ``key=value`` overrides.

``tune run`` merges dotted overrides (``batch_size=2``, ``model.lora_rank=8``,
``dataset.column_map={'input': 'q'}``) into a YAML recipe config; here every key this trainer
understands is listed in :data:`KEYS` with its parser, so an unknown or malformed override is a
one-line :class:`TrainerError` rather than a silent no-op. Called by :mod:`.launch` (to check
before starting processes) and by :mod:`.train` (each rank parses the same argv again).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainjob.trainers.llm import defaults, recipes, schedule
from trainjob.trainers.llm.errors import TrainerError

Value = Any
"""A parsed override value (bool, int, float, str, list of str, dict of str, or None)."""


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


# ---- value parsers: each takes the raw string and returns the typed value or raises ValueError.


def _literal(raw: str) -> Value:
    text = raw.strip()
    if text.lower() in ("null", "none", "~", ""):
        return None
    if text.lower() == "true":
        return True
    if text.lower() == "false":
        return False
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _int(raw: str) -> Value:
    value = _literal(raw)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("must be an integer")
    return value


def _non_negative_int(raw: str) -> Value:
    value = _int(raw)
    if value < 0:
        raise ValueError("must be an integer >= 0")
    return value


def _positive_int(raw: str) -> Value:
    value = _int(raw)
    if value < 1:
        raise ValueError("must be an integer >= 1")
    return value


def _optional_positive_int(raw: str) -> Value:
    return None if _literal(raw) is None else _positive_int(raw)


def _optional_int(raw: str) -> Value:
    return None if _literal(raw) is None else _int(raw)


def _float(raw: str) -> Value:
    value = _literal(raw)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number")
    return float(value)


def _positive_float(raw: str) -> Value:
    value = _float(raw)
    if not value > 0:
        raise ValueError("must be a number > 0")
    return value


def _non_negative_float(raw: str) -> Value:
    value = _float(raw)
    if not value >= 0:
        raise ValueError("must be a number >= 0")
    return value


def _bool(raw: str) -> Value:
    value = _literal(raw)
    if not isinstance(value, bool):
        raise ValueError("must be True or False")
    return value


def _str(raw: str) -> Value:
    return raw.strip()


def _optional_str(raw: str) -> Value:
    return None if _literal(raw) is None else raw.strip()


def _str_list(raw: str) -> Value:
    """``[q_proj,v_proj]``, ``['q_proj', 'v_proj']`` or ``q_proj,v_proj``."""
    text = raw.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    items = [item.strip().strip("'\"") for item in text.split(",")]
    return tuple(item for item in items if item)


def _str_dict(raw: str) -> Value:
    value = _literal(raw)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError("must be a dict of column names, e.g. {'input': 'question'}")
    unknown = [k for k in value if k not in COLUMNS]
    if unknown:
        raise ValueError(
            f"maps unknown column {unknown[0]!r}; the keys are the dataset's roles "
            f"({', '.join(COLUMNS)}), the values your column names, e.g. {{'input': 'question'}}"
        )
    return dict(value)


COLUMNS = ("instruction", "input", "output")
"""The instruct dataset's column roles, the keys of ``dataset.column_map``."""


def _dtype(raw: str) -> Value:
    text = raw.strip().lower().removeprefix("datatype.")
    if text in ("", "null", "none"):
        return None
    if text not in ("fp32", "bf16", "fp16"):
        raise ValueError("must be fp32 or bf16")
    return text


def _device(raw: str) -> Value:
    text = raw.strip().lower()
    if text not in ("cpu", "cuda"):
        raise ValueError("must be cpu or cuda")
    return text


INSTRUCT_DATASET = "torchtune.datasets.instruct_dataset"
CHAT_DATASET = "torchtune.datasets.chat_dataset"
DATASETS = (
    INSTRUCT_DATASET,
    CHAT_DATASET,
    "torchtune.datasets.alpaca_dataset",
    "torchtune.datasets.alpaca_cleaned_dataset",
)
"""``dataset=`` components: instruct rows (Alpaca's are instruct rows) or chat conversations."""


def _component(raw: str) -> Value:
    text = raw.strip()
    if text not in DATASETS:
        raise ValueError(
            f"must be {INSTRUCT_DATASET} (input/output rows) or {CHAT_DATASET} (conversations)"
        )
    return CHAT_DATASET if text == CHAT_DATASET else INSTRUCT_DATASET


def _style(raw: str) -> Value:
    text = raw.strip().lower()
    if text not in ("openai", "sharegpt"):
        raise ValueError("must be openai ({role, content} messages) or sharegpt ({from, value})")
    return text


def _optimizer(raw: str) -> Value:
    text = raw.strip()
    if text not in ("torch.optim.AdamW", "AdamW", "adamw"):
        raise ValueError("must be torch.optim.AdamW (the one optimizer supported)")
    return text


def _optional_positive_float(raw: str) -> Value:
    return None if _literal(raw) is None else _positive_float(raw)


def _false_only(what: str) -> Parser:
    def parse(raw: str) -> Value:
        if _bool(raw):
            raise ValueError(f"is not supported ({what}); set it to False or drop it")
        return False

    return parse


def _export_uri(raw: str) -> Value:
    text = raw.strip()
    if text.lower() in ("", "null", "none"):
        return None
    if not text.startswith(("s3://", "hf://")):
        raise ValueError("must be an s3://bucket/prefix or hf://owner/repo URI")
    return text


def _scheduler(raw: str) -> Value:
    text = raw.strip()
    if text.lower() in ("", "null", "none"):
        return None
    if text not in schedule.ALIASES:
        raise ValueError(
            f"must be {schedule.COSINE} (cosine with warmup, the one scheduler supported) or null"
        )
    return schedule.COSINE


LOSSES = ("torchtune.modules.loss.CEWithChunkedOutputLoss", "torch.nn.CrossEntropyLoss")
"""``loss=`` values accepted: both are token-level cross-entropy over the unmasked labels."""


def _loss(raw: str) -> Value:
    text = raw.strip()
    if text.lower() in ("", "null", "none"):
        return None
    if text not in LOSSES:
        raise ValueError(f"must be one of {', '.join(LOSSES)} (cross-entropy)")
    return text


def _source(raw: str) -> Value:
    text = raw.strip().lower().removeprefix("dataformat.")
    if text in ("", "null", "none"):
        return None
    if text not in SOURCES:
        raise ValueError(f"must be one of {', '.join(SOURCES)}")
    return text


SOURCES = ("json", "jsonl", "csv", "parquet")
"""Dataset file formats the trainer reads (``dataset.source``)."""

Parser = Callable[[str], Value]

KEYS: dict[str, tuple[str, Parser]] = {
    "epochs": ("epochs", _positive_int),
    "batch_size": ("batch_size", _positive_int),
    "max_steps_per_epoch": ("max_steps_per_epoch", _optional_positive_int),
    "gradient_accumulation_steps": ("gradient_accumulation_steps", _positive_int),
    "optimizer.lr": ("lr", _positive_float),
    "optimizer.weight_decay": ("weight_decay", _non_negative_float),
    "lr_scheduler": ("lr_scheduler", _scheduler),
    "lr_scheduler._component_": ("lr_scheduler", _scheduler),
    "lr_scheduler.num_warmup_steps": ("warmup_steps", _non_negative_int),
    "lr_scheduler.num_cycles": ("num_cycles", _positive_float),
    "dtype": ("dtype", _dtype),
    "seed": ("seed", _optional_int),
    "device": ("device", _device),
    "loss": ("loss", _loss),
    "output_dir": ("output_dir", _str),
    "checkpointer.checkpoint_dir": ("checkpoint_dir", _str),
    "tokenizer.path": ("tokenizer_path", _optional_str),
    "tokenizer.merges_file": ("tokenizer_merges_file", _optional_str),
    "tokenizer.max_seq_len": ("max_seq_len", _optional_positive_int),
    "dataset": ("dataset.component", _component),
    "dataset._component_": ("dataset.component", _component),
    "dataset.source": ("dataset.source", _source),
    "dataset.data_dir": ("dataset.data_dir", _optional_str),
    "dataset.data_files": ("dataset.data_files", _str_list),
    "dataset.split": ("dataset.split", _str),
    "dataset.column_map": ("dataset.column_map", _str_dict),
    "dataset.train_on_input": ("dataset.train_on_input", _bool),
    "dataset.new_system_prompt": ("dataset.new_system_prompt", _optional_str),
    "dataset.packed": ("dataset.packed", _bool),
    "dataset.conversation_column": ("dataset.conversation_column", _str),
    "dataset.conversation_style": ("dataset.conversation_style", _style),
    "dataset_val.split": ("val.split", _str),
    "dataset_val.data_dir": ("val.data_dir", _optional_str),
    "dataset_val.data_files": ("val.data_files", _str_list),
    "run_val_every_n_steps": ("run_val_every_n_steps", _optional_positive_int),
    "clip_grad_norm": ("clip_grad_norm", _optional_positive_float),
    "enable_activation_checkpointing": ("activation_checkpointing", _bool),
    "enable_activation_offloading": ("activation_offloading", _false_only("no offloading")),
    "optimizer_in_bwd": ("optimizer_in_bwd", _false_only("the optimizer steps after backward")),
    "save_adapter_weights_only": ("save_adapter_weights_only", _bool),
    "save_every_n_steps": ("save_every_n_steps", _optional_positive_int),
    "resume_from_checkpoint": ("resume_from_checkpoint", _bool),
    "log_every_n_steps": ("log_every_n_steps", _positive_int),
    "shuffle": ("shuffle", _bool),
    "compile": ("compile", _bool),
    "optimizer._component_": ("optimizer", _optimizer),
    "optimizer.fused": ("fused", _bool),
    "loss._component_": ("loss", _loss),
    "export.uri": ("export_uri", _export_uri),
    "model.lora_attn_modules": ("lora.lora_attn_modules", _str_list),
    "model.apply_lora_to_mlp": ("lora.apply_lora_to_mlp", _bool),
    "model.apply_lora_to_output": ("lora.apply_lora_to_output", _bool),
    "model.lora_rank": ("lora.lora_rank", _positive_int),
    "model.lora_alpha": ("lora.lora_alpha", _float),
    "model.lora_dropout": ("lora.lora_dropout", _float),
    "model.use_dora": ("lora.use_dora", _bool),
    "model.quantize_base": ("lora.quantize_base", _bool),
}
"""Override key -> (field it sets, parser). ``lora.*``/``dataset.*`` fields are nested."""

LORA_ATTN_MODULES = ("q_proj", "k_proj", "v_proj", "output_proj")
"""torchtune's attention projection names (``output_proj`` is Hugging Face's ``o_proj``)."""


def parse_overrides(items: Sequence[str]) -> dict[str, tuple[str, Value]]:
    """``key=value`` strings -> {key: (raw, value)}; the last one of a key wins, as in tune."""
    parsed: dict[str, tuple[str, Value]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise TrainerError(f'override "{item}" is not key=value (e.g. batch_size=2)')
        if key not in KEYS:
            raise TrainerError(f'unknown override "{key}"; known: {", ".join(KEYS)}')
        try:
            parsed[key] = (raw, KEYS[key][1](raw))
        except ValueError as exc:
            raise TrainerError(f'override {key}="{raw}" {exc}') from None
    return parsed


CHECK_ONLY = frozenset({"activation_offloading", "optimizer_in_bwd", "optimizer"})
"""Targets of keys that are only checked (their one accepted value is what the trainer does)."""


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
