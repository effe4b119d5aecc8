"""Fine-tuning speed and memory: trainjob's TRL trainer beside TRL used directly, a plain
transformers + peft loop and torchtune 0.6.1, and trainjob on 2 nodes against 1, in one run,
alternating, like for like.

The same model (a Llama built here, offline: hidden 512, 8 layers, 8 heads, MLP 1376, vocabulary
8192, untied: about 34M parameters, fp32), the same data (one pre-tokenized sequence of
``--seq`` tokens repeated, so every engine sees the same tokens whatever its sampler's order and
the step losses can be compared), batch, sequence length, optimizer (torch AdamW, lr 1e-4,
constant, no weight decay), gradient clipping (max norm 1.0: TRL's default) and threads
(``OMP_NUM_THREADS``), one process each, on the CPU:

* **trainjob**: ``python -m trainjob.trainers.llm.trl sft --flag ...`` (what the
  ``trl-distributed`` runtime's pods run: TRL's parser, SFTTrainer under trainjob's engine, its
  step lines, tokens/s, checkpoint marking, resume);
* **trl**: ``python -m trl.scripts.sft`` with the same flags (TRL's own script: what KEP-2839's
  runtime runs under torchrun);
* **hf**: a plain loop: ``AutoModelForCausalLM``, ``peft.get_peft_model``, forward (with
  ``use_cache=False``, as trainjob's and torchtune's training forwards: transformers' default
  builds a KV cache, a copy of every layer's keys and values, in each step), backward, clip,
  step (no TRL per-step metrics: the floor).
* **torchtune**: ``tune run full_finetune_single_device`` / ``lora_finetune_single_device``
  of torchtune 0.6.1 in a venv of its own (:data:`TORCHTUNE_VENV`, made with uv on first use;
  torchao 0.15), a config written here for the same model (torchtune's ``llama3`` /
  ``lora_llama3`` builders with its sizes, the HF checkpointer reading the same files), rows
  (a dataset component over the same ids), optimizer (its cosine with 0 cycles: constant),
  clipping and steps; its StdoutLogger's step lines (no per-step metrics beyond the loss);
* **trainjob-2x1**: trainjob's ``trl sft`` as 2 nodes of 1 process each (``PET_NNODES=2``, two
  launchers on this machine, gloo), half the batch and half the threads on each: the same
  tokens per step as 1 node. Its ratio (marked ``*``) is over trainjob on 1 node.

Like for like: gradient checkpointing is off in every engine (TRL's SFTConfig turns it on by
default: ``--gradient_checkpointing=False`` here for trainjob and trl; torchtune's config and the
plain loop have it off). TRL's own script computes its fused LM head and per-step entropy and
token accuracy every micro-batch (it has no switch for them); trainjob's ``trl sft`` on the CPU
takes the same loss from the model's logits and computes those metrics on logging steps only
(every step here: ``--logging_steps=1``), or not at all with ``--token_metrics False``, which
this benchmark passes by default, as the plain loop and torchtune compute neither
(``--token-metrics`` keeps them on: about 3% of a LoRA step here). DoRA: trainjob trains
peft's DoRA layers with torchtune's ``DoRALinear`` forward (trainers/llm/dora.py: no second
pass of the frozen weight on the dropped-out input); the plain loop and TRL's script run peft's.
LoRA's, DoRA's and QLoRA's dropout (0.05 here) in trainjob draws its masks with
trainers/llm/dropout.py (the same rate and scaling, other draws from torch's generator, in
less time than ``bernoulli_``); the others use ``nn.Dropout``. trainjob also runs the model's
RMSNorm and rotary embedding as one autograd function each (trainers/llm/fused.py: the same
numbers, fewer passes); the others run transformers' (torchtune its own). The step-1 losses
printed must agree (same weights, same tokens, and ``lora_B`` starts at zero, so no mask
changes them): a check that the engines train the same thing.

Modes: full, lora, dora (LoRA r 16, alpha 32, dropout 0.05 on q_proj and v_proj), qlora (the
same LoRA on a 4-bit NF4 base, compute in fp32: ``--load_in_4bit`` for trainjob and trl,
``BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")`` in the plain loop, both
bitsandbytes' CPU backend; torchtune's ``quantize_base: True``, torchao 0.15's NF4, which
quantizes the same weights to other values: its step-1 loss differs). qlora is not in the
default set (each run quantizes the model first). Latest, 2026-12-02 18:02-18:14 on a quiet
machine, ``--modes lora dora full qlora --engines trainjob hf trl torchtune --steps 20
--repeat 3``, medians, tokens per CPU second, trainjob over the fastest peer: LoRA 865.5
against the plain loop's 816.1 (1.06x), DoRA 797.4 against torchtune's 741.5 (1.08x), full
490.3 against 453.7 (1.08x), QLoRA 796.1 against 750.6 (1.06x); 1.04x or more in each of the 12
rounds (docs/fine-tuning.md has the table and the 2-node row). Before the fused RMSNorm and
rotary embedding, on a slower machine, QLoRA was 0.96x (521.3 against 542.6). Measured
before at load 10.8-15.8, medians of 2 rounds (before the plain loop's ``use_cache=False`` and
trainjob's kept heap, ``trainers/llm/heap.py``):

    .venv/bin/python benchmarks/finetune.py --modes qlora --engines trainjob hf trl torchtune \\
        --steps 8 --seq 64 --batch 4 --threads 1 --repeat 2

    mode  engine        tokens/s  ratio tokens/CPU-s  ratio first step s peak RSS MiB step-1 loss
    qlora trainjob         108.1   0.73        446.5   0.97         49.4         1362      9.0615
    qlora hf                92.0               458.2                42.9         1210      9.0615
    qlora trl              147.5               408.9                33.2         1356      9.0610
    qlora torchtune         92.0               273.5                92.4         1306      9.0577

(tokens/s at this load measures the neighbours: trl's rounds caught quieter minutes; per CPU
second the rounds were trainjob 456.0 / 437.1, plain loop 430.8 / 485.6.) trainjob is 1.09x
TRL's own script and 1.63x torchtune per CPU second and 0.97x the plain loop, whose step
computes no per-step metrics (trainjob's entropy and token accuracy are about 2.6% of a QLoRA
step at ``--logging_steps=1``; py-spy: 60% of trainjob's step is bitsandbytes' dequantize and
matmul, against 64% of the plain loop's). Before this run trainjob (as TRL's script still does)
trained the adapter in bf16, TRL's cast for quantized models, and lost AdamW's small steps:
loss 8.4709 against the plain loop's 8.4332 after 20 steps, now 8.4330.

Each engine runs in its own process; this script timestamps its stdout lines (PYTHONUNBUFFERED):
time to first step is from starting the process to its first step line, tokens/s is
``(steps - 1) x batch x seq`` over the time from the first to the last step line, tokens per CPU
second the same tokens over the user + system CPU time the engine's processes (and their
children) spent between those lines (``/proc/PID/stat``): on a shared machine the wall clock
measures the neighbours, a step's CPU time much less so. Peak RSS is the process's
``ru_maxrss`` (``os.wait4``). Rows are all the same length, so real and padded tokens are equal
here. The ratio columns are trainjob's over the fastest peer's (target >= 1.0). On a loaded
2-core machine use ``--threads 1``: two OpenMP threads there wait for each other to be
scheduled (a LoRA step measured 5-9 s with 2 threads, 0.6 s with 1, back to back).
Medians over ``--repeat`` rounds, engines alternating within each round.

    .venv/bin/python benchmarks/finetune.py [--modes full lora dora] [--steps 12] [--batch 4]
        [--seq 256] [--threads 2] [--repeat 1] [--hidden 512 --layers 8]

Not measured here: GPU runs (none on this machine), QLoRA on a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ENGINES = ("trainjob", "trl", "hf", "torchtune", "trainjob-2x1")
TORCHTUNE_VENV = Path.home() / ".cache" / "trainjob" / "torchtune-0.6.1-venv"
"""torchtune 0.6.1 in a venv of its own (it pins its torchao; torchao 0.15 installs beside this
torch), made on first use with uv from PyPI and kept."""
MODES = ("full", "lora", "dora", "qlora")
LR = 1e-4
LORA = {"r": 16, "alpha": 32, "dropout": 0.05, "targets": ["q_proj", "v_proj"]}
VOCAB = 8192

# a step line of each engine: trainjob's "Epoch 1/1 step 3/12 loss 9.0123 lr ...", TRL's
# printed log dict "{'loss': 9.0123, ...}", the plain loop's "step 3 loss 9.0123"
STEP = re.compile(
    r"^(?:Epoch \d+/\d+ step \d+/\d+ loss |\{'loss': '?|step \d+ loss )([0-9.]+)"
    r"|Step \d+ \| loss:([0-9.]+)"  # torchtune's StdoutLogger, after its tqdm bar on the line
)


def build(
    root: Path, steps: int, batch: int, seq: int, hidden: int = 512, layers: int = 8
) -> tuple[Path, Path, int]:
    """The model folder, the dataset file and the model's parameter count."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = ["<pad>", "<eos>", *(f"w{i}" for i in range(VOCAB - 2))]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<eos>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()  # type: ignore[assignment]
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=hidden,
        intermediate_size=hidden * 43 // 16,
        num_hidden_layers=layers,
        num_attention_heads=8,
        num_key_value_heads=8,
        max_position_embeddings=max(1024, seq),
        tie_word_embeddings=False,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    params = sum(p.numel() for p in model.parameters())
    model.save_pretrained(str(root / "model"))
    fast.save_pretrained(str(root / "model"))
    gen = torch.Generator().manual_seed(1)
    ids = (torch.randint(2, VOCAB, (seq,), generator=gen)).tolist()
    data = root / "data"  # a folder, as the dataset initializer leaves it (TRL's script reads
    data.mkdir()  # load_dataset(folder); trainjob's front end also reads a single file)
    row = json.dumps({"input_ids": ids})
    (data / "train.jsonl").write_text("\n".join([row] * (steps * batch)) + "\n")
    return root / "model", data, params


