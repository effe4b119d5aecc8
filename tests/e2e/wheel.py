"""trainjob as a new user installs it: the built wheel in a fresh virtual environment, outside the
repository, used from a folder of their own that holds a copy of ``examples/``.

``build(root)`` builds the wheel (``uv build``, as README's Install section says) and installs it
with every user's extra (``torch,initializers,llm,dashboard``) into ``root/venv`` (``uv venv``,
``uv pip install``: from uv's cache, a few seconds; nothing of the repository's ``.venv`` or
``src/`` is on its path). ``pip_install(root, wheel)`` is the road README's Install block shows,
its lines as written: ``python3 -m venv .venv && . .venv/bin/activate``, then ``pip install
'dist/...whl[...]'`` with the extras that need no torch (pip has no uv cache to take torch's
5 GB from; its packages come from PyPI).
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


def readme_install_lines() -> list[str]:
    """The commands of README's Install block after the build: the environment step and the
    ``pip install`` line, comments dropped."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"^## Install\n.*?^```sh\n(.*?)^```", text, re.M | re.S)
    assert block, "README.md's Install section has no sh block"
    lines = [ln.split("#", 1)[0].strip() for ln in command_lines(block.group(1))]
    assert lines[0].startswith("uv build --wheel"), lines
    return lines[1:]


def pip_install(root: Path, wheel: Path) -> Install:
    """README's environment step and ``pip install`` line, as written, in ``root`` (``python3``
    the interpreter the tests run on, ``dist/`` the built wheel's folder), the extras cut to
    :data:`PIP_EXTRAS`: what a user without uv types."""
    python3 = Path(sys.base_prefix) / "bin" / "python3"
    lines = readme_install_lines()
    assert lines[0] == "python3 -m venv .venv && . .venv/bin/activate", lines
    assert lines[1].startswith("pip install 'dist/" + wheel.name + "["), lines
    (root / "dist").mkdir(exist_ok=True)
    shutil.copy(wheel, root / "dist" / wheel.name)
    install = re.sub(r"\[[a-z,]+\]'", f"[{PIP_EXTRAS}]'", lines[1])
    install = install.replace("pip install ", "pip install --quiet --disable-pip-version-check ", 1)
    line = lines[0].replace("python3 ", f"{python3} ", 1) + " && " + install
    res = subprocess.run(
        ["bash", "-c", line], cwd=root, capture_output=True, text=True, timeout=900, check=False
    )
    assert res.returncode == 0, f"{line}\n{res.stdout}{res.stderr}"
    return Install(wheel, root / ".venv")


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
