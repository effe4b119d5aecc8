"""TRL post-training end to end on the local backend, through the CLI and the SDK, offline.

A tiny Llama with a chat template (built here; no hub) and datasets made here are fetched by the
``trl-distributed`` runtime's initializers from ``file://`` URIs, as any Hugging Face causal LM
would be from ``hf://`` or ``s3://``: the runtime names no model.

- CLI: ``trainjob run -f job.yaml --wait`` of a 2-node LoRA SFT (``trl sft --use_peft``) on a
  conversational dataset, packed, with assistant-only loss: both nodes train as one job
  (``2 process(es)``), the loss falls, the adapter loads with peft and generates.
  (Upstream's torchtune runtimes refuse LoRA on more than one node; trainjob's ``trl`` runs it.)
- SDK: ``TrainerClient().train(trainer=BuiltinTrainer(config=TRLConfig(method=TRLMethod.DPO,
  ...)))`` with no runtime named (the one ``trl`` runtime is taken) on a preference dataset:
  the reward margin rises.
- SDK: GRPO (``TRLMethod.GRPO``) on a prompts dataset with a reward given in config
  (``reward_funcs=["length_reward"]``, trainjob's built-in; a dotted import path works too):
  completions generated with transformers in the process (no vLLM, no hub), each step's mean
  reward logged.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from tests.e2e import cli
from tests.e2e.test_llm_table_stakes import conversations
from tests.unit.trainers import tiny

from trainjob import (
    BuiltinTrainer,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    LocalBackendConfig,
    LocalProcessBackendConfig,
    TrainerClient,
    TRLConfig,
    TRLMethod,
)

pytestmark = pytest.mark.e2e
pytest.importorskip("trl")
pytest.importorskip("peft")

TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} : {% if m['role'] == 'assistant' %}{% generation %}"
    "{{ m['content'] }} <eos>{% endgeneration %}{% else %}{{ m['content'] }} <eos>{% endif %} "
    "{% endfor %}{% if add_generation_prompt %}assistant : {% endif %}"
)
STEP = re.compile(r"^Epoch (\d+)/\d+ step \d+/\d+ loss ([0-9.]+) lr \S+(?: reward margin (\S+))?$")
GRPO_STEP = re.compile(r"^Epoch \d+/\d+ step \d+/\d+ loss -?[0-9.]+ lr \S+ reward (-?[0-9.]+)$")


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the initializers fetch: model/ (with a chat template), chat/ and preferences/."""
    root = tmp_path_factory.mktemp("sources")
    tiny.checkpoint(root / "model")
    tiny.tokenizer(chat_template=TEMPLATE).save_pretrained(str(root / "model"))
    (root / "chat").mkdir()
    (root / "chat" / "train.jsonl").write_text("\n".join(json.dumps(r) for r in conversations(16)))
    words = tiny.WORDS
    prefs = [
        {"prompt": f"repeat {w}", "chosen": f" {w} {w}", "rejected": f" {words[(i + 3) % 8]}"}
        for i, w in enumerate(words)
    ] * 4
    (root / "preferences").mkdir()
    (root / "preferences" / "train.jsonl").write_text("\n".join(json.dumps(r) for r in prefs))
    (root / "prompts").mkdir()
    prompts = [{"prompt": f"repeat {w}"} for w in words] * 2
    (root / "prompts" / "train.jsonl").write_text("\n".join(json.dumps(r) for r in prompts))
    return root


def output_dir(home: Path, name: str) -> Path:
    """Where the job's ``--output_dir`` is kept (the SDK's ``TrainJob.outputs``)."""
    job = TrainerClient(LocalProcessBackendConfig(home=str(home))).get_job(name)
    return Path(job.outputs["output_dir"])


def steps(lines: list[str]) -> list[tuple[int, float, float | None]]:
    """(epoch, loss, reward margin or None) of each step line."""
    out = []
    for line in lines:
        m = STEP.match(line)
        if m:
            out.append((int(m[1]), float(m[2]), float(m[3]) if m[3] else None))
    return out


