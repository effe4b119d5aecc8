"""Every docs page's snippets, run as written by a new user of the built wheel (tests/e2e/wheel.py:
a fresh venv outside the repository, a folder of their own with a copy of ``examples/``, the local
backend).

On each page, in order: each ``sh`` block's lines run with bash (stopping at the first failure),
each ``python`` block runs as a script, each ``yaml`` TrainJob is run (``trainjob run -f FILE
--replace --follow``), all in one folder and ``$TRAINJOB_HOME`` for the page. A block that is not
runnable as shown says so where a reader sees it, on its own line above it (the rendered page
shows it in italics):

- ``*Fragment: WHY.*``: a sketch, an excerpt, an output; it does not run as shown;
- ``*Not run by the docs test: WHY.*``: it runs as shown, but not here (a cluster, a registry, a
  server that runs until stopped), the reason saying what runs it instead.

``<!-- test: NAME -->`` (invisible) marks a block that runs as shown and that a test of its own
runs by that name (the cluster installs of docs/controller-install.md, on a fresh apiserver);
each NAME must be run by some test. A few pages' outputs are checked beyond their exit codes.

The whole set runs from the ``uv`` install with every extra; the pages that need no torch run
again from a ``python3 -m venv`` + ``pip`` install of the wheel with the light extras
(``PIP_PAGES``), the environment step README's Install section shows.
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
MARK = re.compile(r"^\*(?P<kind>Fragment|Not run by the docs test): (?P<why>[^\n]+)\.\*$")
BLOCK = re.compile(
    r"(?:^<!-- test: (?P<name>[^\n]*?) -->\n|^(?P<mark>\*[^\n]+\*)\n\n)?"
    r"^```(?P<lang>\w*)[^\n]*\n(?P<body>.*?)^```",
    re.M | re.S,
)


@dataclass(frozen=True)
class Snippet:
    lang: str
    body: str
    name: str | None  # <!-- test: NAME -->: another test runs it
    mark: str | None  # the visible line above it, when it has one

    @property
    def left_out(self) -> str | None:
        """Why the docs test does not run it (its mark, or its name), None when it runs."""
        if self.name is not None:
            return f"run by a test of its own: {self.name}"
        if self.mark is not None and MARK.match(self.mark):
            return self.mark
        return None

    @property
    def runs(self) -> bool:
        if self.left_out is not None:
            return False
        return self.lang in ("sh", "python") or (self.lang == "yaml" and _is_trainjob(self.body))


def _is_trainjob(body: str) -> bool:
    return "apiVersion: trainer.kubeflow.org/" in body and "kind: TrainJob" in body


def snippets(page: Path) -> list[Snippet]:
    return [
        Snippet(m.group("lang"), m.group("body"), m.group("name"), m.group("mark"))
        for m in BLOCK.finditer(page.read_text())
    ]


PAGES = sorted(p.name for p in DOCS.glob("*.md"))
PIP_PAGES = ["api.md", "cli.md", "installation.md", "initializers.md"]
"""The pages whose runnable blocks need no torch: run from the pip install too."""

# What some pages' snippets must print, beyond succeeding.
SAYS = {
    "installation.md": ["trainjob 0.1.0 (trainer.kubeflow.org/v1alpha1)"],
    "initializers.md": ["Downloaded 1 files", "train.json", "1 already present"],
    "llm-quickstart.md": ["saved LoRA adapter (peft) to ", " 24 steps)", "\n4\n"],
    "index.md": ["rank 0 of 2"],
    "sdk.md": ["rank 1 lr 0.05"],
    "progress.md": [
        "progress_percentage=100, estimated_remaining_seconds=0, metrics={'loss': '0.05', 'step': '20'}",
        "reports; the last: 100 %, loss 0.05",
    ],
    "lifecycle.md": ["nightly done"],
    "sweeps.md": ["grid   Complete   6/6", "optimizationjob.trainer.kubeflow.org/grid deleted"],
    "workspaces.md": ["hello from mylib on node 0", "Workspace:  sha256:"],
}


QUIET = {"llm-quickstart.md"}
"""Pages whose python blocks print nothing on stderr: a user's first run shows only its own lines
(no library's notices, bars or warnings; the job's own lines are in its logs)."""


def run_page(page: str, user: wheel.User) -> str:
    said = []
    for i, snip in enumerate(snippets(DOCS / page)):
        if not snip.runs:
            continue
        if snip.lang == "python":
            out = user.python(snip.body)
            assert out.returncode == 0, (
                f"{page}: python block:\n{out.stdout[-3000:]}{out.stderr[-3000:]}"
            )
            if page in QUIET:
                assert out.stderr == "", f"{page}: a python block's stderr:\n{out.stderr}"
            said.append(out.stdout + out.stderr)
            continue
        if snip.lang == "yaml":
            (user.work / f"block-{i}.yaml").write_text(snip.body)
            lines = [f"trainjob run -f block-{i}.yaml --replace --follow"]
        else:
            lines = wheel.command_lines(snip.body)
        for line in lines:
            out = user.sh(line)
            assert out.returncode == 0, f"{page}: {line}\n{out.stdout[-3000:]}{out.stderr[-3000:]}"
            said.append(out.stdout + out.stderr)
    return "\n".join(said)


@pytest.mark.parametrize("page", PAGES)
def test_the_snippets_of_each_page_run_as_written(page: str, user: wheel.User) -> None:
    text = run_page(page, user)
    for want in SAYS.get(page, ()):
        assert want in text, f"{page} should show {want!r}:\n{text[-3000:]}"


@pytest.mark.parametrize("page", PIP_PAGES)
def test_the_pages_that_need_no_torch_run_from_a_pip_install(
    page: str, pip_user: wheel.User
) -> None:
    text = run_page(page, pip_user)
    for want in SAYS.get(page, ()):
        assert want in text, f"{page} should show {want!r}:\n{text[-3000:]}"


def test_every_block_left_out_says_why_where_a_reader_sees_it() -> None:
    """A block not run says so visibly (``*Fragment: ...*``) or is named for the test that
    runs it; the old invisible ``<!-- test: skip ... -->`` is gone."""
    tests = "\n".join(p.read_text() for p in (REPO / "tests").rglob("test_*.py"))
    left_out = []
    for page in PAGES:
        text = (DOCS / page).read_text()
        assert "<!-- test: skip" not in text, f"{page}: a skip must be visible (*Fragment: ...*)"
        glued = re.search(r"^\*(Fragment|Not run)[^\n]*\n```", text, re.M)
        assert glued is None, (
            f"{page}: a blank line between {glued and glued.group(0)!r} and its block"
        )
        for snip in snippets(DOCS / page):
            if snip.mark is not None and snip.mark.startswith(("*Fragment", "*Not run")):
                m = MARK.match(snip.mark)
                assert m, f"{page}: {snip.mark!r} is not '*Fragment: WHY.*' or '*Not run ...*'"
                assert len(m.group("why").split()) > 2, f"{page}: say why: {snip.mark}"
            if snip.name is not None:
                assert re.fullmatch(r"[a-z0-9-]+", snip.name), f"{page}: {snip.name!r}"
                assert f'"{snip.name}"' in tests, f"{page}: no test runs block {snip.name!r}"
            if snip.left_out is not None:
                left_out.append(f"{page}: {snip.left_out}")
    assert left_out  # the marks are found at all (a changed regex would skip nothing)


def test_a_marked_block_is_left_out_and_an_unmarked_one_runs() -> None:
    page = (
        "*Fragment: a sketch, train() is yours.*\n\n```python\ntrain()\n```\n\n"
        "Run it:\n\n```sh\ntrainjob version\n```\n"
    )
    got = [
        Snippet(m.group("lang"), m.group("body"), m.group("name"), m.group("mark"))
        for m in BLOCK.finditer(page)
    ]
    assert [(s.lang, s.runs) for s in got] == [("python", False), ("sh", True)]
    assert got[0].left_out == "*Fragment: a sketch, train() is yours.*"
