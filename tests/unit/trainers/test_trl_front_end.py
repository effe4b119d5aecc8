"""trainjob's ``trl``: TRL's own parsers read the flags, with the pod's defaults, and every mistake
is one line; ``PET_*`` decides torchrun or in-process; the local backend runs it for ``trl``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainjob.trainers.llm.errors import TrainerError
from trainjob.trainers.llm.trl import data, launch, methods

pytest.importorskip("trl")

BASE = ["--model_name_or_path", "/m", "--dataset_name", "/d", "--output_dir", "/o"]


def test_trls_own_parser_reads_the_flags_with_fp32_on_a_cpu_and_no_tqdm() -> None:
    p = methods.parse(["dpo", *BASE, "--beta", "0.2", "--use_peft", "--lora_r", "4"], cuda=False)
    assert p.method == "dpo"
    assert (p.training.beta, p.training.use_cpu, p.training.bf16) == (0.2, True, False)
    assert p.training.disable_tqdm is True
    assert (p.model.use_peft, p.model.lora_r) == (True, 4)
    assert (p.script.dataset_name, p.training.output_dir) == ("/d", "/o")
    assert p.training.learning_rate == 1e-6  # TRL's DPO default, untouched


def test_on_a_gpu_trls_defaults_stay() -> None:
    assert methods.with_defaults(BASE, cuda=True) == [
        *BASE,
        "--disable_tqdm",
        "True",
        "--ddp_find_unused_parameters",
        "False",
    ]
    assert "--use_cpu" not in methods.with_defaults([*BASE, "--bf16", "True"], cuda=True)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param([], "no method given; usage: trl {sft,dpo,grpo}", id="no method"),
        pytest.param(
            ["kto", *BASE], 'unknown method "kto"; trainjob\'s trl runs sft, dpo, grpo', id="kto"
        ),
        pytest.param(
            ["sft", *BASE, "--no_such_flag", "1"],
            "trl sft: Some specified arguments are not used by the HfArgumentParser",
            id="an unknown flag",
        ),
        pytest.param(
            ["sft", *BASE, "--learning_rate", "fast"],
            "trl sft: argument --learning_rate/--learning-rate: invalid float value: 'fast'",
            id="a malformed value",
        ),
        pytest.param(
            ["dpo", *BASE, "--max_prompt_length", "64"],
            "--max_prompt_length is not a flag of this TRL",
            id="a flag TRL dropped",
        ),
        pytest.param(
            ["sft", "--dataset_name", "/d"],
            "trl sft: --model_name_or_path is not set",
            id="no model",
        ),
    ],
)
def test_a_bad_command_line_is_one_line_naming_what_to_fix(argv: list[str], message: str) -> None:
    with pytest.raises(TrainerError) as err:
        methods.parse(argv, cuda=False)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("env", "want"),
    [
        pytest.param({}, 1, id="no PET env: one process, in-process"),
        pytest.param({"PET_NNODES": "2", "PET_NPROC_PER_NODE": "1"}, 2, id="2 nodes"),
        pytest.param({"PET_NNODES": "1", "PET_NPROC_PER_NODE": "auto"}, None, id="auto: torchrun"),
    ],
)
def test_pet_env_decides_how_many_processes(env: dict[str, str], want: int | None) -> None:
    assert launch.processes(env) == want


def test_the_local_backend_runs_trainjobs_trl_even_where_trls_cli_is_installed() -> None:
    import os
    import shutil
    import sys

    from trainjob.local.job import pods

    venv_bin = os.path.dirname(sys.executable)
    if shutil.which("trl", path=venv_bin) is None:
        pytest.skip("TRL's trl CLI is not installed beside this interpreter")
    argv = pods.resolve_command(["trl", "sft", *BASE], venv_bin, "node-0")
    assert argv == [sys.executable, "-m", "trainjob.trainers.llm.trl", "sft", *BASE]


@pytest.mark.parametrize(
    ("method", "rows", "needs"),
    [
        (
            "sft",
            [{"instruction": "a", "input": "b", "output": "c"}],
            "`tune run`'s instruct format",
        ),
        ("sft", [{"prompt": "a"}], '"prompt" and "completion"'),
        ("dpo", [{"prompt": "a", "chosen": "b"}], '"chosen" and "rejected"'),
        ("grpo", [{"text": "a"}], 'a "prompt" column'),
    ],
)
def test_rows_trl_cannot_use_are_one_line_naming_the_columns_before_any_process_starts(
    tmp_path: Path, method: str, rows: list[dict[str, str]], needs: str
) -> None:
    """TRL's own error for these is a traceback from inside ``datasets.map`` (``KeyError:
    'text'``) after the model loaded; the launcher's preflight says it first."""
    f = tmp_path / "rows.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows * 4))
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    argv = [method, "--model_name_or_path", str(model), "--dataset_name", str(f)]
    argv += ["--reward_funcs", "length_reward"] if method == "grpo" else []
    p = methods.parse([*argv, "--output_dir", str(tmp_path / "out")], cuda=False)
    with pytest.raises(TrainerError) as err:
        launch.preflight(p)
    message = str(err.value)
    assert "\n" not in message and needs in message, message
    assert f"--dataset_name={f}: split 'train' has the columns" in message
    assert ", ".join(sorted(rows[0])) in message
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("method", "row", "flags"),
    [
        ("sft", {"text": "a"}, []),
        ("sft", {"body": "a"}, ["--dataset_text_field", "body"]),
        ("sft", {"messages": [{"role": "user", "content": "a"}]}, []),
        ("sft", {"conversations": [{"from": "human", "value": "a"}]}, []),
        ("sft", {"prompt": "a", "completion": "b"}, []),
        ("sft", {"input_ids": [1, 2]}, []),
        ("sft", {"odd": "a"}, ["--dataset_kwargs", '{"skip_prepare_dataset": true}']),
        ("dpo", {"chosen": "a", "rejected": "b"}, []),
        ("grpo", {"prompt": "a"}, []),
    ],
)
def test_every_row_format_trl_reads_passes_the_column_check(
    tmp_path: Path, method: str, row: dict[str, object], flags: list[str]
) -> None:
    f = tmp_path / "rows.jsonl"
    f.write_text("\n".join(json.dumps(row) for _ in range(4)))
    flags += ["--reward_funcs", "length_reward"] if method == "grpo" else []
    p = methods.parse([method, *BASE[:2], "--dataset_name", str(f), *BASE[4:], *flags], False)
    loaded = data.load(p.script)
    data.check_columns(p.method, p.script, p.training, loaded["train"])


def test_token_metrics_is_trainjobs_one_flag_of_sft_on_by_default() -> None:
    assert methods.parse(["sft", *BASE], cuda=False).token_metrics is True
    assert methods.parse(["sft", *BASE, "--token_metrics", "False"], False).token_metrics is False
    assert methods.parse(["sft", *BASE, "--token_metrics=no"], False).token_metrics is False
    assert methods.parse(["sft", *BASE, "--token_metrics"], False).token_metrics is True
    with pytest.raises(TrainerError, match="--token_metrics"):
        methods.parse(["sft", *BASE, "--token_metrics", "maybe"], cuda=False)
    with pytest.raises(TrainerError, match="token_metrics"):  # not a DPO flag
        methods.parse(["dpo", *BASE, "--token_metrics", "False"], cuda=False)
