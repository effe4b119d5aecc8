"""The ``tune run`` command line: launcher options, recipe, ``--config`` and overrides.

``tune run [TORCHRUN-OPTIONS] RECIPE --config CONFIG [key=value ...]``: options before the recipe
go to torchrun (``--rdzv_endpoint=host:port``, ``--nnodes 2``, ``--nproc_per_node 4``, ...),
the rest describe the training run. Pure parsing; called by :mod:`.launch` and :mod:`.train`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trainjob.trainers.llm.errors import TrainerError

USAGE = "run [--nnodes N] [--nproc_per_node N] [--rdzv_endpoint=HOST:PORT] RECIPE --config CONFIG [key=value ...]"

FLAGS = frozenset({"--standalone", "--no-python", "--no_python", "--run-path", "--run_path"})
"""torchrun options that take no value."""


@dataclass(frozen=True)
class Invocation:
    """A parsed ``run`` command: torchrun options as (name, value) pairs, then the training run."""

    launcher: tuple[tuple[str, str | None], ...]
    recipe: str
    config: str
    overrides: tuple[str, ...]

    def option(self, *names: str) -> str | None:
        """The value of the last launcher option spelled as any of ``names`` (None if absent)."""
        found: str | None = None
        for name, value in self.launcher:
            if name in names:
                found = value
        return found

    def training_argv(self) -> list[str]:
        """``RECIPE --config CONFIG key=value ...``: what each training process parses."""
        return [self.recipe, "--config", self.config, *self.overrides]


def parse_run(argv: Sequence[str]) -> Invocation:
    """Parse what follows ``tune``: ``run ...``. :class:`TrainerError` with the usage otherwise."""
    if not argv or argv[0] != "run":
        got = argv[0] if argv else "nothing"
        raise TrainerError(f'expected "run", got "{got}"; usage: {USAGE}')
    rest = list(argv[1:])
    launcher: list[tuple[str, str | None]] = []
    while rest and rest[0].startswith("-"):
        token = rest.pop(0)
        name, sep, value = token.partition("=")
        if sep:
            launcher.append((name, value))
        elif name in FLAGS:
            launcher.append((name, None))
        elif not rest:
            raise TrainerError(f"launcher option {name} needs a value; usage: {USAGE}")
        else:
            launcher.append((name, rest.pop(0)))
    if not rest:
        raise TrainerError(f"no recipe given; usage: {USAGE}")
    recipe = rest.pop(0)
    config, overrides = parse_training(rest, recipe)
    return Invocation(tuple(launcher), recipe, config, tuple(overrides))


def parse_training(rest: Sequence[str], recipe: str) -> tuple[str, list[str]]:
    """``--config CONFIG key=value ...`` (the part after the recipe) -> (config, overrides)."""
    items = list(rest)
    config: str | None = None
    overrides: list[str] = []
    while items:
        token = items.pop(0)
        if token == "--config":
            if not items:
                raise TrainerError("--config needs a config name (e.g. --config llama3_2/1B_lora)")
            config = items.pop(0)
        elif token.startswith("--config="):
            config = token.partition("=")[2]
        elif token.startswith("-"):
            raise TrainerError(
                f'unknown option "{token}" after recipe {recipe}; launcher options go before it'
            )
        else:
            overrides.append(token)
    if not config:
        raise TrainerError(
            f"no --config given for recipe {recipe} (e.g. --config llama3_2/1B_lora)"
        )
    return config, overrides
