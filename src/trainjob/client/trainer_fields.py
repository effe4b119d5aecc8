"""Fields every trainer's ``spec.trainer`` shares: ``env`` and ``numNodes``, checked as
Kubernetes would check them (a bad value is an error here, not a pod that fails once the job
runs). Used by :mod:`trainjob.client.custom_trainer`, :mod:`trainjob.client.builtin_trainer` and
:mod:`trainjob.client.builder`.
"""

from __future__ import annotations

from typing import Any

from trainjob.client.trainers import ElasticPolicy


def env_list(env: dict[str, str] | None) -> list[dict[str, str]] | None:
    """``{"A": "1"}`` -> ``[{"name": "A", "value": "1"}]``; names as Kubernetes accepts them
    (a pod with any other name would fail only once the job runs). ``None`` is ``""``."""
    if not env:
        return None
    if not isinstance(env, dict):
        raise ValueError(f"env must be a dict of names to values, got {type(env).__name__}")
    out = []
    for key, value in env.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"env names must be non-empty strings, got {key!r}")
        if "=" in key or not all(" " <= ch <= "~" for ch in key):
            raise ValueError(
                f"env name {key!r} is invalid: a valid environment variable name must consist "
                "only of printable ASCII characters other than '='"
            )
        out.append({"name": key, "value": "" if value is None else str(value)})
    return out


def num_nodes(value: Any) -> int | None:
    """``numNodes`` for a trainer's ``num_nodes``: None or 0 leave the runtime's number (as
    upstream's ``if trainer.num_nodes:``); a negative number or a non-integer is an error."""
    if value is None or (value == 0 and not isinstance(value, bool)):
        return None
    return positive("num_nodes", value)


def node_fields(value: Any) -> dict[str, Any]:
    """``numNodes`` or ``elasticPolicy`` of ``spec.trainer`` for a trainer's ``num_nodes`` (an
    int or an :class:`~trainjob.client.trainers.ElasticPolicy`); empty for the runtime's."""
    if not isinstance(value, ElasticPolicy):
        nodes = num_nodes(value)
        return {} if nodes is None else {"numNodes": nodes}
    policy: dict[str, Any] = {
        "minNodes": positive("ElasticPolicy min_nodes", value.min_nodes),
        "maxNodes": positive("ElasticPolicy max_nodes", value.max_nodes),
    }
    if value.max_nodes < value.min_nodes:
        raise ValueError(
            f"ElasticPolicy max_nodes ({value.max_nodes}) must be greater than or equal to "
            f"min_nodes ({value.min_nodes})"
        )
    if value.max_restarts is not None:
        if not isinstance(value.max_restarts, int) or value.max_restarts < 0:
            raise ValueError(
                f"ElasticPolicy max_restarts must be a non-negative integer, "
                f"got {value.max_restarts!r}"
            )
        policy["maxRestarts"] = value.max_restarts
    if value.metrics:
        policy["metrics"] = [dict(m) for m in value.metrics]
    return {"elasticPolicy": policy}


def positive(field: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{field} must be a positive integer, got {value!r}")
    return value
