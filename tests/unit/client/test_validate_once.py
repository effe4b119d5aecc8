"""One ``TrainerClient.train()`` on the local backend parses its TrainJob once and validates it once.

The SDK builds the TrainJob dict, parses it into the API model (the edge), and hands the model to
the executor, whose admission (:func:`trainjob.executor.catalog.admit`) runs the TrainJob's rules and its
runtime's; the compiler then trusts that validated input. Each step used to parse or validate
again (four validations a submit). Counted by wrapping the functions, so the real ones run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import trainjob.runtime
from trainjob import CustomTrainer, LocalProcessBackendConfig, TrainerClient
from trainjob.api import load, validation
from trainjob.api.constants import TRAINJOB_KIND
from trainjob.runtime import compiler


def _train() -> None:
    print("trained")


def _trainjob_parses(parse: mock.MagicMock) -> int:
    """The calls of ``load.parse`` on a TrainJob (runtimes read from the store are parsed too)."""
    return sum(
        1
        for call in parse.call_args_list
        if isinstance(call.args[0], dict) and call.args[0].get("kind") == TRAINJOB_KIND
    )


def test_one_train_parses_once_and_validates_once(tmp_path: Path) -> None:
    client = TrainerClient(LocalProcessBackendConfig(home=tmp_path / "home", cwd=str(tmp_path)))
    patches: dict[str, Any] = {
        "parse": mock.patch.object(load, "parse", wraps=load.parse),
        "validate_trainjob": mock.patch.object(
            validation, "validate_trainjob", wraps=validation.validate_trainjob
        ),
        # compile() calls the module's own name; catalog.admit the package's re-export.
        "compile_validate": mock.patch.object(compiler, "validate", wraps=compiler.validate),
        "admit_validate": mock.patch.object(
            trainjob.runtime, "validate", wraps=trainjob.runtime.validate
        ),
    }
    mocks = {key: p.start() for key, p in patches.items()}
    try:
        name = client.train(runtime="torch-distributed", trainer=CustomTrainer(func=_train))
    finally:
        for p in patches.values():
            p.stop()
    try:
        assert _trainjob_parses(mocks["parse"]) == 1
        assert mocks["validate_trainjob"].call_count == 1
        assert mocks["compile_validate"].call_count + mocks["admit_validate"].call_count == 1
        assert client.get_job(name).name == name  # it was submitted, not refused
    finally:
        client.delete_job(name)
