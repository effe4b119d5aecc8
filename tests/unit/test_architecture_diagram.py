"""docs/architecture.svg is drawn from hack/architecture-diagram.py: it must not go stale."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_architecture_picture_is_drawn_from_its_source() -> None:
    ran = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "architecture-diagram.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    svg = (ROOT / "docs" / "architecture.svg").read_text()
    assert svg.startswith("<svg") and "Executor interface" in svg


def test_the_architecture_page_shows_the_picture_and_is_linked_from_the_readme() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert "](architecture.svg)" in page
    assert "(docs/architecture.md)" in (ROOT / "README.md").read_text()


def test_every_path_the_picture_names_exists() -> None:
    import re

    text = " ".join(
        re.findall(r">([^<]*)</text>", (ROOT / "docs" / "architecture.svg").read_text())
    )
    paths = set(re.findall(r"[a-z_]+(?:/[a-z_]+)*/(?:[a-z_]+\.py)?|[a-z_]+\.py", text))
    assert "local/job/containers/" in paths and "optimizer/" in paths
    src = ROOT / "src" / "trainjob"
    missing = sorted(p for p in paths if not (src / p).exists())
    assert missing == [], f"docs/architecture.svg names paths that do not exist: {missing}"
