"""Model-side checks and mappings, the torchrun argv, and the launcher's one-line errors."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from trainjob import extras
from trainjob.trainers.llm import argv, config, launch, model
from trainjob.trainers.llm.errors import TrainerError


def cfg(
    model_dir: Path | str, *overrides: str, recipe: str = "lora_finetune_distributed"
) -> config.TrainConfig:
    name = "llama3_2/1B_lora" if recipe.startswith("lora") else "llama3_2/1B_full"
    if recipe.endswith("single_device"):
        name += "_single_device"
    base = ["output_dir=/out", f"checkpointer.checkpoint_dir={model_dir}", "dataset.data_dir=/d"]
    return config.build(recipe, name, [*base, *overrides])


def test_torchtune_module_names_map_to_hugging_face_ones() -> None:
    lora = config.LoraConfig()
    assert model.lora_targets(lora) == [
        "q_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    ]
    lora = config.LoraConfig(
        lora_attn_modules=("k_proj", "output_proj"),
        apply_lora_to_mlp=False,
        apply_lora_to_output=True,
    )
    assert model.lora_targets(lora) == ["k_proj", "o_proj", "lm_head"]


def test_use_dora_makes_a_peft_dora_config() -> None:
    pytest.importorskip("peft")
    peft_cfg = model.peft_config(config.LoraConfig(lora_rank=4, lora_alpha=8.0, use_dora=True))
    assert (peft_cfg.r, peft_cfg.lora_alpha, peft_cfg.use_dora) == (4, 8, True)
    assert set(peft_cfg.target_modules) == {
        "q_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    }


def test_the_seed_fixes_the_adapters_initial_weights_so_runs_and_resumes_agree(
    model_dir: Path,
) -> None:
    """The LoRA adapter is built before transformers' Trainer seeds; unseeded, two runs of one
    command started from different adapters, and a resumed run diverged from an unbroken one."""
    pytest.importorskip("peft")
    import torch

    from trainjob.trainers.llm import engine

    def adapter(*overrides: str) -> list[torch.Tensor]:
        c = cfg(model_dir, "model.lora_rank=4", *overrides)
        torch.manual_seed(int(torch.randint(0, 2**31, ())))  # whatever state came before
        engine.seed_everything(c)
        net = model.apply_lora(model.load_model(c, "fp32", torch.device("cpu")), c.lora)
        return [p.detach().clone() for p in net.parameters() if p.requires_grad]

    first, again, other = adapter("seed=3"), adapter("seed=3"), adapter("seed=4")
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(first, other, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(adapter(), adapter(), strict=True))


def test_qlora_in_fp32_trains_an_fp32_adapter_not_trls_bf16_one(
    model_dir: Path, tmp_path: Path
) -> None:
    """TRL's SFTTrainer casts a 4-bit model's trainable weights to bf16 whatever the run's
    dtype; in an fp32 run AdamW's small steps on LoRA A are then rounded away, so the trainer
    casts them back to the model's dtype before the optimizer is made."""
    pytest.importorskip("peft")
    pytest.importorskip("bitsandbytes")
    import torch
    from datasets import Dataset  # type: ignore[import-untyped]
    from trl import SFTConfig, SFTTrainer  # type: ignore[attr-defined]

    c = cfg(model_dir, "model.lora_rank=4", "model.quantize_base=True")
    net = model.apply_lora(model.load_model(c, "fp32", torch.device("cpu")), c.lora)
    assert model.keep_adapter_dtype(net) == 0  # peft made it fp32: nothing to do
    args = SFTConfig(
        output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", max_steps=1
    )
    rows = Dataset.from_list([{"input_ids": [1, 2, 3, 4]}] * 2)
    trainer = SFTTrainer(model=net, args=args, train_dataset=rows)
    trained: Any = trainer.model
    adapter = [p for p in trained.parameters() if p.requires_grad]
    assert {p.dtype for p in adapter} == {torch.bfloat16}  # TRL's cast, still there
    assert model.keep_adapter_dtype(trained) == len(adapter)
    assert {p.dtype for p in adapter} == {torch.float32}
    assert trained.get_input_embeddings().weight.dtype == torch.float32


def test_dtype_defaults_per_device_and_fp16_is_refused() -> None:
    assert model.resolve_dtype(cfg("/m"), cuda=False) == "fp32"
    assert model.resolve_dtype(cfg("/m"), cuda=True) == "bf16"
    assert model.resolve_dtype(cfg("/m", "dtype=bf16"), cuda=False) == "bf16"
    with pytest.raises(TrainerError) as err:
        model.resolve_dtype(cfg("/m", "dtype=fp16"), cuda=False)
    assert str(err.value) == (
        "dtype=fp16 is not supported (torchtune refuses it too); use dtype=bf16 or dtype=fp32"
    )


