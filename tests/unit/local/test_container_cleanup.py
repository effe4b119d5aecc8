"""Removing a job's containers and network before its end is written (the container backend's
part of "nothing a job started outlives it"): done when the engine says nothing is left, bounded
when it keeps something or fails, and then saying what is left and how to remove it.

The engine is a test double here, a script named ``podman`` keeping its containers and networks
in a file: a real podman cannot be made to keep a container it was told to remove, or to fail
on demand. The real engine's path is tests/e2e/test_container_backend.py's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from trainjob.local.job.containers.engine import Engine
from trainjob.local.job.containers.runner import remove_job

# The fake engine: `ps`/`network ls` list what the state file holds (for the job's label);
# `rm`/`network rm` remove it, except names in "sticky" (an engine that keeps them) and, while
# "fail_calls" > 0, every call fails (an engine in trouble, then well again); after "fail_after"
# calls, every call fails (an engine well, then in trouble).
FAKE = """#!{python}
import json, sys
path = {state!r}
state = json.load(open(path))
args = [a for a in sys.argv[1:] if a not in ("--log-level", "error")]
state["calls"].append(args)
failing = state["fail_after"] is not None and len(state["calls"]) > state["fail_after"]
if state["fail_calls"] > 0 or failing:
    state["fail_calls"] = max(0, state["fail_calls"] - 1)
    json.dump(state, open(path, "w"))
    print("Error: the engine is busy", file=sys.stderr)
    sys.exit(125)
if args[:1] == ["ps"]:
    print("\\n".join(state["containers"]))
elif args[:2] == ["network", "ls"]:
    print("\\n".join(state["networks"]))
elif args[:1] == ["rm"]:
    state["containers"] = [c for c in state["containers"] if c not in args or c in state["sticky"]]
elif args[:2] == ["network", "rm"]:
    state["networks"] = [n for n in state["networks"] if n not in args or n in state["sticky"]]
json.dump(state, open(path, "w"))
"""


def _engine(tmp_path: Path, **state: object) -> tuple[Engine, Path]:
    path = tmp_path / "state.json"
    full = {
        "containers": [],
        "networks": [],
        "sticky": [],
        "fail_calls": 0,
        "fail_after": None,
        "calls": [],
    }
    full.update(state)
    path.write_text(json.dumps(full))
    fake = tmp_path / "bin" / "podman"
    fake.parent.mkdir()
    fake.write_text(FAKE.format(python=sys.executable, state=str(path)))
    fake.chmod(0o755)
    return Engine(str(fake)), path


def _state(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(path.read_text())
    return out


def test_everything_of_the_job_is_removed_and_seen_gone(tmp_path: Path) -> None:
    engine, path = _engine(tmp_path, containers=["a-node-0", "a-node-1"], networks=["trainjob-u"])
    assert remove_job(engine, "u", timeout=30) == []
    state = _state(path)
    assert state["containers"] == [] and state["networks"] == []
    assert state["calls"][-2:] == [
        ["ps", "--all", "--filter", "label=trainjob.local/uid=u", "--format", "{{.Names}}"],
        ["network", "ls", "--filter", "label=trainjob.local/uid=u", "--format", "{{.Name}}"],
    ], "it looked again after removing"


def test_a_suspend_keeps_the_network(tmp_path: Path) -> None:
    engine, path = _engine(tmp_path, containers=["a-node-0"], networks=["trainjob-u"])
    assert remove_job(engine, "u", timeout=30, network=False) == []
    assert _state(path)["networks"] == ["trainjob-u"]


def test_an_engine_that_fails_for_a_while_is_asked_again(tmp_path: Path) -> None:
    engine, path = _engine(tmp_path, containers=["a-node-0"], networks=["trainjob-u"], fail_calls=3)
    assert remove_job(engine, "u", timeout=60) == []
    assert _state(path)["containers"] == [] and _state(path)["networks"] == []


def test_what_the_engine_keeps_is_named_with_its_command_after_the_timeout(tmp_path: Path) -> None:
    engine, _ = _engine(
        tmp_path, containers=["a-node-0"], networks=["trainjob-u"], sticky=["a-node-0"]
    )
    left = remove_job(engine, "u", timeout=2)  # returns (bounded), with what is left
    assert left == [f"container a-node-0 ({engine.command} rm --force a-node-0)"]


def test_an_engine_that_never_answers_well_is_said_so(tmp_path: Path) -> None:
    engine, _ = _engine(tmp_path, containers=["a-node-0"], fail_calls=10_000)
    (left,) = remove_job(engine, "u", timeout=2)
    assert "the engine failed" in left and "the engine is busy" in left
    assert "--filter label=trainjob.local/uid=u" in left, "the command that removes them"


def test_what_an_earlier_look_named_is_said_when_the_last_looks_fail(tmp_path: Path) -> None:
    """A loaded engine's last calls get what is left of the bound (a second) and can time out:
    the containers it named before are still named, each with its command."""
    engine, path = _engine(
        tmp_path, containers=["a-node-0"], networks=["trainjob-u"], sticky=["a-node-0"],
        fail_after=6,
    )  # fmt: skip
    left = remove_job(engine, "u", timeout=8)  # the first look's 6 calls fit in it under load
    assert left == [f"container a-node-0 ({engine.command} rm --force a-node-0)"]
    assert len(_state(path)["calls"]) > 6, "it looked again, and the engine failed then"
