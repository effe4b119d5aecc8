"""The session's installs of the built wheel into fresh venvs outside the repository
(tests/e2e/wheel.py: with uv and every extra, with pip and the light ones), shared by the README
and docs tests."""

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


@pytest.fixture(scope="session")
def pip_installed_wheel(
    installed_wheel: wheel.Install, tmp_path_factory: pytest.TempPathFactory
) -> wheel.Install:
    return wheel.pip_install(tmp_path_factory.mktemp("pip"), installed_wheel.wheel)


@pytest.fixture
def pip_user(pip_installed_wheel: wheel.Install, tmp_path) -> wheel.User:  # type: ignore[no-untyped-def]
    """A new user's folder and home on the pip install (no torch)."""
    return wheel.User.make(pip_installed_wheel, tmp_path)
