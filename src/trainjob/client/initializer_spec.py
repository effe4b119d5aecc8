"""The SDK's initializers -> ``spec.initializer``: each one's ``storageUri`` and its optional
fields as env vars, as upstream's SDK builds them. Used by :mod:`trainjob.client.builder`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from trainjob.client import types


def initializer_env(init: types.BaseInitializer, skip: set[str]) -> list[dict[str, str]]:
    """Optional initializer fields as env vars: NAME upper-cased, lists joined with ','."""
    env = []
    for f in dataclasses.fields(init):
        if f.name in skip:
            continue
        value = getattr(init, f.name)
        if value is None:
            continue
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        env.append({"name": f.name.upper(), "value": str(value)})
    return env


def dataset_initializer(ds: Any) -> dict[str, Any]:
    if isinstance(ds, types.HuggingFaceDatasetInitializer | types.S3DatasetInitializer):
        out: dict[str, Any] = {"storageUri": ds.storage_uri}
        env = initializer_env(ds, {"storage_uri"})
    elif isinstance(ds, types.DataCacheInitializer):
        out = {"storageUri": ds.storage_uri}
        env = [
            {"name": "CLUSTER_SIZE", "value": str(ds.num_data_nodes + 1)},
            {"name": "METADATA_LOC", "value": ds.metadata_loc},
            *initializer_env(ds, {"storage_uri", "metadata_loc", "num_data_nodes"}),
        ]
    else:
        raise ValueError(f"Dataset initializer type is invalid: {type(ds)}")
    if env:
        out["env"] = env
    return out


def model_initializer(model: Any) -> dict[str, Any]:
    if not isinstance(model, types.HuggingFaceModelInitializer | types.S3ModelInitializer):
        raise ValueError(f"Model initializer type is invalid: {type(model)}")
    out: dict[str, Any] = {"storageUri": model.storage_uri}
    env = initializer_env(model, {"storage_uri"})
    if env:
        out["env"] = env
    return out


def initializer_spec(init: types.Initializer | None) -> dict[str, Any] | None:
    if init is None:
        return None
    if not isinstance(init, types.Initializer):
        raise ValueError(f"initializer must be an Initializer, got {type(init).__name__}")
    out: dict[str, Any] = {}
    if init.dataset is not None:
        out["dataset"] = dataset_initializer(init.dataset)
    if init.model is not None:
        out["model"] = model_initializer(init.model)
    return out or None
