"""Every docs page's snippets, run as written by a new user of the built wheel (tests/e2e/wheel.py:
a fresh venv outside the repository, a folder of their own with a copy of ``examples/``, the local
backend).

On each page, in order: each ``sh`` block's lines run with bash (stopping at the first failure),
each ``python`` block runs as a script, all in one folder and ``$TRAINJOB_HOME`` for the page. A
block that must not run here is marked by the line before it: ``<!-- test: skip REASON -->``
(a reason is required), or ``<!-- test: NAME -->`` for a block a test of its own runs (such as
the cluster installs of docs/controller-install.md, run by tests/integration/test_kubectl_install.py
on a fresh apiserver; each NAME must be run by some test). A few pages' outputs are checked beyond
their exit codes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.e2e import wheel

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
BLOCK = re.compile(
    r"(?:^<!-- test: (?P<note>[^\n]*?) -->\n)?^```(?P<lang>\w*)\n(?P<body>.*?)^```", re.M | re.S
)


@dataclass(frozen=True)
class Snippet:
    lang: str
    body: str
    note: str | None


def snippets(page: Path) -> list[Snippet]:
    return [
        Snippet(m.group("lang"), m.group("body"), m.group("note"))
        for m in BLOCK.finditer(page.read_text())
    ]


PAGES = sorted(p.name for p in DOCS.glob("*.md"))

# What some pages' snippets must print, beyond succeeding.
SAYS = {
    "installation.md": ["trainjob 0.1.0 (trainer.kubeflow.org/v1alpha1)"],
    "initializers.md": ["Downloaded 1 files", "train.json", "1 already present"],
    "llm-quickstart.md": ["saved LoRA adapter (peft) to ", "\n4\n"],
    "index.md": ["rank 0 of 2"],
    "sdk.md": ["rank 1 lr 0.05"],
    "workspaces.md": ["hello from mylib on node 0", "Workspace:  sha256:"],
}


@pytest.mark.parametrize("page", PAGES)
def test_the_snippets_of_each_page_run_as_written(page: str, user: wheel.User) -> None:
    said = []
    for snip in snippets(DOCS / page):
        if snip.note is not None or snip.lang not in ("sh", "python"):
            continue
        if snip.lang == "python":
            out = user.python(snip.body)
            assert out.returncode == 0, (
                f"{page}: python block:\n{out.stdout[-3000:]}{out.stderr[-3000:]}"
            )
            said.append(out.stdout + out.stderr)
            continue
        for line in wheel.command_lines(snip.body):
            out = user.sh(line)
            assert out.returncode == 0, f"{page}: {line}\n{out.stdout[-3000:]}{out.stderr[-3000:]}"
            said.append(out.stdout + out.stderr)
    text = "\n".join(said)
    for want in SAYS.get(page, ()):
        assert want in text, f"{page} should show {want!r}:\n{text[-3000:]}"


def test_every_block_left_out_says_why_or_is_run_by_a_test_of_its_own() -> None:
    tests = "\n".join(p.read_text() for p in (REPO / "tests").rglob("test_*.py"))
    for page in PAGES:
        for snip in snippets(DOCS / page):
            if snip.note is None:
                continue
            if snip.note.startswith("skip"):
                assert len(snip.note.split()) > 2, f"{page}: a skip needs its reason: {snip.note}"
            else:
                assert re.fullmatch(r"[a-z0-9-]+", snip.note), f"{page}: {snip.note!r}"
                assert f'"{snip.note}"' in tests, f"{page}: no test runs block {snip.note!r}"
