"""``trainjob completion bash|zsh|fish``: the shell completion script, as ``kubectl completion``.

    source <(trainjob completion bash)                                  # this shell only
    trainjob completion bash > ~/.local/share/bash-completion/completions/trainjob
    trainjob completion zsh > "${fpath[1]}/_trainjob"
    trainjob completion fish > ~/.config/fish/completions/trainjob.fish

The script calls ``trainjob`` back with ``_TRAINJOB_COMPLETE=complete_<shell>`` set, and
:func:`trainjob.cli.main` answers with the commands, options and choices that fit (typer's
completion protocol). Registered on :data:`trainjob.cli.root.app`.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer

from trainjob.cli.root import app

COMPLETE_VAR = "_TRAINJOB_COMPLETE"
"""The env var the completion scripts set when they call ``trainjob`` back."""


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


def script(shell: str) -> str:
    """The completion script for ``shell``."""
    from typer import _completion_shared

    return _completion_shared.get_completion_script(
        prog_name="trainjob", complete_var=COMPLETE_VAR, shell=shell
    )


def enable() -> None:
    """Let typer answer the scripts' calls (typer registers its shells only when asked)."""
    from typer import _completion_classes

    _completion_classes.completion_init()


@app.command("completion")
def completion_command(
    shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish.", case_sensitive=False)],
) -> None:
    """Print the shell completion script: source <(trainjob completion bash)."""
    sys.stdout.write(script(shell.value).rstrip("\n") + "\n")
