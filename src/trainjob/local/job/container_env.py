"""A container's env as Kubernetes resolves it: ``envFrom``, ``valueFrom`` and ``$(VAR)``.

ConfigMap and Secret references are the Plan's objects; ``fieldRef`` is this pod's (its IP is
loopback, its node this machine); ``resourceFieldRef`` its requests and limits. Pure; used
through :mod:`trainjob.local.job.pods`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping

from trainjob.api import quantity
from trainjob.core import jobset
from trainjob.local.job.mounts import find_object, secret_data
from trainjob.local.job.templates import Obj, PodConfigError, PodTemplate
from trainjob.runtime.plan import Plan


def _source_data(objects: Plan, kind: str, ref: Obj) -> dict[str, str] | None:
    """The data of the ConfigMap or Secret ``ref`` names; None when it is missing but optional."""
    obj = find_object(objects, kind, ref.get("name"))
    if obj is None:
        if ref.get("optional"):
            return None
        raise PodConfigError(f'{kind.lower()} "{ref.get("name")}" not found')
    if kind == "Secret":
        return {k: v.decode() for k, v in secret_data(obj).items()}
    return dict(obj.get("data") or {})


def _field_value(path: str, pod: PodTemplate, namespace: str) -> str | None:
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if m:
        src = pod.labels if m.group(1) == "labels" else pod.annotations
        return src.get(m.group(2))
    return {
        "metadata.name": pod.name,
        "metadata.namespace": namespace,
        "metadata.uid": pod.labels.get(jobset.LABEL_JOBSET_UID, ""),
        "spec.nodeName": os.uname().nodename,
        "spec.serviceAccountName": str(pod.spec.get("serviceAccountName") or "default"),
        "status.podIP": "127.0.0.1",
        "status.podIPs": "127.0.0.1",
        "status.hostIP": "127.0.0.1",
        "status.hostIPs": "127.0.0.1",
    }.get(path)


def _resource_value(ref: Obj, ctr: Obj) -> str:
    kind, _, res = str(ref.get("resource", "")).partition(".")
    values = ((ctr.get("resources") or {}).get(kind) or {}) if kind else {}
    raw = values.get(res)
    if raw is None and kind == "limits" and res == "cpu":
        return str(os.cpu_count() or 1)
    if raw is None:
        return "0"
    divisor = ref.get("divisor") or 1
    value = quantity.parse(raw).amount / quantity.parse(divisor).amount
    return str(math.ceil(value))


def resolve_env(ctr: Obj, pod: PodTemplate, objects: Plan, namespace: str) -> dict[str, str]:
    """The container's env, ``envFrom`` first, with ``valueFrom`` and ``$(VAR)`` resolved."""
    env: dict[str, str] = {}
    for src in ctr.get("envFrom") or ():
        prefix = src.get("prefix") or ""
        if "configMapRef" in src:
            ref, kind = src["configMapRef"], "ConfigMap"
        elif "secretRef" in src:
            ref, kind = src["secretRef"], "Secret"
        else:
            continue
        data = _source_data(objects, kind, ref)
        if data is not None:
            env.update({prefix + k: v for k, v in data.items()})
    for var in ctr.get("env") or ():
        name = var["name"]
        if "valueFrom" not in var:
            env[name] = expand(str(var.get("value") or ""), env)
            continue
        vf = var["valueFrom"]
        value: str | None
        if "fieldRef" in vf:
            value = _field_value(vf["fieldRef"]["fieldPath"], pod, namespace)
        elif "resourceFieldRef" in vf:
            value = _resource_value(vf["resourceFieldRef"], ctr)
        elif "secretKeyRef" in vf or "configMapKeyRef" in vf:
            kind = "Secret" if "secretKeyRef" in vf else "ConfigMap"
            ref = vf.get("secretKeyRef") or vf.get("configMapKeyRef")
            data = _source_data(objects, kind, ref)
            if data is None:
                continue
            if ref["key"] not in data:
                if ref.get("optional"):
                    continue
                raise PodConfigError(
                    f"couldn't find key {ref['key']} in {kind} {namespace}/{ref.get('name')}"
                )
            value = data[ref["key"]]
        else:
            value = None
        if value is not None:
            env[name] = value
    return env


def expand(value: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion; ``$$`` escapes; unknown references stay as written."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)", sub, value)
