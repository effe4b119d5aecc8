"""trainjob as a new user installs it: the built wheel in a fresh virtual environment, outside the
repository, used from a folder of their own that holds a copy of ``examples/``.

``build(root)`` builds the wheel (``uv build``, as README's Install section says) and installs it
with every user's extra (``torch,initializers,llm,dashboard``) into ``root/venv`` (``uv venv``,
``uv pip install``: from uv's cache, a few seconds; nothing of the repository's ``.venv`` or
``src/`` is on its path). ``pip_install(root, wheel)`` is the other road README shows: ``python3
-m venv``, activated, then ``pip install`` of the wheel with the extras that need no torch
(pip has no uv cache to take torch's 5 GB from; its packages come from PyPI).
``User.env()`` is that user's environment: the venv's ``bin`` first on PATH, a fresh ``HOME`` and
``TRAINJOB_HOME``, no cluster configured, no ``PYTHONPATH``. Used by tests/e2e/test_readme.py and
tests/e2e/test_docs.py through the session fixture in tests/e2e/conftest.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXTRAS = "torch,initializers,llm,dashboard"
PIP_EXTRAS = "initializers,dashboard"


@dataclass(frozen=True)
class Install:
    """The wheel and the venv it went into."""

    wheel: Path
    venv: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"


def _run(argv: list[str], what: str) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    if res.returncode != 0:
        raise AssertionError(f"{what} failed ({' '.join(argv)}):\n{res.stdout}{res.stderr}")
    return res.stdout + res.stderr


def build(root: Path) -> Install:
    uv = shutil.which("uv")
    assert uv, "uv is not on PATH (scripts/setup.sh installs it)"
    dist = root / "dist"
    _run([uv, "build", "--wheel", "--quiet", "-o", str(dist), str(REPO)], "uv build")
    (wheel,) = dist.glob("trainjob-*.whl")
    venv = root / "venv"
    _run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], "uv venv")
    _run(
        [uv, "pip", "install", "--quiet", "-p", str(venv / "bin" / "python"), f"{wheel}[{EXTRAS}]"],
        "uv pip install",
    )
    return Install(wheel, venv)


def pip_install(root: Path, wheel: Path) -> Install:
    """README's environment step and ``pip install`` line, as a user types them (``python3`` the
    interpreter the tests run on), with :data:`PIP_EXTRAS`."""
    python3 = Path(sys.base_prefix) / "bin" / "python3"
    venv = root / "pipvenv"
    line = (
        f"{python3} -m venv {venv} && . {venv}/bin/activate && "
        f"pip install --quiet --disable-pip-version-check '{wheel}[{PIP_EXTRAS}]'"
    )
    _run(["bash", "-c", line], "python3 -m venv, pip install")
    return Install(wheel, venv)


@dataclass(frozen=True)
class User:
    """One user's folder (with ``examples/``) and home, on top of the installed wheel."""

    install: Install
    work: Path
    home: Path

    @classmethod
    def make(cls, install: Install, root: Path) -> User:
        work, home = root / "work", root / "home"
        work.mkdir(parents=True)
        home.mkdir()
        shutil.copytree(REPO / "examples", work / "examples")
        return cls(install, work, home)

    def env(self) -> dict[str, str]:
        drop = ("KUBECONFIG", "TRAINJOB_BACKEND", "KUBERNETES_SERVICE_HOST", "PYTHONPATH")
        env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("VIRTUAL")}
        path = [p for p in env.get("PATH", "").split(os.pathsep) if p]
        repo_bin = str(Path(sys.executable).parent)
        path = [p for p in path if p != repo_bin]  # not the repository's .venv
        env.update(
            HOME=str(self.home),
            TRAINJOB_HOME=str(self.home / ".trainjob"),
            PATH=os.pathsep.join([str(self.install.bin), *path]),
            VIRTUAL_ENV=str(self.install.venv),
        )
        return env

    def sh(self, line: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """One shell line, as typed in the user's folder."""
        return subprocess.run(
            ["bash", "-o", "pipefail", "-c", line],
            cwd=self.work,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def python(self, script: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """A Python snippet, saved as a file in the user's folder and run with the venv's python."""
        path = self.work / "snippet.py"
        path.write_text(script)
        return subprocess.run(
            [str(self.install.python), str(path)],
            cwd=self.work,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def command_lines(block: str) -> list[str]:
    """The commands of an ``sh`` block: one a line (``\\`` continues a line), comments dropped."""
    joined = re.sub(r"\\\n\s*", "", block)
    return [ln for ln in joined.splitlines() if ln.split("#", 1)[0].strip()]
