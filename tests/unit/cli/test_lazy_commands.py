"""A command loads only its own module (``trainjob get jobs`` never imports the controller), and a
command the table does not know still works: the table can only make a start faster."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trainjob.cli import COMMAND_MODULES, COMMANDS, command_of

PROBE = """
import json, sys
from trainjob.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith("trainjob.cli.")
                        or m in ("trainjob.controller.manager", "pydantic", "httpx"))))
"""


def loaded(tmp_path, *argv: str) -> list[str]:  # type: ignore[no-untyped-def]
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={"TRAINJOB_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        pytest.param(["get", "jobs"], "get", id="a command"),
        pytest.param(["--backend", "kubernetes", "get", "jobs"], "get", id="after a global option"),
        pytest.param(["--context=x", "logs", "a"], "logs", id="an option with ="),
        pytest.param(["--help"], None, id="no command"),
    ],
)
def test_command_of(argv: list[str], want: str | None) -> None:
    assert command_of(argv) == want


def test_every_table_entry_names_a_command_module() -> None:
    assert {m for m in COMMANDS.values() if m} <= set(COMMAND_MODULES)


def test_version_loads_no_command_module(tmp_path) -> None:  # type: ignore[no-untyped-def]
    commands = {f"trainjob.cli.{m}" for m in COMMAND_MODULES}
    assert [m for m in loaded(tmp_path, "version") if m in commands] == []


def test_plan_does_not_load_the_job_commands_or_the_controller(tmp_path) -> None:  # type: ignore[no-untyped-def]
    got = loaded(tmp_path, "plan", "-f", "/nonexistent.yaml")
    assert "trainjob.cli.plan" in got
    assert "trainjob.cli.jobs" not in got and "trainjob.controller.manager" not in got


def test_get_does_not_load_the_controller(tmp_path) -> None:  # type: ignore[no-untyped-def]
    got = loaded(tmp_path, "get", "runtime/torch-distributed")  # typer's get (a kind/name)
    assert "trainjob.cli.get" in got and "trainjob.controller.manager" not in got
    assert "trainjob.cli.jobs" not in got  # run/logs/delete live apart from get/describe


def test_get_runtimes_loads_the_listing_alone(tmp_path) -> None:  # type: ignore[no-untyped-def]
    got = loaded(tmp_path, "get", "runtimes")  # cli/fast.py, as get jobs
    assert "trainjob.cli.listing" in got
    assert not {"trainjob.cli.get", "trainjob.cli.jobs", "trainjob.controller.manager"} & set(got)


def test_get_jobs_loads_the_listing_alone(tmp_path) -> None:  # type: ignore[no-untyped-def]
    got = loaded(tmp_path, "get", "jobs")  # cli/fast.py: no command module, no typer app
    assert "trainjob.cli.listing" in got
    assert not {"trainjob.cli.get", "trainjob.cli.jobs", "trainjob.controller.manager"} & set(got)
