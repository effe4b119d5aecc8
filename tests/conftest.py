"""Shared pytest options: ``--update-golden`` rewrites the golden files under tests/golden/.

Tests run fastest first: ``unit``, then ``e2e`` (real local runs), ``integration`` (a real
kube-apiserver) and ``cluster`` (the whole test cluster), so a full run reports the quick
failures early, and ``scripts/test.sh`` can build the cluster's Go binaries in the background
while the first ones run (their fixtures wait for the builds they need).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

GOLDEN_DIR = Path(__file__).parent / "golden"

# The local backend queues jobs for this machine's CPUs (trainjob.local.job.capacity): on CI's 2
# cores a test's second 2-node job would wait for its first. Tests run jobs side by side on
# purpose, so the suite lets a home use 64 CPUs; tests/e2e/test_local_capacity.py and
# tests/unit/local/test_capacity.py set the limit they test (every job still takes its share).
os.environ.setdefault("TRAINJOB_LOCAL_CPUS", "64")


TIERS = ("unit", "e2e", "integration", "cluster")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent

    def tier(item: pytest.Item) -> int:
        path = Path(str(item.path)).resolve()
        parts = path.relative_to(here).parts if path.is_relative_to(here) else ()
        return TIERS.index(parts[0]) if parts and parts[0] in TIERS else len(TIERS)

    items.sort(key=tier)  # stable: the order within a tier stays


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/*")


@pytest.fixture
def golden(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """``golden(name, text)``: compare text with tests/golden/<name>, as a unified diff."""
    update = request.config.getoption("--update-golden")

    def check(name: str, text: str) -> None:
        path = GOLDEN_DIR / name
        if update or not path.exists():
            if not update:
                pytest.fail(f"missing golden file {path}; run pytest --update-golden to create it")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            return
        want = path.read_text()
        if want != text:
            diff = "".join(
                difflib.unified_diff(
                    want.splitlines(True), text.splitlines(True), f"want/{name}", f"got/{name}"
                )
            )
            pytest.fail(f"plan differs from golden file (run --update-golden if intended):\n{diff}")

    return check


@pytest.fixture
def browser() -> Iterator[Any]:
    """Debian's headless Chromium through Playwright, for the dashboard's browser tests
    (tests/e2e/dashboard_browser.py; skipped, saying why, where chromium is not installed)."""
    from tests.e2e import dashboard_browser

    yield from dashboard_browser.launch()