def trl_flags(mode: str, model: Path, data: Path, out: Path, a: argparse.Namespace) -> list[str]:
    """The flags trainjob's front end and TRL's script both take."""
    flags = [
        f"--model_name_or_path={model}",
        f"--dataset_name={data}",
        f"--output_dir={out}",
        f"--per_device_train_batch_size={a.batch}",
        "--gradient_accumulation_steps=1",
        f"--max_steps={a.steps}",
        f"--max_length={a.seq}",
        f"--learning_rate={LR}",
        "--lr_scheduler_type=constant",
        "--weight_decay=0.0",
        "--max_grad_norm=1.0",
        "--gradient_checkpointing=False",  # TRL's SFTConfig default is True; the others: off
        "--optim=adamw_torch",
        "--logging_steps=1",
        "--save_strategy=no",
        "--report_to=none",
        "--disable_tqdm=True",
        "--use_cpu",
        "--bf16=False",
        "--dtype=float32",
        "--seed=0",
        "--dataloader_num_workers=0",
    ]
    if mode != "full":
        flags += [
            "--use_peft",
            f"--lora_r={LORA['r']}",
            f"--lora_alpha={LORA['alpha']}",
            f"--lora_dropout={LORA['dropout']}",
            "--lora_target_modules",
            *LORA["targets"],
        ]
    if mode == "dora":
        flags.append("--use_dora")
    if mode == "qlora":
        flags.append("--load_in_4bit")
    return flags


