"""A command's plainly valid option values without pydantic: typer 0.29 builds a pydantic
TypeAdapter for every non-flag parameter it converts (``--namespace``, ``--backend``, the names),
which imports pydantic and builds schemas: about 100-400 ms of CPU before ``trainjob version`` or
``get jobs`` prints a line, most of the CLI's start-up.

:func:`install` gives typer's parameters a coercion that takes the values it can tell are valid
by typer's own rules (a string for a ``str``, a bool for a flag; a choice of an ``Enum`` as
:func:`typer._param_types.coerce_cli_choice` matches it; a plain decimal ``int`` without bounds;
a list of those) and hands every other value to typer's own coercion, built on first need. So
every value typer takes is converted as typer converts it, and every value it refuses gets
typer's very error message; only the pydantic import is skipped for the values users type.

It reaches into typer's private ``_TyperParameter.get_runtime_param``: when a typer release
moves it, :func:`install` leaves typer as it is (slower, never wrong), and
``tests/unit/cli/test_startup_imports.py`` fails, saying the start-up needs pydantic again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum
from typing import Any

_INT = re.compile(r"\s*[+-]?[0-9]+(?:_[0-9]+)*\s*", re.ASCII)
"""The integers pydantic's lax mode parses from a string that ``int()`` parses alike."""

_MISS = object()
"""A value the fast way cannot tell valid: typer's own coercion decides."""


def _leaf(annotation: Any, info: Any) -> Callable[[Any, Any], Any] | None:
    """The fast conversion of one value of ``annotation`` (``_MISS`` when unsure), or None
    when the annotation is not one of the plain kinds."""
    if getattr(info, "parser", None) is not None:
        return None
    if annotation is str:
        return lambda value, ctx: value if isinstance(value, str) else _MISS
    if annotation is bool:  # a flag's own value; a string ("yes", from a variable) goes to typer
        return lambda value, ctx: value if isinstance(value, bool) else _MISS
    if annotation is int and not (info.min is not None or info.max is not None or info.clamp):
        return lambda value, ctx: (
            value
            if type(value) is int
            else int(value)
            if isinstance(value, str) and _INT.fullmatch(value)
            else _MISS
        )
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        from typer._param_types import coerce_cli_choice

        choices, case_sensitive = list(annotation), info.case_sensitive

        def choice(value: Any, ctx: Any) -> Any:
            if not isinstance(value, (str, Enum)):
                return _MISS
            try:
                return coerce_cli_choice(
                    value, choices=choices, case_sensitive=case_sensitive, ctx=ctx
                )
            except ValueError:
                return _MISS  # typer's coercion says why, in its words

        return choice
    return None


def install() -> bool:
    """Make typer convert plainly valid values without pydantic; False (typer left as it is)
    when this typer has not the hooks this relies on."""
    try:
        from typer import _coercion, core
        from typer._typing import get_args, get_origin
    except ImportError:  # pragma: no cover - another typer
        return False
    param_cls = getattr(core, "_TyperParameter", None)
    base = getattr(_coercion, "RuntimeParam", None)
    build = getattr(_coercion, "build_runtime_param", None)
    if param_cls is None or base is None or build is None:  # pragma: no cover - another typer
        return False
    if getattr(param_cls.get_runtime_param, "_trainjob_fast", False):
        return True
    typers_own: Callable[[Any], Any] = build

    class FastRuntimeParam(base):  # type: ignore[misc, valid-type]
        """Plainly valid values converted here; any other to typer's coercion (built once)."""

        def __init__(self, descriptor: Any, leaf: Callable[[Any, Any], Any], many: bool):
            super().__init__(
                parameter_info=descriptor.parameter_info, annotation=descriptor.annotation
            )
            object.__setattr__(self, "descriptor", descriptor)
            object.__setattr__(self, "leaf", leaf)
            object.__setattr__(self, "many", many)
            object.__setattr__(self, "typers", None)

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.many and isinstance(value, (list, tuple)):
                got = [self.leaf(v, ctx) for v in value]
                if all(g is not _MISS for g in got):
                    return got
            elif not self.many:
                got = self.leaf(value, ctx)
                if got is not _MISS:
                    return got
            if self.typers is None:
                object.__setattr__(self, "typers", typers_own(self.descriptor))
            return self.typers._coerce_value(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            d = self.type_descriptor
            many = get_origin(d.annotation) is list
            args = get_args(d.annotation)
            annotation = args[0] if many and len(args) == 1 else d.annotation
            leaf = None if d.is_file or d.is_path else _leaf(annotation, d.parameter_info)
            self._runtime_param = FastRuntimeParam(d, leaf, many) if leaf else typers_own(d)
        return self._runtime_param

    get_runtime_param._trainjob_fast = True  # type: ignore[attr-defined]
    param_cls.get_runtime_param = get_runtime_param
    return True
