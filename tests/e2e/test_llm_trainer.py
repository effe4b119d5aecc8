"""The LLM trainer end to end: the torchtune runtimes' ``tune run`` argv trains a tiny model for real.

A 2-layer Llama and a WordLevel tokenizer are built in tmp_path (tests/unit/trainers/tiny.py),
with a tiny Alpaca-style dataset; ``python -m trainjob.trainers.llm run ...`` runs as a
subprocess: LoRA over 2 real processes (torchrun, gloo) with the PET_* env the runtime sets,
full fine-tuning on a single device, and DoRA. The outputs are loaded back with transformers and
peft.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.unit.trainers import tiny

from trainjob.trainers.llm import schedule

pytestmark = pytest.mark.e2e
pytest.importorskip("transformers")
pytest.importorskip("peft")
pytest.importorskip("pyarrow")

STEP = re.compile(r"^Epoch (\d+)/(\d+) step (\d+)/(\d+) loss ([0-9.]+) lr (\S+)$", re.M)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """/workspace as the initializers leave it: model/ (HF checkpoint) and dataset/data/*.parquet."""
    root = tmp_path_factory.mktemp("workspace")
    tiny.checkpoint(root / "model")
    tiny.parquet(root / "dataset" / "data" / "train-00000-of-00001.parquet")  # the rows twice
    return root


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# torch's TCPStore when the rendezvous port it was given is taken (by the time it binds it)
ADDRESS_IN_USE = ("EADDRINUSE", "address already in use")


def tune(
    args: list[str], env: dict[str, str] | None = None, *, master_port: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``tune run``; with ``master_port``, on a free PET_MASTER_PORT, and again on another
    one when another process took it before the rendezvous bound it (a loaded machine)."""
    for attempt in range(1, 4):
        port = {"PET_MASTER_PORT": str(free_port())} if master_port else {}
        full_env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", **(env or {}), **port}
        proc = subprocess.run(
            [sys.executable, "-m", "trainjob.trainers.llm", "run", *args],
            capture_output=True,
            text=True,
            timeout=600,
            env=full_env,
        )
        output = proc.stdout + proc.stderr
        if (
            proc.returncode
            and master_port
            and attempt < 3
            and any(s in output for s in ADDRESS_IN_USE)
        ):
            print(f"the rendezvous port {port} was taken; again on another")
            continue
        break
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def losses(stdout: str) -> dict[int, list[float]]:
    by_epoch: dict[int, list[float]] = {}
    for m in STEP.finditer(stdout):
        by_epoch.setdefault(int(m.group(1)), []).append(float(m.group(5)))
    return by_epoch


def runtime_args(workspace: Path, out: Path) -> list[str]:
    """The overrides the torchtune-llama3.2-1b runtime's node command carries."""
    return [
        "dataset=torchtune.datasets.instruct_dataset",
        "dataset.source=parquet",
        f"dataset.data_dir={workspace / 'dataset' / 'data'}",
        f"output_dir={out}",
        f"tokenizer.path={workspace / 'model' / 'original' / 'tokenizer.model'}",
        f"checkpointer.checkpoint_dir={workspace / 'model'}",
    ]


def logits(model: Any, tokenizer: Any) -> Any:
    import torch

    ids = tokenizer("### Instruction:\nrepeat\n\n### Input:\napple", return_tensors="pt").input_ids
    with torch.no_grad():
        return model(input_ids=ids).logits


def test_lora_on_two_processes_learns_and_saves_an_adapter_peft_loads(
    workspace: Path, tmp_path: Path
) -> None:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path / "output"
    env = {
        "PET_NNODES": "1",
        "PET_NPROC_PER_NODE": "2",
        "PET_NODE_RANK": "0",
        "PET_MASTER_ADDR": "127.0.0.1",
    }
    proc = tune(
        [
            "--rdzv_endpoint=localhost:29500",
            "lora_finetune_distributed",
            "--config",
            "llama3_2/1B_lora",
            *runtime_args(workspace, out),
            "batch_size=4",
            "gradient_accumulation_steps=1",
            "lr_scheduler=null",
            "epochs=5",
            "optimizer.lr=3e-2",
            "seed=1",
            "model.lora_attn_modules=[q_proj,v_proj,output_proj]",
            "model.apply_lora_to_output=True",
            "model.lora_rank=8",
            "model.lora_alpha=16",
        ],
        env,
        master_port=True,
    )
    assert (
        "recipe lora_finetune_distributed --config llama3_2/1B_lora: lora fine-tune, 2 process(es)"
        in proc.stdout
    )
    assert "using the Hugging Face tokenizer in" in proc.stdout
    assert "lr schedule: constant 0.03 (lr_scheduler.num_warmup_steps=N: torchtune's" in proc.stdout
    by_epoch = losses(proc.stdout)
    # 32 rows over 2 ranks at batch 4: 4 steps an epoch, each logged once (rank 0 only).
    assert [len(v) for v in by_epoch.values()] == [4] * 5, proc.stdout
    first, last = sum(by_epoch[1]) / 4, sum(by_epoch[5]) / 4
    print(f"LoRA loss: epoch 1 mean {first:.4f} -> epoch 5 mean {last:.4f}")
    assert last < first - 0.3
    assert {"adapter_config.json", "adapter_model.safetensors"} <= {p.name for p in out.iterdir()}
    assert not (out / "model.safetensors").exists()
    # torchtune's default (save_adapter_weights_only=False): the merged model too, loadable alone
    merged = AutoModelForCausalLM.from_pretrained(str(out / "merged"))

    tokenizer = AutoTokenizer.from_pretrained(str(out))
    base = AutoModelForCausalLM.from_pretrained(str(workspace / "model"))
    before = logits(base, tokenizer)
    tuned = PeftModel.from_pretrained(base, str(out))
    assert (logits(tuned, tokenizer) - before).abs().max() > 1e-4
    assert (logits(merged, tokenizer) - logits(tuned, tokenizer)).abs().max() < 1e-4


def test_full_fine_tune_on_one_device_saves_a_model_transformers_loads(
    workspace: Path, tmp_path: Path
) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path / "output"
    proc = tune(
        [
            "full_finetune_single_device",
            "--config",
            "llama3_2/1B_full_single_device",
            *runtime_args(workspace, out),
            "batch_size=8",
            "epochs=3",
            "optimizer.lr=1e-2",
            "dtype=fp32",
            "lr_scheduler._component_=torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup",
            "lr_scheduler.num_warmup_steps=2",
        ]
    )
    by_epoch = losses(proc.stdout)
    assert [len(v) for v in by_epoch.values()] == [4] * 3, proc.stdout
    # each step's logged rate is the one its optimizer step used: torchtune's cosine with warmup
    assert "lr schedule: cosine, 2 warmup step(s) of 12, peak 0.01" in proc.stdout
    rates = [float(m.group(6)) for m in STEP.finditer(proc.stdout)]
    expected = [1e-2 * schedule.factor(i, 2, 12, 0.5) for i in range(12)]
    assert rates == pytest.approx(expected, rel=1e-5)  # logged with 6 significant digits
    assert rates[0] == 0 and rates[2] == pytest.approx(1e-2) and rates[11] < 1e-3
    first, last = sum(by_epoch[1]) / 4, sum(by_epoch[3]) / 4
    print(f"full loss: epoch 1 mean {first:.4f} -> epoch 3 mean {last:.4f}")
    assert last < first
    assert (out / "model.safetensors").is_file() and (out / "config.json").is_file()
    # a checkpoint per epoch but the last, under torchtune's names; they load too
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [
        "checkpoints",
        "epoch_0",
        "epoch_1",
    ]
    assert f"saved epoch 2 full model (safetensors) to {out / 'epoch_1'}" in proc.stdout
    epoch_1 = AutoModelForCausalLM.from_pretrained(str(out / "epoch_1"))
    tuned = AutoModelForCausalLM.from_pretrained(str(out))
    base = AutoModelForCausalLM.from_pretrained(str(workspace / "model"))
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    assert (logits(tuned, tokenizer) - logits(base, tokenizer)).abs().max() > 1e-4
    # the last epoch still moved the weights after epoch 2's checkpoint
    assert (logits(tuned, tokenizer) - logits(epoch_1, tokenizer)).abs().max() > 1e-6


def test_use_dora_trains_a_dora_adapter_with_gradient_accumulation(
    workspace: Path, tmp_path: Path
) -> None:
    out = tmp_path / "output"
    proc = tune(
        [
            "lora_finetune_single_device",
            "--config",
            "llama3_2/1B_lora_single_device",
            *runtime_args(workspace, out),
            "model.use_dora=True",
            "model.lora_rank=4",
            "save_adapter_weights_only=True",
            "gradient_accumulation_steps=2",
            "max_steps_per_epoch=2",
        ]
    )
    assert "DoRA: rank 4 on q_proj, v_proj, o_proj, gate_proj, up_proj, down_proj" in proc.stdout
    assert [len(v) for v in losses(proc.stdout).values()] == [2]
    adapter = json.loads((out / "adapter_config.json").read_text())
    assert adapter["use_dora"] is True and adapter["r"] == 4
    assert not (out / "merged").exists()


def test_epochs_cut_short_by_max_steps_per_epoch_are_each_their_own_epoch(
    workspace: Path, tmp_path: Path
) -> None:
    """``max_steps_per_epoch`` below an epoch's length: each epoch runs that many steps, says
    so (``Epoch 2/2 step 1/2``, not ``Epoch 1/2 step 3/2``) and epoch 1's copy keeps epoch 1's
    weights (the second epoch wrote over ``epoch_0/`` before)."""
    from safetensors.torch import load_file

    out = tmp_path / "output"
    proc = tune(
        [
            "lora_finetune_single_device",
            "--config",
            "llama3_2/1B_lora_single_device",
            *runtime_args(workspace, out),
            "epochs=3",
            "max_steps_per_epoch=2",
            "gradient_accumulation_steps=1",
            "save_adapter_weights_only=True",
            "optimizer.lr=0.01",
            "lr_scheduler.num_warmup_steps=0",
        ]
    )
    got = [(int(m[1]), int(m[3]), int(m[4])) for m in STEP.finditer(proc.stdout)]
    assert got == [(e, s, 2) for e in (1, 2, 3) for s in (1, 2)], proc.stdout
    assert [f"Epoch {e}/3 done" in proc.stdout for e in (1, 2, 3)] == [True] * 3
    assert f"saved epoch 1 LoRA adapter (peft) to {out / 'epoch_0'}" in proc.stdout
    assert f"saved epoch 2 LoRA adapter (peft) to {out / 'epoch_1'}" in proc.stdout
    copies = [
        load_file(str(d / "adapter_model.safetensors"))
        for d in (out / "epoch_0", out / "epoch_1", out)
    ]
    for earlier, later in itertools.pairwise(copies):
        assert earlier.keys() == later.keys()
        assert any((earlier[k] - later[k]).abs().max() > 0 for k in earlier), (
            "a copy was overwritten"
        )
