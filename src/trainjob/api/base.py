"""Base classes for API models: camelCase on the wire, no nulls on dump.

Two flavours, on purpose:

* :class:`ApiModel` is for trainjob's own API (``trainer.kubeflow.org``). Unknown fields are an
  error (a typo such as ``numNode`` must not be silently ignored).
* :class:`K8sModel` is for Kubernetes types we only pass through (pods, containers, JobSet
  internals). Unknown fields are kept, so nothing a user wrote is dropped on a round trip.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class ApiModel(BaseModel):
    """A trainjob API type: strict about unknown fields."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_assignment=False,
        ser_json_timedelta="iso8601",
        # Like the apiserver: "2" is not an integer and "yes" is not a boolean.
        strict=True,
    )

    def to_dict(self) -> dict[str, Any]:
        """The object as Kubernetes would store it: camelCase keys, no unset fields."""
        return to_dict(self)


class K8sModel(ApiModel):
    """A Kubernetes type carried through as is: unknown fields survive a round trip."""

    model_config = ConfigDict(extra="allow")


def to_dict(model: BaseModel) -> dict[str, Any]:
    """Dump a model the way it would be written in YAML (by alias, without None)."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")
