"""The trainjob exception tree and Kubernetes-style field errors.

    TrainJobError                 base of every error trainjob raises on purpose
    ├── InvalidError              user input is invalid; carries a list of FieldError
    ├── NotFoundError             a named object (runtime, job) does not exist
    ├── AlreadyExistsError        an object of that name exists already (a job, on submit)
    ├── ForbiddenError            not allowed: a cluster's RBAC, or an admission webhook, refused
    ├── ConfigError               the environment is not set up (missing command, bad config)
    └── ErrorList                 several of the above at once (every problem in the input)

Field errors render exactly as Kubernetes' ``field.Error`` does, so a user sees the same
line from ``trainjob plan``, the admission webhook and the controller::

    spec.trainer.numNodes: Invalid value: 0: must be greater than or equal to 1

At the top of the package because it is public (``trainjob.errors``, re-exported by
``trainjob``) and every layer raises these, from the API models to the CLI; it imports only the
standard library.
"""

from __future__ import annotations

import json
from enum import StrEnum

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see trainjob.lazy)
if TYPE_CHECKING:
    from typing import Any

    _Dict = dict[str, Any]
else:
    _Dict = dict


class ErrorType(StrEnum):
    """The Kubernetes ``field.ErrorType`` values, spelled as ``kubectl`` prints them."""

    NOT_FOUND = "Not found"
    REQUIRED = "Required value"
    DUPLICATE = "Duplicate value"
    INVALID = "Invalid value"
    NOT_SUPPORTED = "Unsupported value"
    FORBIDDEN = "Forbidden"
    TOO_LONG = "Too long"
    TOO_MANY = "Too many"
    INTERNAL = "Internal error"
    TYPE_INVALID = "Invalid value"


_OMIT = object()


class GoStruct(_Dict):
    """A dict that stands for a Go struct: :func:`format_value` prints its keys in this order
    (Go's ``encoding/json`` prints struct fields in declaration order, map keys sorted)."""


