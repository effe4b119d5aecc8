"""GRPO on trainjob's ``trl``: TRL's GRPO parser reads the flags, the rewards named by
``--reward_funcs`` (built-in, TRL's, or a dotted import path) resolve before any process starts,
and what cannot run here (no reward, vLLM) is one line. The run itself: tests/e2e/test_llm_trl.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from trainjob.trainers.llm.errors import TrainerError
from trainjob.trainers.llm.trl import methods, rewards

pytest.importorskip("trl")

BASE = ["--model_name_or_path", "/m", "--dataset_name", "/d", "--output_dir", "/o"]


def test_trls_grpo_parser_reads_the_flags() -> None:
    p = methods.parse(
        ["grpo", *BASE, "--reward_funcs", "length_reward", "--num_generations", "4"], cuda=False
    )
    assert p.method == "grpo"
    assert p.script.reward_funcs == ["length_reward"]
    assert p.training.num_generations == 4
    assert p.training.use_vllm is False  # generation with transformers, in each process
    assert (p.training.use_cpu, p.training.bf16) == (True, False)


def test_the_builtin_rewards_score_text_and_conversations() -> None:
    texts = ["a b c", "", "a a a a"]
    assert rewards.length_reward(texts) == [-0.3, 0.0, -0.4]
    assert rewards.no_repeat_reward(texts) == [1.0, 0.0, 0.25]
    assert rewards.answer_tag_reward(["x <answer>4</answer>", "<answer></answer>"]) == [1.0, 0.0]
    chat = [[{"role": "assistant", "content": "one two"}]]
    assert rewards.length_reward(chat) == [-0.2]


def test_a_reward_is_a_builtin_trls_or_an_import_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_rewards.py").write_text(
        "def shout(completions, **kw):\n    return [float(c.isupper()) for c in completions]\n"
    )
    monkeypatch.chdir(tmp_path)  # the job's working directory, as TRL's script imports from
    monkeypatch.setattr(sys, "path", list(sys.path))
    funcs = rewards.resolve(["length_reward", "think_format_reward", "my_rewards.shout"])
    assert funcs[0] is rewards.length_reward
    assert funcs[1].__name__ == "think_format_reward"
    assert funcs[2](["HI", "hi"]) == [1.0, 0.0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["grpo", *BASE],
            "trl grpo: no reward; give --reward_funcs NAME ... (one of length_reward, "
            "no_repeat_reward, answer_tag_reward, accuracy_reward",
            id="no reward",
        ),
        pytest.param(
            ["grpo", *BASE, "--reward_funcs", "shortness"],
            "--reward_funcs shortness: unknown reward; use one of length_reward",
            id="an unknown name",
        ),
        pytest.param(
            ["grpo", *BASE, "--reward_funcs", "no_such_module.f"],
            "--reward_funcs no_such_module.f: cannot import module 'no_such_module'",
            id="an import path that does not import",
        ),
        pytest.param(
            ["grpo", *BASE, "--reward_funcs", "trainjob.trainers.llm.trl.rewards.nothing"],
            "--reward_funcs trainjob.trainers.llm.trl.rewards.nothing: module "
            "'trainjob.trainers.llm.trl.rewards' has no function 'nothing'",
            id="no such function",
        ),
        pytest.param(
            ["grpo", *BASE, "--reward_funcs", "length_reward", "--use_vllm"],
            "trl grpo: --use_vllm needs vLLM, which is not installed here",
            id="vLLM",
        ),
    ],
)
def test_what_grpo_cannot_run_is_one_line(argv: list[str], message: str) -> None:
    with pytest.raises(TrainerError) as err:
        methods.parse(argv, cuda=False)
    assert str(err.value).startswith(message), str(err.value)
    assert "\n" not in str(err.value)
