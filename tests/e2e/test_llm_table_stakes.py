"""One small LLM fine-tune that uses every table-stakes key at once, then resumes after a kill.

A tiny Llama with a chat template (built here; no hub) is fine-tuned with LoRA on a
conversational dataset (``torchtune.datasets.chat_dataset``, ``messages`` in openai style),
packed two conversations to a 48-token sequence, assistant-only loss (``train_on_input=False``),
activation checkpointing, gradient clipping, gradient accumulation, an eval split with eval loss
every 2 steps, a checkpoint every 2 steps, the merged model beside the adapter. The loss falls
and the adapter loads with peft and generates. The progress of the run goes to a status server
on loopback with upstream's env (KUBEFLOW_TRAINER_SERVER_URL/..._TOKEN): trainjob's reporter
(trainers/reporting.py, in place of transformers' KubeflowCallback) posts it, with the tokens/s
trainjob adds, the first loss and the last report never throttled away. Then a second run is killed
(SIGKILL) after its first checkpoint and started again: it says ``resumed from checkpoint at
step N``, trains only the steps left, and logs the same losses as the run never stopped (the
adapter's initial weights, the data order, the optimizer, schedule and RNG all carry over).

Sized for CI: 16 conversations, 8 optimizer steps, three trainer processes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.unit.trainers import tiny

pytestmark = pytest.mark.e2e
pytest.importorskip("trl")
pytest.importorskip("peft")

STEP = re.compile(r"^Epoch (\d+)/(\d+) step (\d+)/(\d+) loss ([0-9.]+) lr (\S+)$", re.M)
TEMPLATE = (
    "{% for m in messages %}{{ '<bos> ' if loop.first else '' }}{{ m['role'] }} : "
    "{{ m['content'] }} <eos> {% endfor %}{% if add_generation_prompt %}assistant : {% endif %}"
)


def conversations(n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        word, nxt = tiny.WORDS[i % 8], tiny.WORDS[(i + 1) % 8]
        rows.append(
            {
                "messages": [
                    {"role": "user", "content": f"repeat {word}"},
                    {"role": "assistant", "content": f"{word} {word}"},
                    {"role": "user", "content": f"next {word}"},
                    {"role": "assistant", "content": nxt},
                ]
            }
        )
    return rows


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    tiny.checkpoint(root / "model")
    tok = tiny.tokenizer(chat_template=TEMPLATE)
    tok.save_pretrained(str(root / "model"))
    data = root / "data"
    data.mkdir()
    (data / "train.jsonl").write_text("\n".join(json.dumps(r) for r in conversations(16)))
    (data / "validation.jsonl").write_text("\n".join(json.dumps(r) for r in conversations(4)))
    return root


class Status(BaseHTTPRequestHandler):
    posts: list[dict[str, Any]] = []
    auth: list[str] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Status.posts.append(json.loads(body))
        Status.auth.append(self.headers.get("Authorization", ""))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def argv(workspace: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "trainjob.trainers.llm",
        "run",
        "lora_finetune_single_device",
        "--config",
        "llama3_2/1B_lora_single_device",
        "dataset=torchtune.datasets.chat_dataset",
        f"dataset.data_dir={workspace / 'data'}",
        "dataset.packed=True",
        "dataset.train_on_input=False",
        "dataset_val.split=validation",
        "run_val_every_n_steps=2",
        "tokenizer.max_seq_len=48",
        f"checkpointer.checkpoint_dir={workspace / 'model'}",
        f"output_dir={out}",
        "batch_size=1",
        "gradient_accumulation_steps=2",
        "epochs=2",
        "optimizer.lr=1e-2",
        "lr_scheduler=null",
        "clip_grad_norm=1.0",
        "enable_activation_checkpointing=True",
        "save_every_n_steps=2",
        "model.lora_rank=4",
        "model.lora_alpha=8",
        "seed=3",
    ]


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, "TOKENIZERS_PARALLELISM": "false", **(extra or {})}


def test_every_key_at_once_reports_progress_and_resumes_after_a_kill(
    workspace: Path, tmp_path: Path
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Status)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    token = tmp_path / "token"
    token.write_text("pod-token\n")
    status_env = {
        "KUBEFLOW_TRAINER_SERVER_URL": f"http://127.0.0.1:{server.server_port}/status",
        "KUBEFLOW_TRAINER_SERVER_TOKEN": str(token),
    }
    out = tmp_path / "out"
    try:
        whole = subprocess.run(
            argv(workspace, out), env=env(status_env), capture_output=True, text=True, timeout=900
        )
    finally:
        server.shutdown()
    assert whole.returncode == 0, whole.stdout[-3000:] + whole.stderr[-3000:]
    log = whole.stdout
    # two ~20-token conversations to each 48-token sequence: 8 sequences, 4 steps an epoch
    assert "packing: 16 examples in 8 sequences of up to 48 tokens" in log, log
    assert "eval dataset: 4 examples (split validation)" in log
    steps = [(int(m[0]), int(m[2]), float(m[4])) for m in STEP.findall(log)]
    assert [s[:2] for s in steps] == [(e, i) for e in (1, 2) for i in (1, 2, 3, 4)], log
    assert sum(s[2] for s in steps[4:]) < sum(s[2] for s in steps[:4]), log  # the loss falls
    assert re.search(r"^Epoch 1/2 step 2 eval loss [0-9.]+$", log, re.M), log
    assert f"checkpoint at step 2 (epoch 1) saved to {out}/checkpoints/checkpoint-2" in log
    assert (out / "checkpoints" / "checkpoint-2" / "trainjob-complete.json").is_file()
    assert (out / "adapter_model.safetensors").is_file() and (
        out / "merged" / "config.json"
    ).is_file()
    generate(workspace, out)

    # progress, ETA, loss, rate, step, epoch and tokens/s through upstream's protocol
    assert Status.auth and set(Status.auth) == {"Bearer pod-token"}
    last = Status.posts[-1]["trainerStatus"]
    assert last["progressPercentage"] == 100 and last["estimatedRemainingSeconds"] == 0
    seen = {m["name"] for p in Status.posts for m in p["trainerStatus"].get("metrics", [])}
    assert {"loss", "learning_rate", "tokens_per_second", "current_step", "total_steps"} <= seen
    losses = [
        {m["name"]: m["value"] for m in p["trainerStatus"].get("metrics", [])} for p in Status.posts
    ]
    losses = [m for m in losses if "loss" in m]
    assert len(losses) >= 2 and losses[0]["current_step"] == "1", losses  # within the throttle
    assert losses[-1]["current_step"] == "8" and "train_loss" in losses[-1], losses

    # killed after its first checkpoint, started again: it goes on from there
    again = tmp_path / "again"
    proc = subprocess.Popen(
        argv(workspace, again),
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    seen_lines = []
    deadline = time.monotonic() + 900
    for line in proc.stdout:
        seen_lines.append(line)
        if "checkpoint at step 2 " in line or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    resumed = subprocess.run(
        argv(workspace, again), env=env(), capture_output=True, text=True, timeout=900
    )
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "resumed from checkpoint at step " in resumed.stdout, resumed.stdout
    step = int(re.search(r"resumed from checkpoint at step (\d+)", resumed.stdout)[1])  # type: ignore[index]
    assert step >= 2
    after = [(int(m[0]), int(m[2]), float(m[4])) for m in STEP.findall(resumed.stdout)]
    assert [a[:2] for a in after] == [s[:2] for s in steps[step:]]  # only what was left
    # the same run, continued: its losses are the unbroken run's (as logged, to 4 decimals)
    assert [a[2] for a in after] == pytest.approx([s[2] for s in steps[step:]], abs=2e-4)


def generate(workspace: Path, out: Path) -> None:
    """The adapter loads onto the base with peft and generates; the merged model alone agrees."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(out))
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "repeat apple"}], tokenize=False, add_generation_prompt=True
    )
    ids = tok(prompt, add_special_tokens=False, return_tensors="pt").input_ids
    tuned = PeftModel.from_pretrained(
        AutoModelForCausalLM.from_pretrained(str(workspace / "model")), str(out)
    )
    merged = AutoModelForCausalLM.from_pretrained(str(out / "merged"))
    with torch.no_grad():
        new = tuned.generate(  # type: ignore[no-untyped-call]
            input_ids=ids, max_new_tokens=4, do_sample=False
        )[0, ids.shape[1] :]
        assert (tuned(input_ids=ids).logits - merged(input_ids=ids).logits).abs().max() < 1e-4
    text = tok.decode(new)
    assert len(new) >= 1 and isinstance(text, str) and text.strip()
