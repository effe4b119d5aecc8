"""A strategic merge patch over plain dicts, as Kubernetes applies one to a JobSetSpec.

Used for ``runtimePatches`` (and the legacy overrides translated into them). Lists named here
merge item by item on their patch merge key, as in the Kubernetes Go types; every other list is
replaced; maps merge recursively; ``None`` in a patch deletes the key.
"""

from __future__ import annotations

from typing import Any

# field name -> patch merge key (from the Kubernetes and JobSet Go struct tags).
MERGE_KEYS: dict[str, str] = {
    "replicatedJobs": "name",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "ownerReferences": "uid",
    "resourceClaims": "name",
    "hostAliases": "ip",
}


def merge(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Apply ``patch`` onto ``target`` in place and return it."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
            continue
        current = target.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            merge(current, value)
        elif isinstance(value, list) and isinstance(current, list) and key in MERGE_KEYS:
            _merge_list(current, value, MERGE_KEYS[key])
        else:
            target[key] = deep_copy(value)
    return target


def _merge_list(target: list[Any], patch: list[Any], merge_key: str) -> None:
    index = {
        item.get(merge_key): i
        for i, item in enumerate(target)
        if isinstance(item, dict) and merge_key in item
    }
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            target.append(deep_copy(item))
            continue
        pos = index.get(item[merge_key])
        if pos is None:
            index[item[merge_key]] = len(target)
            target.append(deep_copy(item))
        else:
            merge(target[pos], item)


def deep_copy(value: Any) -> Any:
    """A fast deep copy of JSON-like data (dicts, lists, scalars); much cheaper than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [deep_copy(v) for v in value]
    return value
