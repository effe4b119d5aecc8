"""``export.uri``: the trained outputs (not the resumable checkpoints) go to a real S3-compatible
server (moto) with the S3 initializers' env; hf:// without a token is refused before training (the
Hugging Face Hub cannot be reached from here, so the push itself is not run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.s3server import moto_s3
from trainjob.trainers.llm import export
from trainjob.trainers.llm.errors import TrainerError

pytest.importorskip("boto3")
pytest.importorskip("moto.server")


def test_outputs_but_not_checkpoints_go_to_s3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "output"
    (out / "merged").mkdir(parents=True)
    (out / "checkpoints" / "checkpoint-2").mkdir(parents=True)
    (out / "adapter_model.safetensors").write_bytes(b"\x00adapter")
    (out / "adapter_config.json").write_text("{}")
    (out / "merged" / "model.safetensors").write_bytes(b"\x00merged")
    (out / "checkpoints" / "checkpoint-2" / "optimizer.pt").write_bytes(b"opt")
    with moto_s3("AKIAEXPORT", "export-secret") as (endpoint, s3):
        s3.create_bucket(Bucket="models")
        for name, value in {
            "ENDPOINT": endpoint,
            "ACCESS_KEY_ID": "AKIAEXPORT",
            "SECRET_ACCESS_KEY": "export-secret",
            "REGION": "us-east-1",
        }.items():
            monkeypatch.setenv(name, value)
        export.check("s3://models/tuned")
        export.upload(str(out), "s3://models/tuned")
        listed = s3.list_objects_v2(Bucket="models")["Contents"]
        assert sorted(o["Key"] for o in listed) == [
            "tuned/adapter_config.json",
            "tuned/adapter_model.safetensors",
            "tuned/merged/model.safetensors",
        ]
        body = s3.get_object(Bucket="models", Key="tuned/merged/model.safetensors")["Body"]
        assert body.read() == b"\x00merged"

        with pytest.raises(TrainerError, match=r"^export to s3://nope/x failed at x/"):
            export.upload(str(out), "s3://nope/x")


def test_hf_export_without_a_token_is_refused_before_training(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("ACCESS_TOKEN", raising=False)
    with pytest.raises(TrainerError) as err:
        export.check("hf://me/tuned")
    assert str(err.value) == (
        "export.uri=hf://me/tuned pushes to the Hugging Face Hub and needs a token; set HF_TOKEN "
        "in the trainer's env"
    )
