"""The trainjob exception tree and Kubernetes-style field errors.

    TrainJobError                 base of every error trainjob raises on purpose
    ├── InvalidError              user input is invalid; carries a list of FieldError
    ├── NotFoundError             a named object (runtime, job) does not exist
    ├── AlreadyExistsError        an object of that name exists already (a job, on submit)
    └── ConfigError               the environment is not set up (missing command, bad config)

Field errors render exactly as Kubernetes' ``field.Error`` does, so a user sees the same
line from ``trainjob plan``, the admission webhook and the controller::

    spec.trainer.numNodes: Invalid value: 0: must be greater than or equal to 1
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


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


def format_value(value: Any) -> str:
    """Render a bad value the way Kubernetes' field errors do (strings quoted, numbers bare)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return "null"
    if hasattr(value, "model_dump"):
        value = value.model_dump(by_alias=True, exclude_none=True, mode="json")
    try:
        return json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    except (TypeError, ValueError):  # pragma: no cover - defensive
        return repr(value)


@dataclass(frozen=True)
class FieldError:
    """One invalid field: its dotted path, the kind of problem, the bad value and what to do."""

    type: ErrorType
    field: str
    detail: str = ""
    bad_value: Any = _OMIT

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


class ConfigError(TrainJobError):
    """The environment is not set up for what was asked (a missing command, a bad config)."""
