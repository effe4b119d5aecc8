"""User mistakes the trainer must turn into one ``error:`` line (no traceback), and Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.trainers import tiny
from trainjob.trainers.llm import config, data, launch
from trainjob.trainers.llm.config import DatasetConfig
from trainjob.trainers.llm.errors import TrainerError

BASE = ["output_dir=/out", "checkpointer.checkpoint_dir=/m", "dataset.data_dir=/d"]


def build(*overrides: str) -> config.TrainConfig:
    return config.build("lora_finetune_distributed", "llama3_2/1B_lora", [*BASE, *overrides])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("optimizer.lr=-1", 'override optimizer.lr="-1" must be a number > 0'),
        ("optimizer.lr=0", 'override optimizer.lr="0" must be a number > 0'),
        (
            "optimizer.weight_decay=-0.1",
            'override optimizer.weight_decay="-0.1" must be a number >= 0',
        ),
    ],
)
def test_a_learning_rate_or_weight_decay_out_of_range_is_refused(
    override: str, message: str
) -> None:
    with pytest.raises(TrainerError) as err:
        build(override)
    assert str(err.value) == message


def test_column_map_keys_must_be_the_datasets_roles() -> None:
    with pytest.raises(TrainerError) as err:
        build("dataset.column_map={'prompt': 'question'}")
    assert str(err.value).startswith(
        "override dataset.column_map=\"{'prompt': 'question'}\" maps unknown column 'prompt'; "
        "the keys are the dataset's roles (instruction, input, output)"
    )
    assert build("dataset.column_map={'input': 'q'}").dataset.column_map == {"input": "q"}


def test_a_mapped_column_that_is_missing_is_an_error_even_when_optional() -> None:
    # "input" is optional when a row has an instruction, but mapping it to a column the data
    # lacks is a typo to report, not an empty input to train on.
    row = {"instruction": "repeat", "input": "apple", "output": "apple apple"}
    ds = DatasetConfig(data_dir="x", column_map={"input": "question"})
    with pytest.raises(TrainerError) as err:
        data.prompt_and_response(row, ds, chat=False)
    assert str(err.value).startswith('dataset has no column "question" (columns: instruction,')


def test_rows_that_are_not_objects_are_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "train.json").write_text("[1, 2]")
    with pytest.raises(TrainerError) as err:
        data.load_rows(DatasetConfig(data_dir=str(tmp_path)))
    assert str(err.value).startswith(
        f"dataset file {tmp_path / 'train.json'}: row 1 is int '1', not an object of columns"
    )


def test_an_output_dir_that_cannot_be_created_fails_before_training(
    tmp_path: Path, model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tiny.dataset(tmp_path / "data" / "train.json")
    blocker = tmp_path / "file"
    blocker.write_text("")
    capsys.readouterr()
    code = launch.main(
        [
            "run",
            "lora_finetune_single_device",
            "--config",
            "llama3_2/1B_lora_single_device",
            f"output_dir={blocker / 'out'}",
            f"checkpointer.checkpoint_dir={model_dir}",
            f"dataset.data_dir={tmp_path / 'data'}",
        ]
    )
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err == (
        f"error: output_dir={blocker / 'out'} cannot be created (Not a directory); "
        "point output_dir at a writable directory\n"
    )
    assert "step" not in captured.out


def _default_sigint() -> None:
    # Children of a non-interactive shell's background job start with SIGINT ignored; a user's
    # Ctrl-C reaches a trainer that handles it, so restore the default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_training_with_one_line_and_exit_130(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    model_dir = tiny.checkpoint(tmp_path / "model")
    tiny.dataset(tmp_path / "data" / "train.json")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainjob.trainers.llm",
            "run",
            "lora_finetune_single_device",
            "--config",
            "llama3_2/1B_lora_single_device",
            f"output_dir={tmp_path / 'out'}",
            f"checkpointer.checkpoint_dir={model_dir}",
            f"dataset.data_dir={tmp_path / 'data'}",
            "epochs=1000000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if " step " in line:
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert err == "error: training interrupted (Ctrl-C); nothing was saved to output_dir\n"
    assert not (tmp_path / "out" / "adapter_model.safetensors").exists()
