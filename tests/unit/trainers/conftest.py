"""Fixtures for the LLM trainer's unit tests: a tiny tokenizer and checkpoint built in tmp_path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.trainers import tiny


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    pytest.importorskip("transformers")
    return tiny.tokenizer()


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    return tiny.checkpoint(tmp_path_factory.mktemp("model"))
