"""Real containers in tests: podman here, and trainjob's images built by hack/build-images.sh.

A test that needs containers calls :func:`require_podman` (or uses the ``podman`` fixture); where
podman cannot run a container it is skipped, and the skip says why (pytest -ra lists it), never
silently. :func:`image` builds a target of docker/Containerfile the first time a session asks (a
no-op when scripts/test.sh has built it: images are cached by content). ``CONTAINERS_CONF``
defaults to hack/containers.conf, which these machines' sandbox needs (no rlimits, runc).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path

import pytest

from trainjob.local.state import ptree

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "hack" / "build-images.sh"
os.environ.setdefault("CONTAINERS_CONF", str(REPO / "hack" / "containers.conf"))
BASE = "localhost/trainjob/base:bookworm"


@functools.cache
def podman_problem() -> str:
    """Why podman cannot run containers here ("" when it can)."""
    try:
        proc = subprocess.run(
            ["bash", str(BUILD), "--check"], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        return "podman did not answer within 120s"
    return "" if proc.returncode == 0 else (proc.stdout + proc.stderr).strip()


def require_podman() -> None:
    problem = podman_problem()
    if problem:
        pytest.skip(f"podman cannot run containers here: {problem}")


@functools.cache
def image(target: str) -> str:
    """The tag of trainjob's image ``target``, built if needed (the failure is a test failure)."""
    require_podman()
    proc = subprocess.run(
        ["bash", str(BUILD), target], capture_output=True, text=True, timeout=3600
    )
    if proc.returncode == 3:  # podman cannot run a container here at all (its last line says why)
        pytest.skip(
            f"podman cannot run containers here: {(proc.stdout + proc.stderr).strip().splitlines()[-1]}"
        )
    if proc.returncode != 0:
        pytest.fail(f"hack/build-images.sh {target} failed:\n{(proc.stdout + proc.stderr)[-6000:]}")
    return tag(target)


@functools.cache
def tag(target: str) -> str:
    """The tag hack/build-images.sh gives ``target`` (nothing is built: a TrainJob can name it
    where no container runs, on the process backend or on the simulated cluster)."""
    return subprocess.run(
        ["bash", str(BUILD), "--tag", target], capture_output=True, text=True, check=True
    ).stdout.strip()


def podman(
    *args: str, timeout: float = 120, check: bool = True
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout, check=check
    )


def left_behind(uid: str) -> dict[str, list[str]]:
    """Containers, networks and pods of job ``uid`` that still exist (by the backend's label),
    and processes that carry its mark (the engine CLIs its pods ran, and what they started)."""
    label = f"label=trainjob.local/uid={uid}"
    found = {  # the network first: what a supervisor removed last
        "networks": podman("network", "ls", "--filter", label, "--format", "{{.Name}}").stdout,
        "containers": podman("ps", "-a", "--filter", label, "--format", "{{.Names}}").stdout,
        "pods": podman("pod", "ps", "--filter", label, "--format", "{{.Name}}").stdout,
        "processes": " ".join(str(pid) for pid in ptree.owned(f"{uid}/")),
    }
    return {k: v.split() for k, v in found.items() if v.split()}


def image_config(tag: str) -> dict[str, object]:
    out: dict[str, object] = json.loads(podman("image", "inspect", tag).stdout)[0]["Config"]
    return out
