"""Recipe and config names of ``tune run RECIPE --config CONFIG``, and what each one means here.

A recipe (``full_finetune_distributed``, ``lora_finetune_single_device``, ...) says the method
and whether torchrun starts the processes; a config (``llama3_2/1B_lora``, ``qwen2_5/1.5B_full``,
...) names a model and a variant whose defaults :mod:`.config` starts from. The model itself is
always the Hugging Face checkpoint in ``checkpointer.checkpoint_dir``. Called by :mod:`.config`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from trainjob.trainers.llm.errors import TrainerError


class Method(enum.StrEnum):
    """How the weights are trained: all of them, or a LoRA adapter over frozen ones."""

    FULL = "full"
    LORA = "lora"


RECIPES: dict[str, tuple[Method, bool]] = {
    "full_finetune_distributed": (Method.FULL, True),
    "full_finetune_single_device": (Method.FULL, False),
    "lora_finetune_distributed": (Method.LORA, True),
    "lora_finetune_single_device": (Method.LORA, False),
}
"""Recipe name -> (method, distributed)."""

VARIANTS: dict[str, Method] = {
    "full": Method.FULL,
    "full_single_device": Method.FULL,
    "full_multinode": Method.FULL,
    "lora": Method.LORA,
    "lora_single_device": Method.LORA,
    "qlora": Method.LORA,
    "qlora_single_device": Method.LORA,
}
"""Config suffix after ``<model>_`` -> the method it is written for."""

MODELS = (
    "llama2/7B",
    "llama3/8B",
    "llama3_1/8B",
    "llama3_1/70B",
    "llama3_2/1B",
    "llama3_2/3B",
    "llama3_3/70B",
    "mistral/7B",
    "qwen2/0.5B",
    "qwen2/1.5B",
    "qwen2/7B",
    "qwen2_5/0.5B",
    "qwen2_5/1.5B",
    "qwen2_5/3B",
    "qwen2_5/7B",
    "qwen2_5/14B",
)
"""torchtune model config folders this trainer accepts (the checkpoint decides the real model)."""


@dataclass(frozen=True)
class Recipe:
    """A parsed ``RECIPE --config CONFIG`` pair."""

    recipe: str
    config: str
    method: Method
    distributed: bool
    model: str
    variant: str

    @property
    def qlora(self) -> bool:
        """Whether the config is a QLoRA one (``model.quantize_base`` defaults to True)."""
        return self.variant.startswith("qlora")


def parse(recipe: str, config: str) -> Recipe:
    """Check a recipe and config name and say what they mean; :class:`TrainerError` if unknown."""
    if recipe not in RECIPES:
        raise TrainerError(
            f'unknown recipe "{recipe}"; known: {", ".join(RECIPES)} '
            "(e.g. tune run lora_finetune_distributed --config llama3_2/1B_lora)"
        )
    method, distributed = RECIPES[recipe]
    model, variant = split_config(config)
    if VARIANTS[variant] is not method:
        raise TrainerError(
            f'--config {config} is a {VARIANTS[variant]} config but recipe "{recipe}" is a '
            f"{method} fine-tune; use --config {model}_{_matching_variant(method, distributed)}"
        )
    return Recipe(recipe, config, method, distributed, model, variant)


def split_config(config: str) -> tuple[str, str]:
    """``llama3_2/1B_lora`` -> (``llama3_2/1B``, ``lora``); :class:`TrainerError` if unknown."""
    for variant in sorted(VARIANTS, key=len, reverse=True):
        model, sep, rest = config.partition(f"_{variant}")
        if sep and not rest and model in MODELS:
            return model, variant
    raise TrainerError(
        f'unknown --config "{config}"; expected <model>_<variant> with model one of '
        f"{', '.join(MODELS)} and variant one of {', '.join(VARIANTS)} (e.g. llama3_2/1B_lora)"
    )


def _matching_variant(method: Method, distributed: bool) -> str:
    base = str(method)
    return base if distributed else f"{base}_single_device"
