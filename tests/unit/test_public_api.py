"""The public surface: ``trainjob.__all__`` is the sorted list of every public name, each one
resolves, and ``import trainjob`` stays cheap (no torch, kubernetes, transformers or optuna)."""

from __future__ import annotations

import json
import subprocess
import sys
from types import ModuleType

import trainjob

# Names ``trainjob/__init__.py`` binds for its own use, not part of the API.
IMPLEMENTATION = {"annotations", "TYPE_CHECKING", "Any"}
HEAVY = ("torch", "kubernetes", "transformers", "optuna")


def _isort_key(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 keeps ``__all__`` in: CONSTANTS, then Classes, then the rest."""
    if name.isupper():
        return (0, name)
    return (1 if name[0].isupper() else 2, name)


def public_names() -> set[str]:
    return {
        name
        for name in dir(trainjob)
        if not name.startswith("_")
        and name not in IMPLEMENTATION
        and not isinstance(getattr(trainjob, name, None), ModuleType)
    } | {"__version__"}


def test_all_lists_every_public_name_sorted() -> None:
    assert trainjob.__all__ == sorted(public_names(), key=_isort_key)


def test_every_exported_name_resolves() -> None:
    missing = [name for name in trainjob.__all__ if getattr(trainjob, name, None) is None]
    assert missing == []


def test_import_trainjob_loads_no_heavy_library() -> None:
    code = (
        "import json, sys, trainjob; "
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert json.loads(out) == []
