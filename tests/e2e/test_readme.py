"""README's "Use" section, run as written: the shell commands in order, and the Python snippet.

Each line of the ``sh`` block runs from the repository root with ``trainjob`` on PATH (this venv),
a fresh ``$TRAINJOB_HOME`` and no cluster configured (so the local backend), stopping at the first
failure; ``logs -f`` of a finished job returns. The LLM demo writes where the README says
(``/tmp/trainjob-llm-demo``, the folder ``examples/llm-lora.yaml`` reads). The ``python`` block runs as a script. What each
command is said to show (its comment) is checked against what it printed.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).parents[2]
USE = re.search(r"^## Use\n(.*?)^## ", (ROOT / "README.md").read_text(), re.M | re.S)


def blocks(lang: str) -> list[str]:
    assert USE, "README.md has no '## Use' section"
    return re.findall(rf"^```{lang}\n(.*?)^```", USE.group(1), re.M | re.S)


def env_for(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("KUBECONFIG", "TRAINJOB_BACKEND", "KUBERNETES_SERVICE_HOST")
    }
    home = tmp_path / "home"
    home.mkdir()
    bindir = str(Path(sys.executable).parent)
    env.update(
        HOME=str(home),
        TRAINJOB_HOME=str(tmp_path / "trainjob-home"),
        PATH=bindir + os.pathsep + env.get("PATH", ""),
    )
    return env


def test_the_use_commands_run_in_order_and_show_what_their_comments_say(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    (sh,) = blocks("sh")
    said: dict[str, str] = {}
    for line in sh.splitlines():
        command = line.split("#", 1)[0].strip()
        if not command:
            continue
        argv = shlex.split(command)
        if argv[0] == "python":
            argv[0] = sys.executable
        out = subprocess.run(
            argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
        )
        assert out.returncode == 0, f"{command}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        said[command] = out.stdout + out.stderr
    assert "kind: JobSet" in said["trainjob plan -f examples/torch-ddp.yaml"]
    assert "done: y = 3.00x + -1.00" in said["trainjob run -f examples/torch-ddp.yaml --follow"]
    jobs = said["trainjob get jobs"].splitlines()
    assert jobs[0].split() == ["NAME", "STATUS", "RUNTIME", "NODES", "RESTARTS", "AGE"]
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


def test_the_python_snippet_runs_and_prints_rank_0_of_2(tmp_path: Path) -> None:
    (snippet,) = blocks("python")
    script = tmp_path / "snippet.py"
    script.write_text(snippet)
    out = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "rank 0 of 2" in out.stdout.splitlines(), out.stdout
