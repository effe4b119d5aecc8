"""The ``key=value`` overrides this trainer understands: each key, the field it sets, its parser.

``tune run`` merges dotted overrides (``batch_size=2``, ``model.lora_rank=8``,
``dataset.column_map={'input': 'q'}``) into a YAML recipe config; here every key is listed in
:data:`KEYS` with its parser, so an unknown or malformed override is a one-line
:class:`TrainerError` rather than a silent no-op. Called by :mod:`.config`, which applies the
parsed values over the recipe's defaults.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import Any

from trainjob.trainers.llm import schedule
from trainjob.trainers.llm.errors import TrainerError

Value = Any
"""A parsed override value (bool, int, float, str, list of str, dict of str, or None)."""


# value parsers: each takes the raw string and returns the typed value or raises ValueError.


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
    "fsdp": ("fsdp", _bool),
    "fsdp_reshard_after_forward": ("fsdp_reshard_after_forward", _bool),
    "fsdp_cpu_offload": ("fsdp_cpu_offload", _bool),
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