def test_cli_two_node_lora_sft_on_packed_conversations_learns_and_the_adapter_generates(
    sources: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "trl-sft"},
        "spec": {
            "runtimeRef": {"name": "trl-distributed"},
            "initializer": {
                "model": {"storageUri": f"file://{sources / 'model'}"},
                "dataset": {"storageUri": f"file://{sources / 'chat'}"},
            },
            "trainer": {
                "numNodes": 2,
                "resourcesPerNode": {"requests": {"cpu": "1"}},
                "command": ["trl"],
                "args": [
                    "sft",
                    "--model_name_or_path=/workspace/model",
                    "--dataset_name=/workspace/dataset",
                    "--output_dir=/workspace/output",
                    "--use_peft",
                    "--lora_r=8",
                    "--lora_alpha=16",
                    "--packing",
                    "--max_length=48",
                    "--assistant_only_loss",
                    "--per_device_train_batch_size=1",
                    "--num_train_epochs=3",
                    "--learning_rate=1e-2",
                    "--logging_steps=2",
                    "--seed=1",
                ],
            },
        },
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    run = subprocess.run(
        [*cli.CLI, "run", "-f", str(tmp_path / "job.yaml"), "--wait"],
        env=cli.local_env(home),
        capture_output=True,
        text=True,
        timeout=900,  # two nodes' imports and training on a loaded 2-core machine
        check=False,
    )
    logs = cli.trainjob(home, "logs", "trl-sft", "--step", "node-0").stdout
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:] + logs[-3000:]
    assert "trl sft: 2 process(es), device cpu" in logs, logs
    losses = steps(logs.splitlines())
    first = [loss for epoch, loss, _ in losses if epoch == 1]
    last = [loss for epoch, loss, _ in losses if epoch == 3]
    assert first and last and sum(last) / len(last) < sum(first) / len(first), logs
    out = output_dir(home, "trl-sft")
    assert (out / "adapter_model.safetensors").is_file(), logs

    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(out))
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "repeat apple"}], tokenize=False, add_generation_prompt=True
    )
    ids = tok(prompt, add_special_tokens=False, return_tensors="pt").input_ids
    base = AutoModelForCausalLM.from_pretrained(str(sources / "model"))
    with torch.no_grad():
        before = base(input_ids=ids).logits
    tuned = PeftModel.from_pretrained(base, str(out))
    with torch.no_grad():
        assert (tuned(input_ids=ids).logits - before).abs().max() > 1e-4  # the adapter acts
        new = tuned.generate(input_ids=ids, max_new_tokens=3, do_sample=False)[0, ids.shape[1] :]  # type: ignore[no-untyped-call]
    assert str(tok.decode(new)).strip()


