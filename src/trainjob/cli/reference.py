"""``python -m trainjob.cli.reference``: write docs/cli.md, the CLI reference, from the commands,
and ``src/trainjob/cli/help.json``, every command's ``--help`` screen as typer prints it.

Every command, its usage line, its help text and every option (flags, default, help) come from
the same typer/click objects that parse the command line, so the page cannot drift from the
tool: ``--check`` (run by ``tests/unit/cli/test_reference.py``) fails with a diff when the page or
the help screens are stale. :mod:`trainjob.cli.fast` prints a screen of help.json for a plain
``trainjob [COMMAND...] --help`` on a terminal of 80 columns or more (click's help is 80 wide
there), without importing typer and every command module (most of ``--help``'s start-up). Not
imported by the CLI itself.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from trainjob.cli import labels
from trainjob.cli.root import _register, app

PAGE = Path("docs/cli.md")
HELP = Path("src/trainjob/cli/help.json")

INTRO = """\
# CLI reference

`trainjob` acts on TrainJobs the way `kubectl` acts on objects: `run -f`, `get`, `describe`,
`logs`, `delete`, with `-n NAMESPACE`, `-o json|yaml|name|wide`, errors on stderr as
`error: ...` and exit codes 0 (done), 1 (the request failed: a bad manifest, a missing job, a job
that failed under `--wait`), 2 (a usage error: an unknown flag) and 130 (interrupted).

kubectl's habits hold: `apply -f` (created, unchanged, or suspended/resumed by `spec.suspend`),
`get trainjob/NAME` and `describe runtime NAME`, `get -l team=ml,env!=prod`, `--sort-by
.metadata.name`, `--no-headers`, `-o jsonpath='{.items[*].metadata.name}'` (a List whenever no
name is given, as kubectl prints), `delete --all|-l SELECTOR|-f FILE`, and `logs --tail N`,
`--timestamps`, `-p` (the attempt before the last restart). Ctrl-C during `run --follow` stops
watching, not the job, and says how to follow or stop it again.

Jobs run on this machine unless `--backend kubernetes` (or `TRAINJOB_BACKEND=kubernetes`) comes
before the command; then every job command acts on the cluster of the kubeconfig (`--kubeconfig`,
`--context`), and `-n` defaults to the context's namespace. The same YAML runs either way
([the local backend](local-backend.md), [the controller](controller-install.md)). With
`--backend container` jobs still run on this machine, each pod as a podman or docker container of
its image ([the container backend](container-backend.md)).

Shell completion (commands, options, choices): `source <(trainjob completion bash)`, or
`trainjob completion zsh > "${fpath[1]}/_trainjob"`, or
`trainjob completion fish > ~/.config/fish/completions/trainjob.fish`.

