"""Running the ``trainjob`` command as a user does, on the local backend, for the CLI e2e tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "trainjob.cli"]


def local_env(home: Path) -> dict[str, str]:
    """This environment with no cluster or backend choice, and ``home`` as ``$TRAINJOB_HOME``."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TRAINJOB_BACKEND")}
    env["TRAINJOB_HOME"] = str(home)
    return env


def trainjob(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``trainjob ARGS...`` to its end, its output captured."""
    return subprocess.run(
        [*CLI, *args],
        env=local_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
