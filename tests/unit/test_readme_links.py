"""README.md links every docs page, and every relative link in it and in docs/ points at a file
that exists (links between docs pages and their anchors are checked by ``mkdocs build --strict``
in scripts/test.sh)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def relative_links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return [
        link.split("#", 1)[0]
        for link in LINK.findall(text)
        if not link.startswith(("http://", "https://", "mailto:", "#"))
    ]


def test_readme_links_every_docs_page() -> None:
    linked = {Path(link).as_posix() for link in relative_links(REPO / "README.md")}
    pages = {p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md")}
    pages.discard("docs/index.md")  # the site's home page: the README is the repository's
    assert pages <= linked, f"README.md does not link {sorted(pages - linked)}"


@pytest.mark.parametrize(
    "doc",
    [
        "README.md",
        "docker/README.md",
        "manifests/controller/README.md",
        "hack/README.md",
        *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md")),
    ],
)
def test_relative_links_point_at_files(doc: str) -> None:
    base = (REPO / doc).parent
    missing = [link for link in relative_links(REPO / doc) if not (base / link).exists()]
    assert missing == []
