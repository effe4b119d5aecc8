"""A pod's volumes and paths as this host sees them.

Each volume is a directory (a ``hostPath`` its own path, a kept one the job's outputs, the rest
scratch under the job's home); each volume mount path (``/workspace``) is rewritten, in env
values, command, args and workingDir, to the volume's directory; a Secret or ConfigMap volume
shows its keys as files. Pure (:mod:`trainjob.local.job.volumes` writes them); used through
:mod:`trainjob.local.job.pods`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from pathlib import Path

from trainjob.api import container_validation
from trainjob.local.job.templates import Obj, PodConfigError, PodTemplate
from trainjob.runtime.plan import Plan


def volume_dirs(
    pod: PodTemplate, root: Path, kept: Mapping[str, Path] | None = None
) -> dict[str, Path]:
    """Volume name -> directory on this host: ``hostPath`` volumes keep their path, the volumes
    in ``kept`` (a job's outputs, :mod:`trainjob.local.job.outputs`) have theirs, the rest (scratch)
    are under ``root``."""
    out: dict[str, Path] = {}
    kept = kept or {}
    names: list[str] = [v["name"] for v in pod.spec.get("volumes") or ()]
    for ctr in [*(pod.spec.get("initContainers") or ()), *(pod.spec.get("containers") or ())]:
        names.extend(m["name"] for m in ctr.get("volumeMounts") or ())
    by_name = {v["name"]: v for v in pod.spec.get("volumes") or ()}
    for name in names:
        host_path = (by_name.get(name) or {}).get("hostPath")
        if host_path:
            out[name] = Path(host_path["path"])
        else:
            out[name] = kept.get(name) or root / name
    return out


def mount_map(ctr: Obj, dirs: Mapping[str, Path]) -> list[tuple[str, str]]:
    """(mountPath, host dir) pairs of a container, longest mount path first."""
    pairs: list[tuple[str, str]] = []
    for m in ctr.get("volumeMounts") or ():
        host = dirs.get(m["name"])
        if host is None:
            continue
        if m.get("subPath"):
            if container_validation.descending_path_problems(
                str(m["subPath"])
            ):  # from a patch: not validated
                raise PodConfigError(
                    f'volumeMount subPath {m["subPath"]!r} of volume "{m["name"]}" must be a '
                    "relative path inside its volume (no '..')"
                )
            host = host / m["subPath"]
        pairs.append((m["mountPath"].rstrip("/") or "/", str(host)))
    return sorted(pairs, key=lambda p: len(p[0]), reverse=True)


def rewrite_paths(text: str, mounts: list[tuple[str, str]]) -> str:
    """Replace each mount path, where it stands as a whole path or path prefix, by its host dir."""
    for mount, host in mounts:
        if mount == "/":
            continue
        pattern = rf"(?<![\w.-]){re.escape(mount)}(?=/|$|[^\w.-])"
        text = re.sub(pattern, lambda _m, h=host: h, text)  # type: ignore[misc]
    return text


def volume_files(volume: Obj, objects: Plan) -> dict[str, tuple[bytes, int]]:
    """Files (relative path -> (content, mode)) a Secret or ConfigMap volume shows."""
    if "secret" in volume:
        src = volume["secret"]
        obj = find_object(objects, "Secret", src.get("secretName"))
        data = secret_data(obj) if obj else {}
    elif "configMap" in volume:
        src = volume["configMap"]
        obj = find_object(objects, "ConfigMap", src.get("name"))
        data = {k: v.encode() for k, v in ((obj or {}).get("data") or {}).items()}
    else:
        return {}
    default_mode = int(src.get("defaultMode") or 0o644)
    items = src.get("items")
    if not items:
        return {k: (v, default_mode) for k, v in data.items()}
    out: dict[str, tuple[bytes, int]] = {}
    for item in items:
        if item["key"] in data:
            if container_validation.descending_path_problems(str(item["path"])):
                raise PodConfigError(
                    f"volume item path {item['path']!r} must be a relative path inside its "
                    "volume (no '..')"
                )
            out[item["path"]] = (data[item["key"]], int(item.get("mode") or default_mode))
    return out


def find_object(objects: Plan, kind: str, name: str | None) -> Obj | None:
    """The Plan's object of that kind and name (a Secret, a ConfigMap), or None."""
    for o in objects:
        if o.get("kind") == kind and (o.get("metadata") or {}).get("name") == name:
            return o
    return None


def secret_data(obj: Obj) -> dict[str, bytes]:
    """A Secret's keys and values (``data`` decoded, ``stringData`` over it)."""
    out = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    out.update({k: v.encode() for k, v in (obj.get("stringData") or {}).items()})
    return out
