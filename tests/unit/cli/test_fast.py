"""cli/fast.py answers ``version``, plain ``get jobs``/``get runtimes`` and ``--help`` without typer,
and prints what typer's command prints: each command line here runs once through :func:`trainjob.cli.main` (the fast
way, when it takes it) and once through typer alone (:func:`trainjob.cli.root.run`), each in a
fresh interpreter on the same home, and the exit codes, stdout and stderr must be the same;
lines it must leave to typer (``--help``, a flag without its value, an unknown flag, a kind/name)
must reach typer, which says what is wrong."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import json, os, sys
{call}
code = run(sys.argv[1:])
sys.stdout.flush()
with open(os.environ["PROBE_OUT"], "w") as f:
    json.dump({{"code": code, "typer": "typer" in sys.modules}}, f)
"""
FAST = PROBE.format(call="from trainjob.cli import main as run")
TYPER = PROBE.format(call="from trainjob.cli.root import run")
AGE = re.compile(r"\b\d+(?:d\d*h?|h\d*m?|m\d*s?|s)\b")


def trainjob(
    home: Path, probe: str, argv: list[str], backend: str | None, columns: str | None = None
) -> tuple[int, str, str, bool]:
    out = home.parent / "probe.json"
    drop = ("KUBECONFIG", "TRAINJOB_BACKEND", "COLUMNS")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(TRAINJOB_HOME=str(home), PROBE_OUT=str(out))
    if columns is not None:
        env["COLUMNS"] = columns
    if backend is not None:
        env["TRAINJOB_BACKEND"] = backend
    res = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    got = json.loads(out.read_text())
    out.unlink()
    # AGE counts seconds: the two runs may see different ones
    return got["code"], AGE.sub("<age>", res.stdout), AGE.sub("<age>", res.stderr), got["typer"]


TAKEN = [
    ["version"],
    ["--backend", "local", "version"],
    ["--backend=LOCAL", "--context", "ctx", "version"],
    ["get", "jobs"],
    ["get", "job"],
    ["get", "trainjobs"],
    ["get", "jobs", "-o", "wide"],
    ["get", "jobs", "-A"],
    ["get", "jobs", "--all-namespaces", "--output=wide", "--no-headers"],
    ["get", "jobs", "-o", "json"],
    ["get", "jobs", "-o", "yaml"],
    ["get", "jobs", "-o", "name"],
    ["get", "jobs", "-o", "jsonpath={.items[*].metadata.name}"],
    ["get", "jobs", "job-0"],
    ["get", "jobs", "job-0", "job-2", "-o", "json"],
    ["get", "jobs", "nope"],
    ["get", "jobs", "-n", "other"],
    ["get", "jobs", "--namespace=default", "--no-headers"],
    ["get", "jobs", "-l", "team=ml"],
    ["get", "jobs", "--selector", "team in (ml,infra),team!=infra"],
    ["get", "jobs", "--sort-by", ".metadata.labels.team"],
    ["get", "jobs", "-o", "bogus"],
    ["get", "jobs", "-l", "team in ("],
    ["get", "jobs", "-o", ""],
    ["get", "runtimes"],
    ["get", "runtime", "-o", "wide"],
    ["get", "clustertrainingruntimes", "--no-headers"],
    ["get", "trainingruntimes", "-n", "other"],
    ["get", "runtimes", "torch-distributed", "mpi-distributed", "-o", "wide"],
    ["get", "runtimes", "nope"],
    ["get", "runtimes", "-o", "json"],
    ["get", "runtimes", "torch-distributed", "-o", "yaml"],
    ["get", "runtimes", "--output=name", "--namespace=other"],
    ["get", "runtimes", "-o", "bogus"],
    ["--help"],
    ["version", "--help"],
    ["get", "--help"],
    ["get", "jobs", "--help"],
    ["get", "runtimes", "--help"],
    ["run", "--help"],
    ["logs", "--help"],
    ["describe", "runtime", "--help"],
    ["controller", "--help"],
]
LEFT = [
    ["get", "jobs", "-A", "--help"],
    ["--backend", "local", "--help"],
    ["get", "job", "--help"],
    ["nope", "--help"],
    ["get", "nope", "--help"],
    ["get", "jobs", "-n"],
    ["get", "jobs", "-n", "-A"],
    ["get", "jobs", "--bogus"],
    ["get", "jobs", "-nother"],
    ["get", "trainjob/job-0"],
    ["get", "jobs", "trainjob/job-0"],
    ["get", "-n", "x", "jobs"],
    ["--backend", "nope", "get", "jobs"],
    ["--backend"],
    ["get", "jobs", "--backend", "local"],
    ["get", "runtimes", "-A"],
    ["get", "runtimes", "-l", "a=b"],
    ["get", "runtime/torch-distributed"],
    ["version", "extra"],
    ["get"],
    [],
]


