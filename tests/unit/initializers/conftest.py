"""Fixtures for the initializer tests: run an initializer as a process, and a real S3 server.

``run`` starts ``python -m trainjob.initializers.dataset|model`` the way a container or the local
backend does, with only the env a test gives (plus PATH and a scratch HOME, so no AWS or Hugging
Face config of this machine leaks in). ``s3`` is moto's S3-compatible HTTP server on a free port,
one per test session, speaking the real S3 REST protocol to boto3.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]

ACCESS_KEY_ID = "AKIATESTINITIALIZER"
SECRET_ACCESS_KEY = "s3cr3t-do-not-print-7f3a9c"


@pytest.fixture
def run(tmp_path: Path) -> Run:
    """Run an initializer (``"dataset"`` or ``"model"``) with ``env``; return the finished process."""
    home = tmp_path / "home"
    home.mkdir()

    def run_initializer(kind: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        full = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), **env}
        return subprocess.run(
            [sys.executable, "-m", f"trainjob.initializers.{kind}"],
            env=full,
            capture_output=True,
            text=True,
            timeout=60,
        )

    return run_initializer


@dataclass(frozen=True)
class S3:
    """A running S3-compatible server: its endpoint and a boto3 client for setting up buckets."""

    endpoint: str
    client: Any

    def env(self, uri: str, output: Path, **extra: str) -> dict[str, str]:
        """The initializer env for ``uri`` on this server, writing into ``output``."""
        return {
            "STORAGE_URI": uri,
            "OUTPUT_PATH": str(output),
            "ENDPOINT": self.endpoint,
            "ACCESS_KEY_ID": ACCESS_KEY_ID,
            "SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
            "REGION": "us-east-1",
            **extra,
        }


@pytest.fixture(scope="session")
def s3() -> Iterator[S3]:
    """moto's ThreadedMotoServer on a free port, shared by the session's tests."""
    pytest.importorskip("boto3")
    pytest.importorskip("moto.server")
    from tests.s3server import moto_s3

    with moto_s3(ACCESS_KEY_ID, SECRET_ACCESS_KEY) as (endpoint, client):
        yield S3(endpoint, client)
