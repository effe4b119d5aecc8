"""Help texts read like kubectl's (plain, no ``<bool>`` after flags, ``[step]`` kept), and
``trainjob completion bash|zsh|fish`` prints scripts that complete commands, options and choices:
the bash one run in a real bash; the zsh and fish ones through the calls their scripts make."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from trainjob.cli import _register, app, main

BIN = Path(sys.executable).parent


def every_command() -> list[list[str]]:
    _register()
    group: Any = typer.main.get_command(app)
    ctx = group.make_context("trainjob", [], resilient_parsing=True)
    out: list[list[str]] = [[]]
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        out.append([name])
        if hasattr(cmd, "list_commands"):
            sub = cmd.make_context(name, [], parent=ctx, resilient_parsing=True)
            out += [[name, s] for s in cmd.list_commands(sub)]
    return out


def trainjob(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "trainjob"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def help_of(command: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main([*command, "--help"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", every_command(), ids=lambda c: " ".join(c) or "trainjob")
def test_help_is_plain_text_without_bool_metavars(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    text = help_of(command, capsys)
    assert text.startswith("Usage: trainjob")
    assert "<bool>" not in text
    assert "╭" not in text  # no rich boxes


LABEL = re.compile(r"[A-Z][A-Z0-9_-]*(\.\.\.)?|[a-z0-9-]+(\|[a-z0-9-]+)+")
"""A value's label as kubectl and click write one: ``NAME``, ``N``, ``FILE``, ``NAME...``, or
the choices ``local|container|kubernetes``; never typer's ``<str>``, ``<list[str]>``, ``{name}``."""


def labels_of(text: str) -> list[tuple[str, str]]:
    """(the option or argument, its value's label) of each entry of a help text, and the usage
    line's arguments (``("usage", "NAME")``)."""
    out: list[tuple[str, str]] = []
    section = ""
    for line in text.splitlines():
        if line.startswith("Usage: "):
            words = line.split()  # Usage: trainjob get jobs [OPTIONS] [NAME]...
            after = words[words.index("[OPTIONS]") + 1 :] if "[OPTIONS]" in words else []
            out += [("usage", w.removesuffix("...").strip("[]"))
                    for w in after if w not in ("COMMAND", "[ARGS]...")]  # fmt: skip
        elif line and not line.startswith(" "):
            section = line
        elif section in ("Options:", "Arguments:") and line.startswith("  ") and line[2] != " ":
            entry = re.split(r"\s{2,}", line.strip())[0].replace(",", " ").split()
            if section == "Arguments:":
                out += [("argument", word) for word in entry]
            else:
                names = [w for w in entry if w.startswith("-") or w == "/"]
                out += [(names[0], word) for word in entry if word not in names]
    return out


@pytest.mark.parametrize("command", every_command(), ids=lambda c: " ".join(c) or "trainjob")
def test_every_value_is_labelled_as_kubectl_labels_it(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    text = help_of(command, capsys)
    for where, label in labels_of(text):
        assert LABEL.fullmatch(label), f"{where}: {label!r} in:\n{text}"
    for typers in ("<str>", "<bool>", "<int", "<float>", "<list", "<path>", "{name", "{names"):
        assert typers not in text


def test_the_labels_read_as_kubectl_users_expect(capsys: pytest.CaptureFixture[str]) -> None:
    """The probe above sees what it checks: the labels of a few commands, as printed."""
    got = labels_of(help_of(["get", "jobs"], capsys))
    assert ("usage", "NAME") in got and ("argument", "NAME...") in got
    assert ("-n", "NAMESPACE") in got and ("-o", "FORMAT") in got
    assert ("--tail", "N") in labels_of(help_of(["logs"], capsys))
    assert ("--backend", "local|container|kubernetes") in labels_of(help_of([], capsys))
    assert ("--kubeconfig", "FILE") in labels_of(help_of([], capsys))
    usage = help_of(["logs"], capsys).splitlines()[0]
    assert usage == "Usage: trainjob logs [OPTIONS] NAME"
    assert help_of(["suspend"], capsys).startswith("Usage: trainjob suspend [OPTIONS] NAME...\n")
    assert ("--workers", "N") in labels_of(help_of(["controller"], capsys))
    assert ("--metrics-port", "PORT") in labels_of(help_of(["controller"], capsys))
    assert ("argument", "bash|zsh|fish") in labels_of(help_of(["completion"], capsys))


def test_brackets_in_a_help_text_are_kept(capsys: pytest.CaptureFixture[str]) -> None:
    assert "each line prefixed with [step]" in help_of(["logs"], capsys)


def test_completion_rejects_an_unknown_shell() -> None:
    out = trainjob("completion", "tcsh")
    assert out.returncode == 2
    assert "'tcsh' is not one of" in out.stderr


@pytest.mark.parametrize(
    ("words", "want"),
    [
        pytest.param(["trainjob", "ge"], ["get"], id="a command"),
        pytest.param(
            ["trainjob", "get", ""], ["jobs", "runtimes", "optimizationjobs"], id="a subcommand"
        ),
        pytest.param(
            ["trainjob", "--backend", ""], ["local", "container", "kubernetes"], id="a choice"
        ),
        pytest.param(["trainjob", "logs", "x", "--f"], ["--follow"], id="an option"),
        pytest.param(["trainjob", "completion", ""], ["bash", "zsh", "fish"], id="the shells"),
    ],
)
def test_the_bash_script_completes_in_bash(words: list[str], want: list[str]) -> None:
    script = trainjob("completion", "bash")
    assert script.returncode == 0, script.stderr
    quoted = " ".join(f"'{w}'" for w in words)
    probe = (
        f"{script.stdout}\nCOMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
        "_trainjob_completion trainjob; printf '%s\\n' \"${COMPREPLY[@]}\""
    )
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == want


def test_the_zsh_and_fish_scripts_call_back_and_get_candidates() -> None:
    zsh = trainjob("completion", "zsh").stdout
    assert zsh.startswith("#compdef trainjob") and "_TRAINJOB_COMPLETE=complete_zsh" in zsh
    fish = trainjob("completion", "fish").stdout
    assert "complete --command trainjob" in fish and "_TRAINJOB_COMPLETE=complete_fish" in fish
    got = trainjob(
        env={"_TRAINJOB_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "trainjob get "}
    )
    assert '"jobs":' in got.stdout and '"runtimes":' in got.stdout
    got = trainjob(
        env={
            "_TRAINJOB_COMPLETE": "complete_fish",
            "_TYPER_COMPLETE_FISH_ACTION": "get-args",
            "_TYPER_COMPLETE_ARGS": "trainjob --backend ",
        }
    )
    assert got.stdout.split() == ["local", "container", "kubernetes"]