def test_qlora_runs_on_cpu_and_without_bitsandbytes_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("bitsandbytes")
    model.check_qlora(cfg("/m", "model.quantize_base=True").lora, cuda=False)  # its CPU backend
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "bitsandbytes" else real(name, *a),
    )
    with pytest.raises(TrainerError) as err:
        model.check_qlora(cfg("/m", "model.quantize_base=True").lora, cuda=False)
    assert str(err.value) == (
        "model.quantize_base=True (QLoRA) needs bitsandbytes, which is not installed; "
        f"pip install {extras.install_target(['llm'])} (or bitsandbytes), or drop "
        "model.quantize_base for LoRA"
    )
    model.check_qlora(cfg("/m").lora, cuda=False)


def test_a_model_dir_must_exist_and_hold_config_json(tmp_path: Path) -> None:
    with pytest.raises(TrainerError) as err:
        model.check_checkpoint_dir(cfg(tmp_path / "nope"))
    assert str(err.value).startswith(
        f"checkpointer.checkpoint_dir={tmp_path / 'nope'} does not exist;"
    )
    with pytest.raises(TrainerError) as err:
        model.check_checkpoint_dir(cfg(tmp_path))
    assert str(err.value) == (
        f"checkpointer.checkpoint_dir={tmp_path} has no config.json; point it at a Hugging Face "
        "model directory (config.json, *.safetensors, tokenizer files)"
    )


def test_torchtunes_tokenizer_file_gives_way_to_the_hf_tokenizer(model_dir: Path) -> None:
    c = cfg(model_dir, f"tokenizer.path={model_dir}/original/tokenizer.model")
    path, note = model.tokenizer_dir(c)
    assert path == model_dir
    assert note == (
        f"tokenizer: tokenizer.path={model_dir}/original/tokenizer.model is torchtune's tokenizer "
        f"file; using the Hugging Face tokenizer in {model_dir}"
    )
    assert model.tokenizer_dir(cfg(model_dir)) == (model_dir, None)


def test_pet_master_addr_and_port_win_over_the_runtimes_rdzv_endpoint() -> None:
    inv = argv.parse_run(
        [
            "run",
            "--rdzv_endpoint=localhost:29500",
            "lora_finetune_distributed",
            "--config",
            "llama3_2/1B_lora",
            "epochs=2",
        ]
    )
    env = {"PET_MASTER_ADDR": "127.0.0.1", "PET_MASTER_PORT": "40001", "PET_NPROC_PER_NODE": "2"}
    args, note = launch.torchrun_args(inv, env)
    assert args == [
        "--module",
        "trainjob.trainers.llm.train",
        "lora_finetune_distributed",
        "--config",
        "llama3_2/1B_lora",
        "epochs=2",
    ]
    assert note == (
        "launcher: rendezvous at 127.0.0.1:40001 (PET_MASTER_ADDR/PET_MASTER_PORT; "
        "--rdzv_endpoint=localhost:29500 not used)"
    )
    args, note = launch.torchrun_args(inv, {})
    assert args[0] == "--rdzv_endpoint=localhost:29500" and note is None


def test_the_launcher_prints_one_error_line_and_exits_1(
    tmp_path: Path, model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["run", "lora_finetune_distributed", "--config", "llama3_2/1B_lora", "output_dir=/o"]
    code = launch.main([*base, f"checkpointer.checkpoint_dir={tmp_path}", "dataset.data_dir=/d"])
    assert code == 1
    assert capsys.readouterr().err == (
        f"error: checkpointer.checkpoint_dir={tmp_path} has no config.json; point it at a Hugging "
        "Face model directory (config.json, *.safetensors, tokenizer files)\n"
    )
    (tmp_path / "data").mkdir()
    code = launch.main(
        [*base, f"checkpointer.checkpoint_dir={model_dir}", f"dataset.data_dir={tmp_path / 'data'}"]
    )
    assert code == 1
    assert capsys.readouterr().err.startswith("error: empty dataset: dataset.data_dir=")
    (tmp_path / "data" / "train.json").write_text('[{"question": "q", "output": "a"}]')
    code = launch.main(
        [*base, f"checkpointer.checkpoint_dir={model_dir}", f"dataset.data_dir={tmp_path / 'data'}"]
    )
    assert code == 1
    assert capsys.readouterr().err == (
        'error: dataset has no column "input" (columns: question, output); '
        "map it with dataset.column_map={'input': '<column>'}\n"
    )


def test_an_unknown_override_from_the_command_line_has_no_traceback() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainjob.trainers.llm",
            "run",
            "full_finetune_distributed",
            "--config",
            "llama3_2/1B_full",
            "foo.bar=1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith('error: unknown override "foo.bar"; known: epochs, ')
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_the_trainer_imports_no_backend_controller_client_cli_or_compiler() -> None:
    root = Path(__file__).parents[3] / "src" / "trainjob" / "trainers"
    banned = (
        "trainjob.local",
        "trainjob.controller",
        "trainjob.client",
        "trainjob.cli",
        "trainjob.runtime",
    )
    for path in root.rglob("*.py"):
        text = path.read_text()
        for name in banned:
            assert f"from {name}" not in text and f"import {name}" not in text, path