Start-up: `trainjob version`, `trainjob get jobs`, `trainjob get runtimes` and a plain
`trainjob [COMMAND...] --help` import neither typer nor pydantic, rich, YAML or a Kubernetes
client (nor dataclasses, logging, subprocess or signal: the job model and the store's rows are
plain classes and named tuples), and other commands import only what they use; `get runtimes`
lists the built-in runtimes from a JSON copy of their files kept in `$TRAINJOB_HOME/cache` (made
again when the files change), and `--help` prints the screen typer would, kept in the package
(`cli/help.json`; a terminal narrower than 80 columns gets typer's own). `python
benchmarks/cli_startup.py` measures it: wall and CPU ms of each command, each run right after a
`python -c pass`, and the ratios to it. On the 2-core development machine, shared and busy (load
11.8): `get jobs` of 20 jobs 44 ms of CPU, 31 ms above `python -c pass` (13 ms), 126 ms wall;
with an empty home 41 ms, 104 ms wall; `get runtimes` 41 ms; `version`, `--help` and
`get --help` 27 ms; a help typer prints (`logs -f --help`) 84 ms. The same machine at load 13,
before (2026-12-02): `get jobs` 75 ms, `--help` 198 ms, `version` 44 ms, `python -c pass` 18
ms. The wall time there is mostly waiting for a core (`python -c pass` itself took 35 ms); an
idle core runs a command in about its CPU time.

This page is generated from the commands themselves (`python -m trainjob.cli.reference`);
`trainjob COMMAND --help` prints the same.
"""


def _commands(group: Any, ctx: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """(full name, command, context) of every command under ``group``, depth first, by name."""
    for name in sorted(group.list_commands(ctx)):
        cmd = group.get_command(ctx, name)
        if cmd is None or getattr(cmd, "hidden", False):
            continue
        sub = cmd.make_context(name, [], parent=ctx, resilient_parsing=True)
        full = f"{path} {name}"
        yield full, cmd, sub
        if hasattr(cmd, "list_commands"):
            yield from _commands(cmd, sub, full)


_DEFAULT = re.compile(r"\s*\[(?:env var: [^;\]]*; )?default: ([^\]]*)\]")
_EXTRA = re.compile(r"\s*\[(?:required|env var: [^\]]*)\]")


def _option(param: Any, ctx: Any) -> tuple[str, str, str]:
    """(flags with their value's name, default, help) as ``--help`` prints them."""
    flags, help_text = param.get_help_record(ctx) or ("", "")
    shown = ", ".join(f"`{o.strip()}`" for o in flags.split(","))  # -n, --namespace NAMESPACE
    m = _DEFAULT.search(help_text)
    default = f"`{m.group(1).split(';')[0]}`" if m else ""
    help_text = _EXTRA.sub("", _DEFAULT.sub("", help_text))
    if getattr(param, "envvar", None):
        help_text += f" (env `{param.envvar}`)"
    return shown, default, help_text


def _cell(text: str | None) -> str:
    return " ".join((text or "").split())


def _section(full: str, cmd: Any, ctx: Any) -> str:
    lines = [f"## `{full}`", ""]
    help_text = (cmd.help or "").strip()
    if help_text:
        lines += [help_text.split("\f")[0].strip(), ""]
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    lines += ["```", f"{full} {usage}".rstrip(), "```", ""]
    args = [p for p in cmd.params if p.param_type_name == "argument"]
    opts = [p for p in cmd.params if p.param_type_name == "option" and not p.hidden]
    if hasattr(cmd, "list_commands"):
        subs = sorted(n for n in cmd.list_commands(ctx))
        lines += ["Commands: " + ", ".join(f"`{full} {n}`" for n in subs), ""]
    if args:
        lines += ["| Argument | |", "|---|---|"]
        for p in args:
            what = "one or more" if p.nargs == -1 else ("optional" if not p.required else "")
            lines.append(f"| `{labels.argument_name(p)}` | {what} |")
        lines.append("")
    if opts:
        lines += ["| Option | Default | |", "|---|---|---|"]
        for p in opts:
            flags, default, help_text = _option(p, ctx)
            cells = (flags, default, _cell(help_text))
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def render() -> str:
    """The whole page."""
    _register()
    group: Any = typer.main.get_command(app)
    ctx = group.make_context("trainjob", [], resilient_parsing=True)
    parts = [INTRO, _section("trainjob", group, ctx)]
    parts += [_section(full, cmd, sub) for full, cmd, sub in _commands(group, ctx, "trainjob")]
    return "\n".join(parts).rstrip() + "\n"


def typer_help(path: list[str]) -> str:
    """What ``trainjob *path --help`` prints through typer, 80 columns wide (a terminal that
    wide or wider, or a pipe: click's help is never wider)."""
    from unittest import mock

    from trainjob.cli.root import run

    out = io.StringIO()
    with contextlib.ExitStack() as undo, contextlib.redirect_stdout(out):
        undo.enter_context(mock.patch.dict(os.environ, COLUMNS="80"))  # restored afterwards
        os.environ.pop("TERMINAL_WIDTH", None)
        # typer reads TERMINAL_WIDTH once, when typer.rich_utils is first imported: a help
        # screen printed earlier in this process under another width would fix it there
        rich_utils = sys.modules.get("typer.rich_utils")
        if rich_utils is not None:
            undo.enter_context(mock.patch.object(rich_utils, "MAX_WIDTH", None))
        code = run([*path, "--help"])
    assert code == 0, f"trainjob {' '.join(path)} --help exited {code}"
    return out.getvalue()


def help_screens() -> str:
    """help.json: command path (``""``, ``"get"``, ``"get jobs"``) -> its ``--help`` screen, of
    every command the reference lists."""
    _register()
    group: Any = typer.main.get_command(app)
    ctx = group.make_context("trainjob", [], resilient_parsing=True)
    paths: list[list[str]] = [[]] + [
        full.split()[1:] for full, _, _ in _commands(group, ctx, "trainjob")
    ]
    screens = {" ".join(p): typer_help(p) for p in paths}
    return json.dumps(screens, indent=1, sort_keys=True) + "\n"


def _stale(path: Path, text: str) -> bool:
    old = path.read_text() if path.exists() else ""
    if old == text:
        return False
    diff = difflib.unified_diff(old.splitlines(True), text.splitlines(True), str(path), "generated")
    sys.stdout.writelines(diff)
    print(f"error: {path} is stale; run `python -m trainjob.cli.reference`")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trainjob.cli.reference")
    parser.add_argument("--out", type=Path, default=PAGE, help="the page to write")
    parser.add_argument("--help-out", type=Path, default=HELP, help="the help screens to write")
    parser.add_argument("--check", action="store_true", help="exit 1 with a diff if stale")
    args = parser.parse_args(argv)
    made = {args.out: render(), args.help_out: help_screens()}
    if args.check:
        stale = [path for path, text in made.items() if _stale(path, text)]
        return 1 if stale else 0
    for path, text in made.items():
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
