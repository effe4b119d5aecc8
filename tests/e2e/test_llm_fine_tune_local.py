"""The LLM Trainer (KEP-2401) end to end on the local backend, as a user calls it.

``TrainerClient().train(runtime="torchtune-llama3.2-1b", initializer=..., trainer=BuiltinTrainer(
TorchTuneConfig(peft_config=LoraConfig(...))))`` with the built-in runtime unchanged: the upstream
initializer images run as trainjob's initializers and fetch a tiny Llama and an Alpaca-style
parquet dataset from a real S3-compatible server (moto, on a free port); the runtime's
``tune run lora_finetune_distributed ...`` runs as trainjob's LLM trainer over two real gloo
processes; the LoRA adapter it writes to ``/workspace/output`` loads back with peft. Only the
model is tiny (built in tmp_path): no hub can be reached from here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from tests.s3server import moto_s3
from tests.unit.trainers import tiny

from trainjob import (
    BuiltinTrainer,
    Initializer,
    LocalBackendConfig,
    LoraConfig,
    S3DatasetInitializer,
    S3ModelInitializer,
    TorchTuneConfig,
    TrainerClient,
)

pytestmark = pytest.mark.e2e
pytest.importorskip("boto3")
pytest.importorskip("moto.server")
pytest.importorskip("peft")
pytest.importorskip("pyarrow")

KEY_ID, SECRET = "AKIALLMFINETUNE", "llm-s3cr3t-never-logged"


@pytest.fixture
def bucket(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A real S3 server holding ``s3://llm/model/`` (HF checkpoint) and ``s3://llm/dataset/``."""
    with moto_s3(KEY_ID, SECRET) as (endpoint, s3):
        _fill(tmp_path, s3)
        yield endpoint


def _fill(tmp_path: Path, s3: Any) -> None:
    s3.create_bucket(Bucket="llm")
    model = tiny.checkpoint(tmp_path / "src-model")
    for f in model.iterdir():
        s3.upload_file(str(f), "llm", f"model/{f.name}")
    table = tiny.parquet(tmp_path / "train.parquet")  # the rows twice
    # The runtime reads dataset.data_dir=/workspace/dataset/data, as for hf://tatsu-lab/alpaca.
    s3.upload_file(str(table), "llm", "dataset/data/train-00000-of-00001.parquet")


def test_a_builtin_lora_fine_tune_runs_here_from_s3_to_a_loadable_adapter(
    tmp_path: Path, bucket: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    client = TrainerClient(LocalBackendConfig(home=tmp_path / "home", cwd=str(work)))
    s3: dict[str, Any] = {
        "endpoint": bucket,
        "access_key_id": KEY_ID,
        "secret_access_key": SECRET,
        "region": "us-east-1",
    }
    name = client.train(
        runtime="torchtune-llama3.2-1b",
        initializer=Initializer(
            dataset=S3DatasetInitializer(storage_uri="s3://llm/dataset", **s3),
            model=S3ModelInitializer(storage_uri="s3://llm/model", **s3),
        ),
        trainer=BuiltinTrainer(
            config=TorchTuneConfig(
                epochs=3,
                batch_size=2,
                peft_config=LoraConfig(lora_rank=4, lora_alpha=8),
                # the SDK's knobs: torchtune's 1B_lora accumulates 8 batches and warms up 100 steps
                gradient_accumulation_steps=1,
                learning_rate=3e-3,
                warmup_steps=0,
            )
        ),
    )
    job = client.wait_for_job_status(name, status={"Complete", "Failed"}, timeout=600)
    logs = "\n".join(client.get_job_logs(name))
    steps = {s.name: s.status for s in job.steps}
    assert job.status == "Complete", (steps, logs[-3000:])
    assert steps["dataset-initializer"] == steps["model-initializer"] == "Succeeded"

    by_epoch: dict[int, list[float]] = {}
    for epoch, loss in re.findall(r"^Epoch (\d+)/3 step \d+/\d+ loss ([0-9.]+) ", logs, re.M):
        by_epoch.setdefault(int(epoch), []).append(float(loss))
    mean = {e: sum(v) / len(v) for e, v in by_epoch.items()}
    assert sorted(mean) == [1, 2, 3] and mean[3] < mean[1], logs[-2000:]
    said = re.findall(r"^Epoch (\d)/3 done: mean loss ([0-9.]+) over \d+ steps", logs, re.M)
    assert [int(e) for e, _ in said] == [1, 2, 3]
    assert all(abs(float(v) - mean[int(e)]) < 1e-3 for e, v in said), said  # of unrounded losses
    init_logs = "\n".join(client.get_job_logs(name, step="model-initializer"))
    assert "s3://llm/model" in init_logs and SECRET not in init_logs + logs

    # The adapter landed in the job's /workspace/output and loads onto the base model.
    from peft import LoraConfig as PeftLoraConfig
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    (adapter,) = (tmp_path / "home").rglob("output/adapter_config.json")
    base = AutoModelForCausalLM.from_pretrained(str(tmp_path / "src-model"))
    tuned = PeftModel.from_pretrained(base, str(adapter.parent))
    lora = tuned.peft_config["default"]
    assert isinstance(lora, PeftLoraConfig) and lora.r == 4
    client.delete_job(name)
