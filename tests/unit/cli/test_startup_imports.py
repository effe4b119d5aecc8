"""What a command loads before it answers: the start-up of ``trainjob version``, ``get jobs`` and
``--help`` is mostly imports, so the heavy ones are pinned out of them (benchmarks/cli_startup.py
measures the time). Each probe runs the real CLI in a fresh interpreter, then lists the modules
it holds; an eager import re-added anywhere on a command's path (``import pydantic`` at the top of
``cli/output.py``, the API models in ``cli/get.py``, the compiler in the local executor, typer
building a pydantic adapter for ``--namespace``) makes one of these fail, naming what came in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PROBE = """
import json, sys
from trainjob.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:
    code = e.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

HEAVY = {
    "pydantic": "the API models' library (typer's adapters too: cli/coercion.py)",
    "pydantic_core": "pydantic's core",
    "trainjob.api.trainer": "the TrainJob and runtime models",
    "trainjob.api.jobset": "the JobSet models",
    "trainjob.runtime.compiler": "the compiler",
    "trainjob.executor.catalog": "the built-in runtimes",
    "yaml": "PyYAML",
    "rich": "rich (plain lines need none)",
    "httpx": "an HTTP client",
    "trainjob.kube.client": "the Kubernetes client",
    "trainjob.controller.manager": "the controller",
    "trainjob.cluster.executor": "the cluster's executor",
    "trainjob.local.job.supervisor": "the local supervisor",
}
"""Modules none of the probed commands may load, and what each is."""


