"""``export.uri``: after training, copy ``output_dir``'s model or adapter to S3 or the Hub.

``s3://bucket/prefix`` uploads every file of ``output_dir`` (the adapter or model, the merged
model, the tokenizer; not the resumable ``checkpoints/``) with boto3, to the endpoint and
credentials the S3 initializers read (``ENDPOINT`` or ``AWS_ENDPOINT_URL``,
``ACCESS_KEY_ID``/``SECRET_ACCESS_KEY`` or ``AWS_ACCESS_KEY_ID``/..., ``REGION``); so a model
initializer given the same URI reads it back. ``hf://owner/repo`` pushes the same files to a
Hugging Face Hub repository with ``huggingface_hub`` and the token in ``HF_TOKEN`` (or
``ACCESS_TOKEN``); without a token it is an error before training starts. Called by :mod:`.train`
(rank 0) and :mod:`.launch` (the token check).
"""

from __future__ import annotations

import os
from pathlib import Path

from trainjob import extras
from trainjob.trainers.llm.checkpoint import CHECKPOINTS
from trainjob.trainers.llm.errors import TrainerError


def hub_token() -> str | None:
    """The Hub token from the env (``HF_TOKEN``, else upstream initializers' ``ACCESS_TOKEN``)."""
    return os.environ.get("HF_TOKEN") or os.environ.get("ACCESS_TOKEN") or None


def check(uri: str | None) -> None:
    """Fail before training when the export cannot happen (no token for hf://, no boto3)."""
    if uri is None:
        return
    if uri.startswith("hf://") and hub_token() is None:
        raise TrainerError(
            f"export.uri={uri} pushes to the Hugging Face Hub and needs a token; set HF_TOKEN "
            "in the trainer's env"
        )
    module = "boto3" if uri.startswith("s3://") else "huggingface_hub"
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise TrainerError(f"export.uri={uri} needs {module}; {extras.install_hint([module])}")


def files(output_dir: str) -> list[Path]:
    """What is exported: every file under ``output_dir`` but the resumable checkpoints."""
    root = Path(output_dir)
    return sorted(
        p for p in root.rglob("*") if p.is_file() and p.relative_to(root).parts[0] != CHECKPOINTS
    )


def upload(output_dir: str, uri: str) -> None:
    """Copy :func:`files` of ``output_dir`` to ``uri`` and say where they went."""
    found = files(output_dir)
    if uri.startswith("s3://"):
        _to_s3(output_dir, found, uri)
    else:
        _to_hub(output_dir, uri)
    print(f"exported {len(found)} file(s) from {output_dir} to {uri}", flush=True)


def _env(*names: str) -> str | None:
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
    return None


def _to_s3(output_dir: str, found: list[Path], uri: str) -> None:
    import boto3
    from boto3.exceptions import S3UploadFailedError
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    client = boto3.client(
        "s3",
        endpoint_url=_env("ENDPOINT", "AWS_ENDPOINT_URL", "S3_ENDPOINT"),
        aws_access_key_id=_env("ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=_env("SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY"),
        region_name=_env("REGION", "AWS_DEFAULT_REGION", "AWS_REGION"),
    )
    root = Path(output_dir)
    for path in found:
        key = "/".join(p for p in (prefix.strip("/"), path.relative_to(root).as_posix()) if p)
        try:
            client.upload_file(str(path), bucket, key)
        except (BotoCoreError, ClientError, S3UploadFailedError) as exc:
            raise TrainerError(
                f"export to {uri} failed at {key}: {str(exc).splitlines()[0]}; check the bucket "
                "and the S3 credentials (ACCESS_KEY_ID, SECRET_ACCESS_KEY, ENDPOINT)"
            ) from None


def _to_hub(output_dir: str, uri: str) -> None:
    from huggingface_hub import HfApi

    repo = uri.removeprefix("hf://").strip("/")
    api = HfApi(token=hub_token())
    try:
        api.create_repo(repo, exist_ok=True)
        api.upload_folder(
            folder_path=output_dir, repo_id=repo, ignore_patterns=[f"{CHECKPOINTS}/*"]
        )
    except Exception as exc:  # the hub client's errors have no common base
        raise TrainerError(f"export to {uri} failed: {str(exc).splitlines()[0]}") from None
