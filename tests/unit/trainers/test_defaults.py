"""The LLM trainer's defaults are torchtune 0.6.1's, config by config, read from torchtune's files.

torchtune 0.6.1's wheel (no dependencies: only its ``recipes/configs/*.yaml`` are read) is
installed once into ~/.cache/trainjob/torchtune-0.6.1 with uv from PyPI, as CI can; every
config the trainer accepts must have exactly the values of torchtune's file of that name, and a
run built from it must train with them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from trainjob.trainers.llm import config, defaults, recipes

VERSION = "0.6.1"


@pytest.fixture(scope="module")
def torchtune_configs() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "trainjob"
    target = root / f"torchtune-{VERSION}"
    configs = target / "recipes" / "configs"
    if not configs.is_dir():
        uv = shutil.which("uv")
        if uv is None:
            pytest.fail(
                "uv is needed to fetch torchtune's config files (scripts/setup.sh installs it)"
            )
        tmp = root / f".torchtune-{VERSION}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(
            [
                uv,
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--target",
                str(tmp),
                f"torchtune=={VERSION}",
            ],
            check=True,
            timeout=300,
        )
        tmp.rename(target)
    return configs


def test_the_table_holds_exactly_torchtunes_values_for_every_accepted_config(
    torchtune_configs: Path,
) -> None:
    read = defaults.read_torchtune_configs(torchtune_configs)
    assert "llama3_2/1B_lora" in read and "qwen2_5/1.5B_full" in read
    assert read == defaults.TORCHTUNE  # regenerate with hack/torchtune-defaults.py


def test_upstreams_runtimes_configs_train_with_the_file_s_values(torchtune_configs: Path) -> None:
    import yaml

    required = ["output_dir=/o", "checkpointer.checkpoint_dir=/m", "dataset.data_dir=/d"]
    for name, recipe in (
        ("llama3_2/1B_lora", "lora_finetune_distributed"),
        ("llama3_2/1B_full", "full_finetune_distributed"),
        ("llama3_3/70B_full_multinode", "full_finetune_distributed"),
        ("qwen2_5/1.5B_lora_single_device", "lora_finetune_single_device"),
        ("llama3_2/3B_qlora_single_device", "lora_finetune_single_device"),
    ):
        raw = yaml.safe_load((torchtune_configs / f"{name}.yaml").read_text())
        cfg = config.build(recipe, name, required)
        assert cfg.batch_size == raw["batch_size"], name
        assert cfg.gradient_accumulation_steps == raw["gradient_accumulation_steps"], name
        assert cfg.epochs == raw["epochs"] and cfg.lr == float(raw["optimizer"]["lr"]), name
        assert cfg.activation_checkpointing == raw["enable_activation_checkpointing"], name
        assert cfg.dataset.packed == raw["dataset"].get("packed", False), name
        assert cfg.max_seq_len == raw["tokenizer"].get("max_seq_len"), name
        sched = raw.get("lr_scheduler")
        assert (cfg.lr_scheduler is not None) == (sched is not None), name
        if sched:
            assert cfg.warmup_steps == sched["num_warmup_steps"], name
        if cfg.recipe.method is recipes.Method.LORA:
            assert cfg.lora.lora_rank == raw["model"]["lora_rank"], name
            assert cfg.lora.lora_alpha == raw["model"]["lora_alpha"], name
            assert list(cfg.lora.lora_attn_modules) == raw["model"]["lora_attn_modules"], name
            assert cfg.lora.quantize_base == ("qlora" in name), name
            assert cfg.save_adapter_weights_only == raw.get("save_adapter_weights_only", False)


def test_a_config_torchtune_lacks_starts_from_the_same_model_and_method() -> None:
    assert "qwen2_5/1.5B_qlora" not in defaults.TORCHTUNE
    assert (
        defaults.for_config("qwen2_5/1.5B_qlora")
        == defaults.TORCHTUNE["qwen2_5/1.5B_lora_single_device"]
    )
