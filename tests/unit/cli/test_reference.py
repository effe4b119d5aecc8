"""docs/cli.md is the CLI as it is: generated from the commands, regenerated when they change."""

from __future__ import annotations

from pathlib import Path

from trainjob.cli import reference

REPO = Path(__file__).resolve().parents[3]


def test_the_cli_reference_is_current() -> None:
    page = REPO / "docs" / "cli.md"
    assert page.read_text() == reference.render(), (
        "docs/cli.md is stale: run `python -m trainjob.cli.reference`"
    )


def test_every_command_has_a_section_with_its_options() -> None:
    text = reference.render()
    for command in ("run", "get jobs", "get runtimes", "describe job", "logs", "delete", "crds"):
        assert f"## `trainjob {command}`" in text, command
    assert "| `-n`, `--namespace NAMESPACE` |" in text and "<str>" not in text


def test_the_help_screens_are_current() -> None:
    """help.json holds each command's --help as typer prints it (cli/fast.py prints it)."""
    assert (REPO / reference.HELP).read_text() == reference.help_screens(), (
        "src/trainjob/cli/help.json is stale: run `python -m trainjob.cli.reference`"
    )


def test_the_help_screens_are_every_commands() -> None:
    import json

    screens = json.loads(reference.help_screens())
    assert {"", "get", "get jobs", "get runtimes", "run", "logs", "describe job"} <= set(screens)
    assert screens["get jobs"] == reference.typer_help(["get", "jobs"])
    assert screens[""].startswith("Usage: trainjob [OPTIONS] COMMAND [ARGS]...")


def test_the_help_screens_do_not_depend_on_what_this_process_ran_before() -> None:
    """Commands register lazily (only the one asked for); a second command in one process used
    to list the first one's commands first in ``trainjob --help`` (``controller`` after
    ``version``); and typer fixes its width from the first help screen's TERMINAL_WIDTH."""
    import os
    import subprocess
    import sys

    probe = (
        "import contextlib, io, os\n"
        "from trainjob.cli import reference, root\n"
        "os.environ['COLUMNS'] = os.environ['TERMINAL_WIDTH'] = '200'\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert root.run(['controller', '--help']) == 0\n"  # typer's, not cli/fast.py's
        "del os.environ['COLUMNS'], os.environ['TERMINAL_WIDTH']\n"
        "print(reference.help_screens(), end='')\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert out == (REPO / reference.HELP).read_text()