@pytest.fixture
def home(home_with_jobs: Path) -> Path:
    """The jobs' home with stored runtimes too: one in place of a built-in (another framework
    label, 3 nodes, its own image) and a TrainingRuntime in each of two namespaces."""
    import copy

    from trainjob.executor import catalog
    from trainjob.local.state import home as homes
    from trainjob.local.state.store import Store

    store = Store(homes.db_path(home_with_jobs))
    torch = copy.deepcopy(catalog.builtin_documents()[3])
    assert torch["metadata"]["name"] == "torch-distributed"
    torch["metadata"]["labels"]["trainer.kubeflow.org/framework"] = "torch-custom"
    torch["spec"]["mlPolicy"]["numNodes"] = 3
    jobs = torch["spec"]["template"]["spec"]["replicatedJobs"]
    jobs[-1]["template"]["spec"]["template"]["spec"]["containers"][0]["image"] = "mine:1"
    store.put_runtime("ClusterTrainingRuntime", "", "torch-distributed", torch)
    for ns in ("default", "other"):
        rt = {**copy.deepcopy(torch), "kind": "TrainingRuntime"}
        rt["metadata"] = {**rt["metadata"], "name": f"team-{ns}", "namespace": ns}
        store.put_runtime("TrainingRuntime", ns, f"team-{ns}", rt)
    return home_with_jobs


@pytest.mark.parametrize("argv", TAKEN, ids=" ".join)
def test_taken_here_and_printed_as_typer_prints(home: Path, argv: list[str]) -> None:
    fast = trainjob(home, FAST, argv, None)
    assert fast[3] is False, "answered through typer"
    assert fast[:3] == trainjob(home, TYPER, argv, None)[:3]


@pytest.mark.parametrize("argv", LEFT, ids=lambda a: " ".join(a) or "(none)")
def test_left_to_typer(home: Path, argv: list[str]) -> None:
    fast = trainjob(home, FAST, argv, None)
    assert fast[3] is True, "not left to typer"
    assert fast[:3] == trainjob(home, TYPER, argv, None)[:3]


def test_the_runtimes_listing_shows_stored_ones_over_built_in_ones(home: Path) -> None:
    """What is compared above is a real listing: the stored runtime in place of the built-in
    one, a namespace's TrainingRuntime with ``-n``."""
    code, out, _, _ = trainjob(home, FAST, ["get", "runtimes", "-o", "wide"], None)
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:]}
    assert code == 0 and "team-other" not in rows
    assert rows["torch-distributed"][1:3] == ["torch-custom", "3"]
    assert "mine:1" in rows["torch-distributed"][3].split(",")
    assert rows["team-default"][:2] == ["TrainingRuntime", "torch-custom"]
    assert rows["mpi-distributed"][:2] == ["ClusterTrainingRuntime", "mpi"]
    code, out, _, _ = trainjob(home, FAST, ["get", "runtimes", "-n", "other"], None)
    assert "team-other" in out and "team-default" not in out


@pytest.mark.parametrize(
    ("columns", "fast"), [("80", True), ("200", True), ("79", False), ("40", False), ("x", True)]
)
@pytest.mark.parametrize("argv", [["--help"], ["get", "jobs", "--help"]], ids=" ".join)
def test_help_is_taken_where_its_screen_is_80_columns_wide(
    home: Path, argv: list[str], columns: str, fast: bool
) -> None:
    """click's help is 80 columns wide on a terminal as wide or wider (help.json's screens); on a
    narrower one typer wraps it to the width."""
    got = trainjob(home, FAST, argv, None, columns)
    assert got[3] is not fast
    assert got[:3] == trainjob(home, TYPER, argv, None, columns)[:3]


def test_the_help_screens_are_the_commands_help(home: Path) -> None:
    """What is compared above is real help: the usage line and the options of the command."""
    code, out, _, typer = trainjob(home, FAST, ["get", "jobs", "--help"], None)
    assert code == 0 and not typer
    assert out.startswith("Usage: trainjob get jobs [OPTIONS] [NAME]...")
    assert "--sort-by" in out and "--no-headers" in out
    code, out, _, _ = trainjob(home, FAST, ["--help"], None)
    assert "Commands:" in out and "describe" in out and "--backend" in out


@pytest.mark.parametrize(
    ("backend", "fast"), [("Local", True), ("bogus", False), ("", False)], ids=repr
)
def test_trainjob_backend_variable(home_with_jobs: Path, backend: str, fast: bool) -> None:
    got = trainjob(home_with_jobs, FAST, ["get", "jobs"], backend)
    assert got[3] is not fast
    assert got[:3] == trainjob(home_with_jobs, TYPER, ["get", "jobs"], backend)[:3]


def test_the_listing_shows_the_jobs(home_with_jobs: Path) -> None:
    """What is compared above is a real listing: the three jobs, their phases."""
    code, out, _, _ = trainjob(home_with_jobs, FAST, ["get", "jobs", "--no-headers"], None)
    rows = [line.split()[:2] for line in out.splitlines()]
    assert code == 0
    assert rows == [["job-0", "Complete"], ["job-1", "Failed"], ["job-2", "Running"]]


@pytest.mark.parametrize("probe", [FAST, TYPER], ids=["fast", "typer"])
@pytest.mark.parametrize("output", ["wide", "yaml"])
def test_a_reader_gone_ends_it_quietly(home_with_jobs: Path, probe: str, output: str) -> None:
    """``trainjob get jobs | head``: the reader closes the pipe; no traceback, exit 1 (as the
    typer way always did)."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TRAINJOB_BACKEND")}
    out = home_with_jobs.parent / "p.json"
    env.update(TRAINJOB_HOME=str(home_with_jobs), PROBE_OUT=str(out))
    read, write = os.pipe()
    os.close(read)  # gone before anything is written
    try:
        res = subprocess.run(
            [sys.executable, "-c", probe, "get", "jobs", "-o", output],
            env=env,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert res.returncode == 0 and json.loads(out.read_text())["code"] == 1
    assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr, res.stderr
