"""What a kubectl user types, on the local backend, as a user runs it (``trainjob`` in a process):

``get -l``, ``--sort-by``, ``--no-headers``, ``-o jsonpath=``, ``-o json`` as a List without a
name, ``get TYPE/NAME``, ``describe runtime``; ``delete --all|-f|-l``; ``apply -f`` (created,
unchanged, configured, refused); ``logs --tail N [-f]``, ``--timestamps``, ``-p`` after a restart;
``run --follow`` streaming the initializer's own lines, and Ctrl-C saying the job goes on and
how to stop it. The pod log API's parameters (``tailLines``, ``previous``, ``timestamps``) that
the Kubernetes backend passes: tests/unit/kube/test_client.py.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from tests.e2e import local_jobs as L
from tests.e2e.cli import CLI, local_env, trainjob

pytestmark = pytest.mark.e2e


def files(tmp_path: Path, *jobs: dict, runtime: dict | None = None) -> Path:  # type: ignore[type-arg]
    path = tmp_path / "jobs.yaml"
    docs = [runtime or L.runtime().to_dict(), *jobs]
    path.write_text(yaml.safe_dump_all(docs))
    return path


def job(name: str, code: str = "print('hi')", labels: dict[str, str] | None = None) -> dict:  # type: ignore[type-arg]
    d = L.trainjob(name, code).to_dict()
    if labels:
        d["metadata"]["labels"] = labels
    return d


def ok(home: Path, *args: str) -> str:
    out = trainjob(home, *args)
    assert out.returncode == 0, f"{args}: {out.stderr}"
    return out.stdout


@pytest.fixture
def three(tmp_path: Path) -> tuple[Path, Path]:
    """Three finished jobs: b (team ml), a (team infra), c (team ml), created in that order."""
    home = tmp_path / "home"
    f = files(
        tmp_path,
        job("b", labels={"team": "ml"}),
        job("a", labels={"team": "infra"}),
        job("c", labels={"team": "ml"}),
    )
    ok(home, "run", "-f", str(f), "--wait")
    return home, f


def test_get_selects_sorts_and_prints_as_kubectl(three: tuple[Path, Path]) -> None:
    home, _ = three
    names = ok(home, "get", "jobs", "-o", "name")
    assert names.split() == [f"trainjob.trainer.kubeflow.org/{n}" for n in "bac"]  # oldest first
    assert ok(home, "get", "jobs", "-l", "team=ml", "-o", "name").split() == [
        "trainjob.trainer.kubeflow.org/b",
        "trainjob.trainer.kubeflow.org/c",
    ]
    assert ok(home, "get", "jobs", "-l", "team!=ml", "-o", "name").split() == [
        "trainjob.trainer.kubeflow.org/a"
    ]
    assert ok(home, "get", "jobs", "-l", "team in (infra)", "-o", "name").count("/") == 1
    rows = ok(home, "get", "jobs", "--sort-by", ".metadata.name", "--no-headers").splitlines()
    assert [r.split()[0] for r in rows] == ["a", "b", "c"]
    assert not rows[0].startswith("NAME")
    by_path = ok(home, "get", "jobs", "-o", "jsonpath={.items[*].metadata.name}")
    assert by_path == "b a c"  # no newline added, as kubectl
    ranged = ok(
        home,
        "get",
        "jobs",
        "--sort-by",
        "{.metadata.name}",
        "-o",
        r'jsonpath={range .items[*]}{.metadata.name}={.metadata.labels.team}{"\n"}{end}',
    )
    assert ranged == "a=infra\nb=ml\nc=ml\n"
    assert ok(home, "get", "jobs", "a", "-o", "jsonpath={.metadata.labels.team}") == "infra"


def test_json_is_a_list_without_a_name_even_of_one(three: tuple[Path, Path]) -> None:
    home, _ = three
    one = json.loads(ok(home, "get", "jobs", "-l", "team=infra", "-o", "json"))
    assert one["kind"] == "List" and [i["metadata"]["name"] for i in one["items"]] == ["a"]
    named = json.loads(ok(home, "get", "jobs", "a", "-o", "json"))
    assert named["kind"] == "TrainJob"
    none = json.loads(ok(home, "get", "jobs", "-l", "team=nobody", "-o", "json"))
    assert none == {"apiVersion": "v1", "kind": "List", "items": []}


def test_type_slash_name_and_describe_runtime(three: tuple[Path, Path]) -> None:
    home, _ = three
    assert ok(home, "get", "trainjob/a", "-o", "name") == "trainjob.trainer.kubeflow.org/a\n"
    assert ok(home, "get", "tj/a", "tj/c", "-o", "name").split() == [
        "trainjob.trainer.kubeflow.org/a",
        "trainjob.trainer.kubeflow.org/c",
    ]
    rows = ok(home, "get", "runtime/torch-distributed", "--no-headers").split()
    assert rows[:3] == ["torch-distributed", "ClusterTrainingRuntime", "torch"]
    described = ok(home, "describe", "runtime", "torch-distributed")
    assert re.search(r"^MLPolicy: +torch$", described, re.M)
    assert re.search(r"^  node +1 +node +pytorch/pytorch:", described, re.M)
    assert ok(home, "describe", "trainjob/a").startswith("Name:       a\n")
    bad = trainjob(home, "get", "pods/x")
    assert bad.returncode == 1 and 'doesn\'t have a resource type "pods"' in bad.stderr


def test_delete_all_by_file_by_selector(three: tuple[Path, Path]) -> None:
    home, f = three
    gone = ok(home, "delete", "-l", "team=infra")
    assert gone == "trainjob.trainer.kubeflow.org/a deleted\n"
    missing = trainjob(
        home, "delete", "-f", str(f)
    )  # a is gone already: b and c go, then the error
    assert missing.returncode == 1
    assert missing.stdout.split("\n")[:2] == [
        "trainjob.trainer.kubeflow.org/b deleted",
        "trainjob.trainer.kubeflow.org/c deleted",
    ]
    assert 'trainjobs.trainer.kubeflow.org "a" not found' in missing.stderr
    none = trainjob(home, "delete", "--all")
    assert (none.returncode, none.stderr.strip()) == (0, "No resources found")
    which = trainjob(home, "delete")
    assert which.returncode == 1 and "say which jobs" in which.stderr


def test_apply_creates_then_leaves_alone_then_suspends_and_refuses_changes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    slow = job("slow", "import time; time.sleep(120)")
    f = files(tmp_path, slow)
    assert ok(home, "apply", "-f", str(f)) == "trainjob.trainer.kubeflow.org/slow created\n"
    assert ok(home, "apply", "-f", str(f)) == "trainjob.trainer.kubeflow.org/slow unchanged\n"
    slow["spec"]["suspend"] = True
    f = files(tmp_path, slow)
    assert ok(home, "apply", "-f", str(f)) == "trainjob.trainer.kubeflow.org/slow configured\n"
    assert ok(home, "get", "jobs", "slow", "--no-headers").split()[1] == "Suspended"
    slow["spec"]["trainer"]["numNodes"] = 3
    refused = trainjob(home, "apply", "-f", str(files(tmp_path, slow)))
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        'The TrainJob "slow" is invalid: spec.trainer.numNodes: Forbidden: field is immutable'
    )
    ok(home, "delete", "slow")


def test_logs_tail_timestamps_and_the_previous_attempt(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code = (
        "import os, sys, time\n"
        "for i in range(5):\n"
        "    print('attempt', os.environ['ATTEMPT'], 'line', i, flush=True)\n"
        "    time.sleep(0.8)\n"
        "sys.exit(1 if os.environ['ATTEMPT'] == '0' else 0)\n"
    )
    rt = L.runtime(failure_policy={"maxRestarts": 1}).to_dict()
    f = files(tmp_path, job("flaky", code), runtime=rt)
    ok(home, "run", "-f", str(f), "--wait")
    assert ok(home, "logs", "flaky", "--tail", "2").splitlines() == [
        "attempt 1 line 3",
        "attempt 1 line 4",
    ]
    assert ok(home, "logs", "flaky", "--tail", "0") == ""
    assert ok(home, "logs", "flaky", "-p", "--tail", "1") == "attempt 0 line 4\n"
    stamped = ok(home, "logs", "flaky", "--timestamps").splitlines()
    assert len(stamped) == 5
    when = [datetime.fromisoformat(s.split(" ", 1)[0].replace("Z", "+00:00")) for s in stamped]
    assert [s.split(" ", 1)[1] for s in stamped] == [f"attempt 1 line {i}" for i in range(5)]
    # written 0.8 s apart (3.2 s from the first to the last), recorded by the supervisor's ticks
    # (50 ms, later on a busy machine: a tick late by half the span still passes; 0.3 s apart
    # left a loaded supervisor's first late tick 0.6 s)
    assert when == sorted(when)
    assert 1.6 < (when[-1] - when[0]).total_seconds() < 20
    followed = ok(home, "logs", "flaky", "-f", "--tail", "1")
    assert followed == "attempt 1 line 4\n"
    every = ok(home, "logs", "flaky", "--all-steps", "--tail", "1", "--timestamps")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+Z \[node-0\] attempt 1 line 4\n", every)
    bad = trainjob(home, "logs", "flaky", "-p", "-f")
    assert bad.returncode == 1 and "--previous reads one ended log" in bad.stderr


def test_run_follow_streams_the_initializers_lines(tmp_path: Path) -> None:
    home = tmp_path / "home"
    init = (
        "import time\n"
        "for i in range(3):\n"
        "    print(f'{i + 1}/3 files, {i + 1}.0/3.0 MiB', flush=True)\n"
        "    time.sleep(0.2)\n"
    )
    rt = L.runtime(initializer=init).to_dict()
    f = files(tmp_path, job("inits", "print('training')"), runtime=rt)
    out = trainjob(home, "run", "-f", str(f), "--follow")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "training"  # the trainer's log on stdout
    said = out.stderr.splitlines()
    for i in range(3):
        assert f"[dataset-initializer] {i + 1}/3 files, {i + 1}.0/3.0 MiB" in said


def test_ctrl_c_while_following_says_the_job_goes_on_and_how_to_stop_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    f = files(tmp_path, job("long", "import time; print('started', flush=True); time.sleep(120)"))
    proc = subprocess.Popen(
        [*CLI, "run", "-f", str(f), "--follow"],
        env=local_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in a terminal
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    while "started" not in proc.stdout.readline():
        assert time.monotonic() < deadline
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert (
        "trainjob.trainer.kubeflow.org/long goes on running (Ctrl-C only stopped watching it): "
        "follow it again with 'trainjob logs long -n default -f', stop it with "
        "'trainjob delete long -n default'"
    ) in err
    assert ok(home, "get", "jobs", "long", "--no-headers").split()[1] == "Running"
    ok(home, "delete", "long")