def test_sdk_dpo_on_a_preference_dataset_raises_the_reward_margin(
    sources: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    client = TrainerClient(LocalBackendConfig(home=tmp_path / "home", cwd=str(work)))
    model_uri, data_uri = f"file://{sources / 'model'}", f"file://{sources / 'preferences'}"
    name = client.train(
        initializer=Initializer(
            model=HuggingFaceModelInitializer(storage_uri=model_uri),
            dataset=HuggingFaceDatasetInitializer(storage_uri=data_uri),
        ),
        trainer=BuiltinTrainer(
            config=TRLConfig(
                method=TRLMethod.DPO,
                model_name_or_path=model_uri,  # what the initializer fetches: its copy is used
                dataset_name=data_uri,
                learning_rate=1e-3,
                per_device_train_batch_size=8,
                num_train_epochs=3,
                beta=0.1,
                extra_args=["--lr_scheduler_type=constant", "--logging_steps=2", "--seed=1"],
            )
        ),
    )
    job = client.wait_for_job_status(name, status={"Complete", "Failed"}, timeout=600)
    logs = list(client.get_job_logs(name))
    assert job.status == "Complete", logs[-40:]
    assert job.runtime.name == "trl-distributed"
    margins = [m for _, _, m in steps(logs) if m is not None]
    assert len(margins) >= 4, logs
    print(f"DPO reward margin: {margins[0]:.4f} -> {margins[-1]:.4f}")
    assert margins[-1] > margins[0] + 0.02, margins
    out = Path(job.outputs["output_dir"])  # kept after the job, under $TRAINJOB_HOME/outputs
    assert (out / "model.safetensors").is_file()


def test_sdk_grpo_with_a_reward_given_in_config_logs_the_reward(
    sources: Path, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    client = TrainerClient(LocalBackendConfig(home=tmp_path / "home", cwd=str(work)))
    model_uri, data_uri = f"file://{sources / 'model'}", f"file://{sources / 'prompts'}"
    name = client.train(
        initializer=Initializer(
            model=HuggingFaceModelInitializer(storage_uri=model_uri),
            dataset=HuggingFaceDatasetInitializer(storage_uri=data_uri),
        ),
        trainer=BuiltinTrainer(
            config=TRLConfig(
                method=TRLMethod.GRPO,
                model_name_or_path=model_uri,
                dataset_name=data_uri,
                reward_funcs=["length_reward"],
                num_generations=4,
                learning_rate=1e-2,
                per_device_train_batch_size=4,
                extra_args=[
                    "--max_completion_length=8",
                    "--max_steps=4",
                    "--logging_steps=1",
                    "--seed=1",
                ],
            )
        ),
    )
    job = client.wait_for_job_status(name, status={"Complete", "Failed"}, timeout=600)
    logs = list(client.get_job_logs(name))
    assert job.status == "Complete", logs[-40:]
    assert "trl grpo: 1 process(es), device cpu, dtype float32" in logs, logs
    assert "rewards: length_reward; 4 completions per prompt, up to 8 tokens" in logs, logs
    got = [float(m[1]) for line in logs if (m := GRPO_STEP.match(line))]
    print(f"GRPO mean reward per step: {got}")
    assert len(got) == 4, logs
    # length_reward is minus a tenth of the words: up to 8 tokens, so in [-0.8, 0]
    assert all(-0.8 <= r <= 0.0 for r in got), got
    out = Path(job.outputs["output_dir"])
    assert (out / "model.safetensors").is_file()


def test_kep_2839s_command_torchrun_m_trl_scripts_sft_runs_unchanged(
    sources: Path, tmp_path: Path
) -> None:
    """Upstream's proposed TRL runtime runs TRL's own script under torchrun (KEP-2839 Part I:
    ``command: [torchrun, -m, trl.scripts.sft]``); a TrainJob saying so trains here as written:
    torchrun reads the Torch plugin's PET_* env, TRL's script loads the initializers' copies."""
    home = tmp_path / "home"
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "trl-script"},
        "spec": {
            "runtimeRef": {"name": "trl-distributed"},
            "initializer": {
                "model": {"storageUri": f"file://{sources / 'model'}"},
                "dataset": {"storageUri": f"file://{sources / 'chat'}"},
            },
            "trainer": {
                "command": ["torchrun", "-m", "trl.scripts.sft"],
                "args": [
                    "--model_name_or_path=/workspace/model",
                    "--dataset_name=/workspace/dataset",
                    "--output_dir=/workspace/output",
                    "--use_cpu",
                    "--bf16=False",
                    "--max_length=48",
                    "--per_device_train_batch_size=4",
                    "--max_steps=2",
                    "--report_to=none",
                    "--disable_tqdm=True",
                ],
            },
        },
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    run = subprocess.run(
        [*cli.CLI, "run", "-f", str(tmp_path / "job.yaml"), "--wait"],
        env=cli.local_env(home),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    logs = cli.trainjob(home, "logs", "trl-script", "--step", "node-0").stdout
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:] + logs[-3000:]
    assert "Training completed" in logs, logs
    out = output_dir(home, "trl-script")
    assert (out / "model.safetensors").is_file(), logs