def probe(script: str, home: Path, *argv: str) -> tuple[dict[str, Any], str]:
    """Run ``script`` (a probe that prints one JSON line last) with ``argv`` on ``home``, in a
    fresh interpreter, away from a cluster; its JSON and its stderr."""
    drop = ("KUBECONFIG", "TRAINJOB_BACKEND", "COLUMNS")  # COLUMNS < 80: typer prints the help
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["TRAINJOB_HOME"] = str(home)
    out = subprocess.run(
        [sys.executable, "-c", script, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def loaded(home: Path, *argv: str) -> set[str]:
    got, stderr = probe(PROBE, home, *argv)
    assert got["code"] in (0, None), stderr
    return set(got["modules"])


def heavy_in(modules: set[str]) -> dict[str, str]:
    return {m: why for m, why in HEAVY.items() if m in modules}


def test_version_loads_nothing_heavy(tmp_path: Path) -> None:
    assert heavy_in(loaded(tmp_path, "version")) == {}


def test_get_jobs_on_an_empty_home_loads_nothing_heavy(tmp_path: Path) -> None:
    assert heavy_in(loaded(tmp_path, "get", "jobs")) == {}


def test_get_jobs_with_jobs_loads_nothing_heavy(home_with_jobs: Path) -> None:
    modules = loaded(home_with_jobs, "get", "jobs", "-o", "wide")
    assert "trainjob.local.state.store" in modules  # it did read the jobs
    assert heavy_in(modules) == {}


def test_help_loads_nothing_heavy(tmp_path: Path) -> None:
    assert heavy_in(loaded(tmp_path, "--help")) == {}


def test_a_command_that_needs_the_models_still_gets_them(tmp_path: Path) -> None:
    """The probe can see a heavy import: describe runtime builds the models."""
    modules = loaded(tmp_path, "describe", "runtime", "torch-distributed")
    assert "pydantic" in modules and "trainjob.api.trainer" in modules


@pytest.mark.parametrize(
    "argv",
    [
        ["version"],
        ["get", "jobs"],
        ["get", "jobs", "-o", "wide", "-A"],
        ["--help"],
        ["get", "--help"],
    ],
    ids=" ".join,
)
def test_version_get_jobs_and_help_start_without_typer(
    home_with_jobs: Path, argv: list[str]
) -> None:
    """cli/fast.py answers them: typer and its command tree are most of a start-up."""
    modules = loaded(home_with_jobs, *argv)
    assert "typer" not in modules and "trainjob.cli.root" not in modules


LISTING_NEEDS_NONE = {
    "dataclasses": "the job model and the store's rows are plain classes and named tuples",
    "inspect": "imported by dataclasses",
    "logging": "the local executor's logger loads on its first message",
    "subprocess": "a supervisor or a pod is started elsewhere (local/client/launch.py, local/state/procs.py)",
    "signal": "local/state/procs.py sends SIGKILL and SIGTERM by their numbers",
    "ctypes": "the process table of a dead job (local/state/ptree.py), a child's prctl",
    "shutil": "removing a job's files, a disk's free space",
    "queue": "following several pods' logs (executor/base.py)",
    "trainjob.executor.triage": "why a Failed job failed (describe, run --follow)",
    "trainjob.local.state.ptree": "stopping a dead supervisor's processes",
}
"""What ``get jobs`` on the local backend does not need; each costs start-up (1-20 ms on the
2-core machine, benchmarks/cli_startup.py) for a command a user types most."""


@pytest.mark.parametrize(
    "argv", [["get", "jobs"], ["get", "jobs", "-o", "wide", "-A"]], ids=" ".join
)
def test_get_jobs_loads_only_what_a_listing_needs(home_with_jobs: Path, argv: list[str]) -> None:
    """The home holds a live job too (submitted a moment ago): its liveness check runs."""
    modules = loaded(home_with_jobs, *argv)
    assert "trainjob.local.client.liveness" in modules and "trainjob.local.state.store" in modules
    assert {m: why for m, why in LISTING_NEEDS_NONE.items() if m in modules} == {}


def test_the_listing_probe_sees_those_modules_where_a_command_needs_them(tmp_path: Path) -> None:
    """The probe can see them: ``describe runtime`` (typer, the models) brings dataclasses."""
    modules = loaded(tmp_path, "describe", "runtime", "torch-distributed")
    assert "dataclasses" in modules and "inspect" in modules


@pytest.mark.parametrize("argv", [["get", "runtimes"], ["get", "runtimes", "-o", "wide"]])
def test_get_runtimes_reads_no_yaml_and_builds_no_model(tmp_path: Path, argv: list[str]) -> None:
    """The built-in runtimes' table comes from the home's JSON copy of their files: no typer,
    YAML or pydantic (the first listing of a home reads the files and writes the copy)."""
    first = loaded(tmp_path, *argv)
    assert "yaml" in first  # read the files, wrote the copy
    assert (tmp_path / "cache" / "builtin-runtimes.json").is_file()
    modules = loaded(tmp_path, *argv)
    assert "trainjob.executor.catalog" in modules  # the module, light: its models load on use
    assert heavy_in(modules - {"trainjob.executor.catalog"}) == {} and "typer" not in modules


COMPILE_PROBE = """
import builtins, json, sys
calls = []
def watch(frame, event, arg):
    # importlib compiles a module whose .pyc is missing or stale (PYTHONDONTWRITEBYTECODE)
    if event == "c_call" and arg is builtins.compile and "importlib" not in frame.f_code.co_filename:
        calls.append(f"{frame.f_code.co_filename}:{frame.f_lineno}")
sys.setprofile(watch)
from trainjob.cli import main
code = main(sys.argv[1:])
sys.setprofile(None)
print(json.dumps({"code": code, "compiles": calls}))
"""


@pytest.mark.parametrize(
    "argv", [["version"], ["get", "jobs"], ["get", "jobs", "-o", "wide", "-A"]], ids=" ".join
)
def test_start_up_compiles_no_source(home_with_jobs: Path, argv: list[str]) -> None:
    """No ``compile()`` on the way: the first one of a process builds the AST types (about 3 ms
    on the 2-core machine). A named tuple whose module has ``from __future__ import annotations``
    compiles each field's annotation (typing.ForwardRef): the modules of the job model, the
    store's rows, the phases and the output format leave that import out."""
    got, stderr = probe(COMPILE_PROBE, home_with_jobs, *argv)
    assert got["code"] == 0, stderr
    assert got["compiles"] == []


def test_the_compile_probe_sees_a_named_tuple_of_string_annotations(tmp_path: Path) -> None:
    """The probe can see one: a named tuple made with string annotations compiles them."""
    script = COMPILE_PROBE.replace(
        "from trainjob.cli import main",
        "import typing\ntyping.NamedTuple('T', [('a', 'str')])\nfrom trainjob.cli import main",
    )
    got, _ = probe(script, tmp_path, "version")
    assert got["compiles"] != []


@pytest.mark.parametrize("enabled", [True, False])
def test_main_leaves_the_cycle_collector_as_it_found_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, enabled: bool
) -> None:
    """main holds the collector off while a command starts (its imports' objects live as long
    as the process), and gives it back as it was: a caller in the same process keeps its own."""
    import gc

    from trainjob.cli import main

    monkeypatch.setenv("TRAINJOB_HOME", str(tmp_path))
    monkeypatch.delenv("TRAINJOB_BACKEND", raising=False)
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        for argv in (["version"], ["get", "jobs"], ["get", "--help"]):
            assert main(argv) == 0
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_the_signal_numbers_procs_sends_are_signals() -> None:
    import signal

    from trainjob.local.state import procs

    assert (procs._SIGKILL, procs._SIGTERM) == (signal.SIGKILL, signal.SIGTERM)


@pytest.mark.parametrize("argv", [["version"], ["--help"], ["get", "--help"]], ids=" ".join)
def test_version_and_help_load_no_typing(tmp_path: Path, argv: list[str]) -> None:
    """Their modules (trainjob, trainjob.api, lazy, errors, the CLI's) name typing's types
    under ``TYPE_CHECKING`` only: typing and what it imports are about 5 ms of them."""
    assert "typing" not in loaded(tmp_path, *argv)


def test_the_probe_sees_typing_where_a_command_needs_it(home_with_jobs: Path) -> None:
    """``get jobs`` builds named tuples (typing.NamedTuple)."""
    assert "typing" in loaded(home_with_jobs, "get", "jobs")
