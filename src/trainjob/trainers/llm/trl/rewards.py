"""GRPO's reward functions, named by ``--reward_funcs`` (KEP-626's ``TRLConfig.reward_funcs``).

Each name is one of trainjob's built-in rewards (:data:`BUILTIN`: simple scores that need no
model or download), one of TRL's own (``think_format_reward``, ``accuracy_reward`` when
``math_verify`` is installed, ...), or a dotted import path ``module.function`` to the user's
own function, imported from the job's working directory or its packages as TRL's script does. A
reward function takes the batch's ``completions`` (strings, or lists of messages for
conversational prompts) and the dataset's other columns as keyword arguments, and returns one
float per completion. ``--reward_model_name_or_path`` (a local sequence-classification model)
adds a learnt reward. Called by :mod:`.methods` (to check the names before any process starts)
and :mod:`.train`.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from trainjob.trainers.llm.errors import TrainerError

Reward = Callable[..., list[float]]


def text_of(completion: Any) -> str:
    """A completion's text: the string, or the content of its messages (conversational)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return " ".join(str(m.get("content", "")) for m in completion if isinstance(m, dict))
    return str(completion)


def length_reward(completions: Sequence[Any], **_: Any) -> list[float]:
    """Shorter is better: minus the completion's words over 10 (0 for an empty one), so a
    policy learns to answer and stop."""
    return [-len(text_of(c).split()) / 10.0 for c in completions]


def no_repeat_reward(completions: Sequence[Any], **_: Any) -> list[float]:
    """The share of distinct words in the completion (1.0: no word repeated; 0 when empty)."""
    out = []
    for c in completions:
        words = text_of(c).split()
        out.append(len(set(words)) / len(words) if words else 0.0)
    return out


def answer_tag_reward(completions: Sequence[Any], **_: Any) -> list[float]:
    """1.0 when the completion holds an ``<answer>...</answer>`` span (a regex), else 0.0."""
    tag = re.compile(r"<answer>.+?</answer>", re.S)
    return [1.0 if tag.search(text_of(c)) else 0.0 for c in completions]


BUILTIN: dict[str, Reward] = {
    "length_reward": length_reward,
    "no_repeat_reward": no_repeat_reward,
    "answer_tag_reward": answer_tag_reward,
}
"""trainjob's rewards by name: offline, no model, deterministic."""

TRL_REWARDS = ("accuracy_reward", "reasoning_accuracy_reward", "think_format_reward")
"""TRL's own reward functions by name (``trl.rewards``; the accuracy ones need math_verify)."""


def _trl(name: str) -> Reward:
    try:
        module = importlib.import_module("trl.rewards")
        func: Reward = getattr(module, name)
        if name != "think_format_reward":  # the accuracy rewards import math_verify when called
            importlib.import_module("math_verify")
    except ImportError as exc:
        raise TrainerError(
            f"--reward_funcs {name} is TRL's and needs {exc.name or 'a package'}, which is not "
            f"installed; pip install math-verify, or use one of {', '.join(BUILTIN)}"
        ) from None
    return func


def _import(path: str) -> Reward:
    module_name, _, func_name = path.rpartition(".")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # TRL's script imports from the working directory too
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise TrainerError(
            f"--reward_funcs {path}: cannot import module {module_name!r} ({exc}); put it on "
            "PYTHONPATH or in the job's working directory"
        ) from None
    func = getattr(module, func_name, None)
    if not callable(func):
        raise TrainerError(
            f"--reward_funcs {path}: module {module_name!r} has no function {func_name!r}"
        )
    out: Reward = func
    return out


def resolve(names: Sequence[str] | None) -> list[Reward]:
    """The reward functions ``names`` (``--reward_funcs``) mean; :class:`TrainerError` for a
    name that is none of the built-ins, TRL's, or an importable ``module.function``."""
    out: list[Reward] = []
    for name in names or ():
        if name in BUILTIN:
            out.append(BUILTIN[name])
        elif name in TRL_REWARDS:
            out.append(_trl(name))
        elif "." in name:
            out.append(_import(name))
        else:
            raise TrainerError(
                f"--reward_funcs {name}: unknown reward; use one of "
                f"{', '.join((*BUILTIN, *TRL_REWARDS))} or a dotted import path module.function"
            )
    return out