def hf_loop(argv: list[str]) -> int:
    """The plain transformers + peft loop (``--hf-loop MODE MODEL DATA STEPS BATCH``)."""
    import torch
    from transformers import AutoModelForCausalLM

    mode, model_dir, data, steps, batch = argv[0], argv[1], argv[2], int(argv[3]), int(argv[4])
    torch.manual_seed(0)
    kwargs: dict[str, Any] = {"dtype": torch.float32}
    if mode == "qlora":
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_compute_dtype=torch.float32, bnb_4bit_quant_type="nf4"
        )
    model = AutoModelForCausalLM.from_pretrained(model_dir, **kwargs)
    if mode != "full":
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(
            r=int(LORA["r"]),  # type: ignore[call-overload]
            lora_alpha=int(LORA["alpha"]),  # type: ignore[call-overload]
            lora_dropout=float(LORA["dropout"]),  # type: ignore[arg-type]
            target_modules=list(LORA["targets"]),  # type: ignore[call-overload]
            use_dora=mode == "dora",
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(model, lora)
    model.train()
    text = (Path(data) / "train.jsonl").read_text()
    rows = [json.loads(line)["input_ids"] for line in text.splitlines() if line]
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=LR, weight_decay=0.0)
    for step in range(1, steps + 1):
        ids = torch.tensor(rows[(step - 1) * batch : step * batch])
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss  # as the others train
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    return 0


