"""README's "Use" section, run as written, by a new user: the built wheel installed into a fresh
venv outside the repository (tests/e2e/wheel.py), in a folder of their own holding a copy of
``examples/``, a fresh ``$TRAINJOB_HOME`` and no cluster configured (so the local backend).

The shell commands run in order, stopping at the first failure; ``logs -f`` of a finished job
returns. The LLM demo writes where the README says (``/tmp/trainjob-llm-demo``, the folder
``examples/llm-lora.yaml`` reads). The ``python`` block runs as a script. What each command is said
to show (its comment) is checked against what it printed. The installed package, not the
repository's, is what runs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.e2e import wheel

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).parents[2]
USE = re.search(r"^## Use\n(.*?)^## ", (ROOT / "README.md").read_text(), re.M | re.S)


def blocks(lang: str) -> list[str]:
    assert USE, "README.md has no '## Use' section"
    return re.findall(rf"^```{lang}\n(.*?)^```", USE.group(1), re.M | re.S)


def test_the_installed_package_is_the_wheels(user: wheel.User) -> None:
    out = user.sh("command -v trainjob && python -c 'import trainjob; print(trainjob.__file__)'")
    assert out.returncode == 0, out.stderr
    exe, module = out.stdout.split()
    assert exe == str(user.install.bin / "trainjob")
    assert module.startswith(str(user.install.venv)) and "site-packages" in module


def test_the_use_commands_run_in_order_and_show_what_their_comments_say(user: wheel.User) -> None:
    (sh,) = blocks("sh")
    said: dict[str, str] = {}
    for line in wheel.command_lines(sh):
        command = line.split("#", 1)[0].strip()
        out = user.sh(command)
        assert out.returncode == 0, f"{command}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        said[command] = out.stdout + out.stderr
    assert "kind: JobSet" in said["trainjob plan -f examples/torch-ddp.yaml"]
    assert "done: y = 3.00x - 1.00" in said["trainjob run -f examples/torch-ddp.yaml --follow"]
    jobs = said["trainjob get jobs"].splitlines()
    assert jobs[0].split() == [
        "NAME",
        "STATUS",
        "RUNTIME",
        "NODES",
        "RESTARTS",
        "PROGRESS",
        "ETA",
        "AGE",
    ]
    assert jobs[1].split()[:2] == ["torch-ddp", "Complete"]
    described = said["trainjob describe job torch-ddp"]
    assert "Conditions:" in described and "Steps:" in described and "Events:" in described
    assert "allreduce ok rank=2 sum=6 world=4" in said["trainjob logs torch-ddp --step node-1 -f"]
    every = said["trainjob logs torch-ddp --all-steps"].splitlines()
    assert "[node-0] allreduce ok rank=0 sum=6 world=4" in every
    assert "[node-1] allreduce ok rank=3 sum=6 world=4" in every
    assert "trainjob.trainer.kubeflow.org/torch-ddp deleted" in said["trainjob delete torch-ddp"]
    assert "torch-distributed" in said["trainjob get runtimes"]
    lora = said["trainjob run -f examples/llm-lora.yaml --follow"]
    assert "saved LoRA adapter (peft) to " in lora, lora


def test_the_python_snippet_runs_and_prints_rank_0_of_2(user: wheel.User) -> None:
    (snippet,) = blocks("python")
    out = user.python(snippet)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "rank 0 of 2" in out.stdout.splitlines(), out.stdout
