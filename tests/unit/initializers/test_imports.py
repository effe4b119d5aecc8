"""The initializers run inside a container: they import no backend, and a library only when used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHECK = """
import sys
from trainjob.initializers import command, config
env = {"STORAGE_URI": sys.argv[1], "OUTPUT_PATH": sys.argv[2]}
assert command.run(config.Kind.DATASET, env) == 0
loaded = sorted(
    name for name in sys.modules
    if name.split(".")[0] in ("boto3", "botocore", "huggingface_hub", "kubernetes", "torch")
    or name.startswith(("trainjob.local", "trainjob.controller", "trainjob.client", "trainjob.cli"))
)
print("LOADED", loaded)
"""


def test_a_file_run_imports_no_backend_and_no_remote_library(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_text("a")
    proc = subprocess.run(
        [sys.executable, "-c", CHECK, str(tmp_path / "src"), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "LOADED []" in proc.stdout
    assert (tmp_path / "out" / "a.txt").read_text() == "a"


def test_no_initializer_module_imports_a_backend() -> None:
    root = Path(__file__).parents[3] / "src" / "trainjob" / "initializers"
    for path in root.rglob("*.py"):
        text = path.read_text()
        for banned in ("trainjob.local", "trainjob.controller", "trainjob.client", "trainjob.cli"):
            assert f"from {banned}" not in text and f"import {banned}" not in text, path
