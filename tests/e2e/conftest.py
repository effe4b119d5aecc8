"""The session's install of the built wheel into a fresh venv outside the repository
(tests/e2e/wheel.py), shared by the README and docs tests."""

from __future__ import annotations

import pytest
from tests.e2e import wheel


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> wheel.Install:
    return wheel.build(tmp_path_factory.mktemp("wheel"))


@pytest.fixture
def user(installed_wheel: wheel.Install, tmp_path) -> wheel.User:  # type: ignore[no-untyped-def]
    """A new user's folder (a copy of examples/ in it) and home, with that install."""
    return wheel.User.make(installed_wheel, tmp_path)
