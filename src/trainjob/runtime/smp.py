"""A strategic merge patch over plain dicts, as Kubernetes applies one to a JobSetSpec.

Used by :func:`trainjob.runtime.compiler.build_info` for ``runtimePatches`` (and the v2.0/v2.1
overrides translated into them), the way upstream merges each patch with
``strategicpatch.StrategicMergePatch(spec, patch, JobSetSpec{})``:

* maps merge key by key, recursively; ``None`` in a patch deletes the key;
* a list whose Go field carries ``patchStrategy:"merge"`` (the fields in :data:`MERGE_KEYS`) merges
  item by item on its patch merge key; :data:`MERGE_SCALARS` lists merge as a set of scalars;
  every other list (``tolerations``, ``args``, ``envFrom`` ...) is replaced by the patch's;
* a merged list comes out in apimachinery's order: the items the patch names keep the patch's
  order, the others keep theirs, and the two are interleaved by the original positions; so an
  item the patch adds goes *before* the first original item the patch does not name (a patch
  ``env: [{name: C}]`` onto ``[A, B]`` gives ``[C, A, B]``), and a patch naming ``B`` then ``C``
  gives ``[A, B, C]``.

Fields are told apart by name, not by Go type: that is exact for the PodTemplateSpec and
JobSetSpec fields a runtime patch can reach. The ``$patch``/``$retainKeys``/``$setElementOrder``
directives are not supported: upstream patches are marshalled from typed structs and carry none.
"""

from __future__ import annotations

from typing import Any

# field name -> patch merge key (the ``patchMergeKey`` struct tags of the Kubernetes core/v1,
# batch/v1 and JobSet v1alpha2 types under a JobSetSpec).
MERGE_KEYS: dict[str, str] = {
    "replicatedJobs": "name",
    "dependsOn": "name",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "ownerReferences": "uid",
    "resourceClaims": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
}

# Lists of scalars with ``patchStrategy:"merge"``: the union of both, without duplicates.
MERGE_SCALARS: frozenset[str] = frozenset({"finalizers"})


def merge(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Apply ``patch`` onto ``target`` in place and return it."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
            continue
        if key not in target:
            target[key] = deep_copy(value)
            continue
        current = target[key]
        if isinstance(value, dict) and isinstance(current, dict):
            merge(current, value)
        elif isinstance(value, list) and isinstance(current, list) and key in MERGE_KEYS:
            target[key] = _merge_maps(current, value, MERGE_KEYS[key])
        elif isinstance(value, list) and isinstance(current, list) and key in MERGE_SCALARS:
            target[key] = _merge_scalars(current, value)
        else:
            target[key] = deep_copy(value)
    return target


def _key_of(item: Any, merge_key: str) -> Any:
    return item.get(merge_key) if isinstance(item, dict) else item


def _index(items: list[Any], item: Any, merge_key: str) -> int:
    value = _key_of(item, merge_key)
    for i, cur in enumerate(items):
        if _key_of(cur, merge_key) == value:
            return i
    return -1


def _merge_maps(original: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    merged = list(original)
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            merged.append(deep_copy(item))  # upstream rejects the patch; keep it visible instead
            continue
        pos = _index(merged, item, merge_key)
        if pos < 0 or not isinstance(merged[pos], dict):
            merged.append(deep_copy(item))
        else:
            merged[pos] = merge(merged[pos], item)
    return _ordered(merged, original, patch, merge_key)


def _merge_scalars(original: list[Any], patch: list[Any]) -> list[Any]:
    merged: list[Any] = []
    for item in original + patch:
        if item not in merged:
            merged.append(deep_copy(item))
    return _ordered(merged, original, patch, "")


def _ordered(merged: list[Any], original: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    """apimachinery's ``normalizeElementOrder``: patch items in patch order, the others in their
    original order, merged by original position where both items have one."""
    patch_keys = [_key_of(p, merge_key) for p in patch]
    named = [m for m in merged if _key_of(m, merge_key) in patch_keys]
    others = [m for m in merged if _key_of(m, merge_key) not in patch_keys]
    named.sort(key=lambda m: patch_keys.index(_key_of(m, merge_key)))
    out: list[Any] = []
    i = j = 0
    while i < len(others) or j < len(named):
        if j >= len(named):
            out.append(others[i])
            i += 1
        elif i >= len(others):
            out.append(named[j])
            j += 1
        else:
            left = _index(original, others[i], merge_key)
            right = _index(original, named[j], merge_key)
            if left >= 0 and right >= 0 and left < right:
                out.append(others[i])
                i += 1
            else:
                out.append(named[j])
                j += 1
    return out


def deep_copy(value: Any) -> Any:
    """A fast deep copy of JSON-like data (dicts, lists, scalars); much cheaper than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [deep_copy(v) for v in value]
    return value