TORCHTUNE_DATA = '''"""torchtune components of the benchmark: the same pre-tokenized rows, no tokenizer needed."""
import json
from types import SimpleNamespace


def tokenizer(max_seq_len):
    return SimpleNamespace(pad_id=0, max_seq_len=max_seq_len)


def dataset(tokenizer, path):
    rows = [json.loads(line)["input_ids"] for line in open(path) if line.strip()]
    return [{"tokens": r, "labels": r} for r in rows]
'''


def torchtune_venv() -> Path:
    """The venv's python, made with uv on first use."""
    python = TORCHTUNE_VENV / "bin" / "python"
    if not python.exists():
        import torch

        subprocess.run(
            ["uv", "venv", "-q", "--python", sys.executable, str(TORCHTUNE_VENV)], check=True
        )
        torch_pin = f"torch=={torch.__version__.split('+')[0]}"
        subprocess.run(
            [
                "uv",
                "pip",
                "install",
                "-q",
                "-p",
                str(python),
                "torchtune==0.6.1",
                "torchao==0.15.0",
                torch_pin,
            ],
            check=True,
        )
    return python


def torchtune_config(mode: str, model: Path, data: Path, out: Path, a: argparse.Namespace) -> Path:
    """A ``tune run`` config of the same model, rows, optimizer, clipping and steps (torchtune's
    own builders: ``llama3`` with this model's sizes, its HF checkpointer reading model/)."""
    import yaml

    cfg = json.loads((model / "config.json").read_text())
    dims = {
        "vocab_size": cfg["vocab_size"],
        "num_layers": cfg["num_hidden_layers"],
        "num_heads": cfg["num_attention_heads"],
        "num_kv_heads": cfg["num_key_value_heads"],
        "embed_dim": cfg["hidden_size"],
        "intermediate_dim": cfg["intermediate_size"],
        "max_seq_len": cfg["max_position_embeddings"],
        "rope_base": int(
            (cfg.get("rope_parameters") or {}).get("rope_theta", cfg.get("rope_theta", 10000))
        ),
        "norm_eps": cfg["rms_norm_eps"],
    }
    if mode == "full":
        component = {"_component_": "torchtune.models.llama3._component_builders.llama3", **dims}
    else:
        component = {
            "_component_": "torchtune.models.llama3._component_builders.lora_llama3",
            **dims,
            "lora_attn_modules": list(LORA["targets"]),  # type: ignore[call-overload]
            "apply_lora_to_mlp": False,
            "apply_lora_to_output": False,
            "lora_rank": LORA["r"],
            "lora_alpha": LORA["alpha"],
            "lora_dropout": LORA["dropout"],
            "use_dora": mode == "dora",
            "quantize_base": mode == "qlora",
        }
    conf = {
        "output_dir": str(out),
        "tokenizer": {"_component_": "tt_bench.tokenizer", "max_seq_len": a.seq},
        "dataset": {"_component_": "tt_bench.dataset", "path": str(data / "train.jsonl")},
        "seed": 0,
        "shuffle": False,
        "model": component,
        "checkpointer": {
            "_component_": "torchtune.training.FullModelHFCheckpointer",
            "checkpoint_dir": str(model),
            "checkpoint_files": ["model.safetensors"],
            "output_dir": str(out),
            "model_type": "LLAMA3",
        },
        "resume_from_checkpoint": False,
        "save_adapter_weights_only": True,
        "batch_size": a.batch,
        "epochs": 1,
        "max_steps_per_epoch": a.steps,
        "gradient_accumulation_steps": 1,
        "optimizer": {
            "_component_": "torch.optim.AdamW",
            "lr": LR,
            "weight_decay": 0.0,
            "fused": False,
        },
        "lr_scheduler": {
            "_component_": "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup",
            "num_warmup_steps": 0,
            "num_cycles": 0.0,
        },
        "loss": {"_component_": "torch.nn.CrossEntropyLoss"},
        "clip_grad_norm": 1.0,
        "compile": False,
        "device": "cpu",
        "dtype": "fp32",
        "enable_activation_checkpointing": False,
        "enable_activation_offloading": False,
        "metric_logger": {"_component_": "torchtune.training.metric_logging.StdoutLogger"},
        "log_every_n_steps": 1,
        "log_peak_memory_stats": False,
        "profiler": {"_component_": "torchtune.training.setup_torch_profiler", "enabled": False},
    }
    if mode == "full":
        conf["optimizer_in_bwd"] = False
    path = out.parent / f"torchtune-{mode}.yaml"
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(conf))
    (out.parent / "tt_bench.py").write_text(TORCHTUNE_DATA)
    return path


TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of ``pids`` and every process below them, now (``/proc``):
    what a step costs in CPU, which other work on a shared machine does not change as it
    changes the wall clock."""
    total, todo, seen = 0.0, list(pids), set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return total


def run_once(engine: str, mode: str, model: Path, data: Path, work: Path, a: argparse.Namespace):
    """One engine's run: (seconds to first step, tokens/s, peak RSS MiB, first step's loss,
    tokens per CPU second)."""
    out = work / f"out-{engine}-{mode}"
    extra_env: dict[str, str] = {}
    if engine == "hf":
        cmd = [sys.executable, __file__, "--hf-loop", mode, str(model), str(data)]
        cmd += [str(a.steps), str(a.batch)]
    elif engine == "torchtune":
        recipe = "full_finetune_single_device" if mode == "full" else "lora_finetune_single_device"
        conf = torchtune_config(mode, model, data, out, a)
        cmd = [str(torchtune_venv().parent / "tune"), "run", recipe, "--config", str(conf)]
        extra_env["PYTHONPATH"] = str(work)
    elif engine == "trainjob-2x1":
        cmd = [sys.executable, "-m", "trainjob.trainers.llm.trl", "sft"]
        half = argparse.Namespace(**{**vars(a), "batch": a.batch // 2})
        cmd += trl_flags(mode, model, data, out, half)
    else:
        module = "trainjob.trainers.llm.trl" if engine == "trainjob" else "trl.scripts.sft"
        cmd = [sys.executable, "-m", module, *(["sft"] if engine == "trainjob" else [])]
        cmd += trl_flags(mode, model, data, out, a)
    if engine.startswith("trainjob") and not a.token_metrics:
        cmd.append("--token_metrics=False")  # like the plain loop and torchtune (see above)
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(a.threads),
        "PYTHONUNBUFFERED": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "DISABLE_KUBEFLOW_INTEGRATION": "TRUE",
        **extra_env,
    }
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "PET_NNODES", "PET_NPROC_PER_NODE"):
        env.pop(var, None)
    other = None
    if engine == "trainjob-2x1":  # 2 nodes of 1 process, half the threads and batch each
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        env["OMP_NUM_THREADS"] = str(max(1, a.threads // 2))
        env |= {"PET_NNODES": "2", "PET_NPROC_PER_NODE": "1", "PET_MASTER_ADDR": "127.0.0.1"}
        env["PET_MASTER_PORT"] = str(port)
        other = subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**env, "PET_NODE_RANK": "1"},
            cwd=work,
        )
        env["PET_NODE_RANK"] = "0"
    started = time.monotonic()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=work
    )
    assert proc.stdout is not None
    times: list[float] = []
    cpu: list[float] = []
    losses: list[float] = []
    tail: list[str] = []
    pids = [proc.pid, *([other.pid] if other is not None else [])]
    for line in proc.stdout:
        m = STEP.search(line.strip())
        if m:
            times.append(time.monotonic())
            cpu.append(cpu_seconds(pids))
            losses.append(float(m.group(1) or m.group(2)))
        tail = [*tail[-30:], line]
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if other is not None and other.wait(timeout=120) != 0:
        raise SystemExit(f"{engine} {mode}: node 1 failed ({other.returncode})")
    if proc.returncode != 0 or len(times) < 2:
        raise SystemExit(f"{engine} {mode} failed ({proc.returncode}):\n{''.join(tail)}")
    tokens = (len(times) - 1) * a.batch * a.seq
    rss_mib = usage.ru_maxrss / 1024  # KiB on Linux
    per_cpu = tokens / max(cpu[-1] - cpu[0], 1e-9)
    return times[0] - started, tokens / (times[-1] - times[0]), rss_mib, losses[0], per_cpu


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--hf-loop":
        return hf_loop(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--modes", nargs="+", choices=MODES, default=["full", "lora", "dora"])
    p.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--hidden", type=int, default=512, help="smaller for a quick check")
    p.add_argument("--layers", type=int, default=8)
    p.add_argument(
        "--token-metrics",
        action="store_true",
        help="trainjob computes SFTTrainer's entropy and token accuracy (the peers do not)",
    )
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="finetune-bench-") as tmp:
        work = Path(tmp)
        model, data, params = build(work, a.steps, a.batch, a.seq, a.hidden, a.layers)
        print(
            f"model: Llama, {params / 1e6:.1f}M parameters, fp32; batch {a.batch} x seq {a.seq}, "
            f"{a.steps} steps, {a.threads} threads, {a.repeat} round(s)",
            flush=True,
        )
        results: dict[tuple[str, str], list[tuple[float, float, float, float, float]]] = {}
        for _ in range(a.repeat):
            for mode in a.modes:
                for engine in a.engines:  # alternating: every engine once per mode per round
                    r = run_once(engine, mode, model, data, work, a)
                    results.setdefault((mode, engine), []).append(r)
                    print(
                        f"  {mode:5} {engine:8} first step {r[0]:5.1f}s  {r[1]:8.1f} tokens/s  "
                        f"{r[4]:7.1f} tokens/CPU-s  peak RSS {r[2]:6.0f} MiB  "
                        f"step-1 loss {r[3]:.4f}",
                        flush=True,
                    )
    print()
    print(
        f"{'mode':6}{'engine':13}{'tokens/s':>9}{'ratio':>7}{'tokens/CPU-s':>13}{'ratio':>7}"
        f"{'first step s':>13}{'peak RSS MiB':>13}{'step-1 loss':>12}"
    )
    for mode in a.modes:
        med = {
            e: [statistics.median(x[i] for x in results[(mode, e)]) for i in range(5)]
            for e in a.engines
        }

        def ratio(e: str, i: int, med: dict[str, list[float]] = med) -> str:
            """trainjob's over the fastest peer's; the 2-node row's (``*``) over trainjob's."""
            peers = [med[p][i] for p in a.engines if not p.startswith("trainjob")]
            if e == "trainjob" and peers:
                return f"{med[e][i] / max(peers):.2f}"
            if e == "trainjob-2x1" and "trainjob" in med:
                return f"{med[e][i] / med['trainjob'][i]:.2f}*"
            return ""

        for e in a.engines:
            print(
                f"{mode:6}{e:13}{med[e][1]:9.1f}{ratio(e, 1):>7}{med[e][4]:13.1f}"
                f"{ratio(e, 4):>7}{med[e][0]:13.1f}{med[e][2]:13.0f}{med[e][3]:12.4f}"
            )
    if "trainjob-2x1" in a.engines:
        print(
            "* trainjob-2x1: 2 nodes x 1 process (batch/2, threads/2 each) over trainjob on 1 node"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