def format_value(value: Any) -> str:
    """Render a bad value the way Kubernetes' field errors do (strings quoted, numbers bare,
    anything else as Go's ``json.Marshal`` would print the typed value: an API model's fields in
    declaration order, only those the input set, maps with sorted keys)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return "null"
    try:
        text = json.dumps(_go_ordered(value), default=str, separators=(",", ":"))
    except (TypeError, ValueError):  # pragma: no cover - defensive
        return repr(value)
    # Go escapes these three for HTML safety.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _go_ordered(value: Any) -> Any:
    """``value`` as plain data whose dict order is the order Go would print: API models become
    :class:`GoStruct` (fields in declaration order, unset ones left out), other dicts are maps."""
    if hasattr(type(value), "model_fields") and hasattr(value, "model_dump"):
        out = GoStruct()
        for name, info in type(value).model_fields.items():
            v = getattr(value, name)
            if v is not None:
                out[info.alias or name] = _go_ordered(v)
        for k, v in sorted((getattr(value, "model_extra", None) or {}).items()):
            if v is not None:
                out[k] = _go_ordered(v)
        return out
    if isinstance(value, GoStruct):
        return GoStruct((k, _go_ordered(v)) for k, v in value.items())
    if isinstance(value, dict):
        return {k: _go_ordered(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_go_ordered(v) for v in value]
    return value


class FieldError:
    """One invalid field: its dotted path, the kind of problem, the bad value and what to do.

    Frozen, compared and hashed by its four fields, as a frozen dataclass; a plain class because
    every command imports this module, ``trainjob get jobs`` too, and :mod:`dataclasses` (with
    the :mod:`inspect` it imports) was a tenth of that command's start-up."""

    __slots__ = ("type", "field", "detail", "bad_value")  # noqa: RUF023 (the fields, in order)

    type: ErrorType
    field: str
    detail: str
    bad_value: Any

    def __init__(
        self, type: ErrorType, field: str, detail: str = "", bad_value: Any = _OMIT
    ) -> None:
        # API models are kept as the data Go would print (equal to their dict form).
        if bad_value is not _OMIT and not isinstance(bad_value, str | int | float):
            bad_value = _go_ordered(bad_value)
        for name, value in zip(self.__slots__, (type, field, detail, bad_value), strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: FieldError is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: FieldError is frozen")

    def _key(self) -> tuple[Any, ...]:
        return (self.type, self.field, self.detail, self.bad_value)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not FieldError:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"FieldError(type={self.type!r}, field={self.field!r}, detail={self.detail!r}, "
            f"bad_value={self.bad_value!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (FieldError, self._key())

    def __str__(self) -> str:
        head = f"{self.field}: {self.type.value}"
        if self.type in (
            ErrorType.REQUIRED,
            ErrorType.FORBIDDEN,
            ErrorType.TOO_MANY,
            ErrorType.INTERNAL,
        ):
            return f"{head}: {self.detail}" if self.detail else head
        if self.type is ErrorType.NOT_FOUND and self.bad_value is _OMIT:
            return f"{head}: {self.detail}" if self.detail else head
        parts = [head]
        if self.bad_value is not _OMIT:
            parts.append(format_value(self.bad_value))
        if self.detail:
            parts.append(self.detail)
        return ": ".join(parts)

    # Constructors named like Kubernetes' field package.
    @classmethod
    def invalid(cls, field: str, value: Any, detail: str) -> FieldError:
        return cls(ErrorType.INVALID, field, detail, value)

    @classmethod
    def required(cls, field: str, detail: str = "") -> FieldError:
        return cls(ErrorType.REQUIRED, field, detail)

    @classmethod
    def forbidden(cls, field: str, detail: str) -> FieldError:
        return cls(ErrorType.FORBIDDEN, field, detail)

    @classmethod
    def not_supported(cls, field: str, value: Any, supported: list[str]) -> FieldError:
        detail = "supported values: " + ", ".join(json.dumps(s) for s in supported)
        return cls(ErrorType.NOT_SUPPORTED, field, detail, value)

    @classmethod
    def duplicate(cls, field: str, value: Any) -> FieldError:
        return cls(ErrorType.DUPLICATE, field, "", value)

    @classmethod
    def not_found(cls, field: str, value: Any) -> FieldError:
        return cls(ErrorType.NOT_FOUND, field, "", value)

    @classmethod
    def too_long(cls, field: str, value: Any, max_length: int) -> FieldError:
        return cls(ErrorType.TOO_LONG, field, f"may not be more than {max_length} bytes", value)

    @classmethod
    def too_many(cls, field: str, actual: int, max_items: int) -> FieldError:
        return cls(ErrorType.TOO_MANY, field, f"{actual}: must have at most {max_items} items")


class TrainJobError(Exception):
    """Base class of the errors trainjob raises on purpose (user errors, not bugs)."""


class InvalidError(TrainJobError):
    """The input is invalid. ``errors`` holds every problem found, not only the first."""

    def __init__(self, errors: list[FieldError], kind: str = "", name: str = "") -> None:
        self.errors = list(errors)
        self.kind = kind
        self.name = name
        super().__init__(self._message())

    def _message(self) -> str:
        lines = "; ".join(str(e) for e in self.errors)
        if self.kind:
            return f'{self.kind} "{self.name}" is invalid: {lines}'
        return lines


class NotFoundError(TrainJobError):
    """A named object (a runtime, a job) does not exist."""


class AlreadyExistsError(TrainJobError):
    """An object of that name exists already (``trainjobs.trainer.kubeflow.org "x" already exists``)."""


class ForbiddenError(TrainJobError):
    """The request is not allowed (a cluster's RBAC or an admission webhook refused it)."""


class ConfigError(TrainJobError):
    """The environment is not set up for what was asked (a missing command, a bad config)."""


class ErrorList(TrainJobError):
    """Several user errors found at once, each reported on its own (``trainjob run -f`` checks
    every TrainJob in its files before submitting any, as ``plan`` reports every problem)."""

    def __init__(self, errors: list[TrainJobError]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(str(e) for e in self.errors))
