"""Lazy package exports (PEP 562): a package's public names are imported on first use.

``trainjob``, ``trainjob.api``, ``trainjob.runtime`` and ``trainjob.local`` list their exports as
``name -> module`` and set ``__getattr__, __dir__ = lazy.exports(__name__, EXPORTS)``, so that
importing a package loads none of its heavy modules (pydantic models, the SDK) until a name is
used. A name once imported is set on the package, so later lookups are plain attribute reads.

At the top of the package because the packages that use it sit in every layer (and
``trainjob`` itself does); it imports only the standard library.
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False
"""typing.TYPE_CHECKING (mypy reads any ``TYPE_CHECKING``), without importing typing: with
what it imports (collections, contextlib, functools) about 15M instructions, ~5 ms, of
``trainjob version`` and ``trainjob --help``, whose modules (``trainjob``, ``trainjob.api``,
this one, ``trainjob.errors``, ``trainjob.cli``) need no typing name at run time."""

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def exports(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose ``names`` live in these modules."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
