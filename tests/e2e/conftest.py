"""The session's install of the built wheel into a fresh venv outside the repository
(tests/e2e/wheel.py), shared by the README and docs tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.e2e import dashboard_browser, wheel


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> wheel.Install:
    return wheel.build(tmp_path_factory.mktemp("wheel"))


@pytest.fixture
def user(installed_wheel: wheel.Install, tmp_path) -> wheel.User:  # type: ignore[no-untyped-def]
    """A new user's folder (a copy of examples/ in it) and home, with that install."""
    return wheel.User.make(installed_wheel, tmp_path)


@pytest.fixture
def browser() -> Iterator[Any]:
    """Debian's headless Chromium through Playwright (tests/e2e/dashboard_browser.py)."""
    yield from dashboard_browser.launch()
