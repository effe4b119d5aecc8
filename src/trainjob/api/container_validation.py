"""The apiserver's core/v1 rules for a container: resource names and quantities, env vars.

A TrainJob's ``resourcesPerNode`` and ``env`` and a runtime's containers end up in pods, which
kube-apiserver checks (``ValidateContainerResourceRequirements``, ``ValidateEnv`` in
``pkg/apis/core/validation``) with these messages. A CRD's schema does not: upstream admits
``cpu: "-1"`` or an env var with both ``value`` and ``valueFrom`` and the JobSet's pods are refused
later (on the local backend they ran, or crashed the supervisor). Called by
:mod:`trainjob.api.validation`, so ``plan``, ``run``, the SDK and the webhooks refuse them alike.

One addition of ours: a NUL byte in an env value, command or argument is refused (a container
runtime cannot exec it; locally it crashed the process launcher).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from trainjob.api import meta, quantity
from trainjob.errors import FieldError

# helper.IsStandardContainerResourceName / IsStandardResourceName (pkg/apis/core/helper).
_CONTAINER_RESOURCES = {"cpu", "memory", "ephemeral-storage"}
_STANDARD_RESOURCES = {
    *_CONTAINER_RESOURCES,
    "requests.cpu", "requests.memory", "requests.ephemeral-storage", "requests.storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services",
    "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
}  # fmt: skip
_HUGEPAGES = "hugepages-"
# validFieldPathExpressionsEnv and the labels the downward API converts (pkg/api/pod).
ENV_FIELD_PATHS = (
    "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
    "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
)  # fmt: skip
_CONVERTIBLE_FIELD_PATHS = {
    *ENV_FIELD_PATHS, "metadata.annotations", "metadata.labels", "spec.restartPolicy",
    "spec.schedulerName", "status.phase",
}  # fmt: skip
_SUBSCRIPTED = re.compile(r"^(?P<path>[^\[]+)\['(?P<key>.*)'\]$")
ENV_RESOURCE_PATHS = ("limits.cpu", "limits.memory", "requests.cpu", "requests.memory")
NUL_MESSAGE = "must not contain a NUL byte"


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_hugepages(name: str) -> bool:
    return name.startswith(_HUGEPAGES)


def _is_extended(name: str) -> bool:
    if _is_native(name) or name.startswith("requests."):
        return False
    return not meta.qualified_name_problems(f"requests.{name}")


def resource_name_problems(name: str) -> list[str]:
    """``validateContainerResourceName``: a standard container resource or a qualified one."""
    problems = meta.qualified_name_problems(name)
    if problems:
        return problems
    if "/" not in name:
        if name not in _STANDARD_RESOURCES and not _is_hugepages(name):
            return ["must be a standard resource type or fully qualified"]
        if name not in _CONTAINER_RESOURCES and not _is_hugepages(name):
            return ["must be a standard resource for containers"]
    elif not _is_native(name) and not _is_extended(name):
        return ["doesn't follow extended resource name standard"]
    return []


def _overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not _is_hugepages(name)


def validate_resources(path: str, limits: Any, requests: Any) -> list[FieldError]:
    """Resource names and quantities of one container's ``resources`` (apiserver rules): names
    standard or qualified, amounts not negative, extended resources whole numbers, a request at
    most its limit (equal to it, and the limit set, for GPUs and other extended resources).

    A value that is not a quantity at all is left to the schema check (reported once there)."""
    errs: list[FieldError] = []
    parsed: dict[str, dict[str, quantity.Quantity]] = {"limits": {}, "requests": {}}
    for kind, values in (("limits", limits), ("requests", requests)):
        if not isinstance(values, Mapping):
            continue
        for name, raw in values.items():
            name = str(name)
            where = f"{path}.{kind}.{name}" if name else f"{path}.{kind}"
            errs.extend(FieldError.invalid(where, name, p) for p in resource_name_problems(name))
            if isinstance(raw, bool) or not isinstance(raw, str | int):
                continue
            try:
                amount = quantity.parse(raw)
            except quantity.QuantityError:
                continue
            parsed[kind][name] = amount
            if amount.amount < 0:
                errs.append(
                    FieldError.invalid(where, str(amount), "must be greater than or equal to 0")
                )
            elif _is_extended(name) and amount.amount.denominator != 1:
                errs.append(FieldError.invalid(where, str(amount), "must be an integer"))
    for name, amount in parsed["requests"].items():
        limit = parsed["limits"].get(name)
        if limit is None:
            if (
                name in (requests or {})
                and not _overcommit_allowed(name)
                and name not in (limits or {})
            ):
                errs.append(
                    FieldError.required(
                        f"{path}.limits", "Limit must be set for non overcommitable resources"
                    )
                )
            continue
        if amount.amount != limit.amount and not _overcommit_allowed(name):
            errs.append(
                FieldError.invalid(
                    f"{path}.requests", str(amount), f"must be equal to {name} limit of {limit}"
                )
            )
        elif amount.amount > limit.amount:
            errs.append(
                FieldError.invalid(
                    f"{path}.requests",
                    str(amount),
                    f"must be less than or equal to {name} limit of {limit}",
                )
            )
    return errs


def env_name_problems(name: str) -> list[str]:
    """apimachinery ``IsEnvVarName`` (relaxed, the default since Kubernetes 1.34)."""
    if not name or "=" in name or not all(" " <= ch <= "~" for ch in name):
        return [
            "a valid environment variable name must consist only of printable ASCII characters "
            "other than '='"
        ]
    return []


def validate_env(path: str, env: Sequence[Any] | None) -> list[FieldError]:
    """``ValidateEnv``: each name valid; ``value`` xor exactly one ``valueFrom`` source, each
    well formed (a ``fieldRef`` to a field the downward API gives env vars, ...)."""
    errs: list[FieldError] = []
    for i, var in enumerate(env or ()):
        item = var if isinstance(var, Mapping) else _as_dict(var)
        where = f"{path}[{i}]"
        name = item.get("name")
        if isinstance(name, str) and name:
            errs.extend(
                FieldError.invalid(f"{where}.name", name, p) for p in env_name_problems(name)
            )
        value = item.get("value")
        if isinstance(value, str) and "\0" in value:
            errs.append(FieldError.invalid(f"{where}.value", value, NUL_MESSAGE))
        source = item.get("valueFrom")
        if source is not None:
            errs.extend(_value_from(f"{where}.valueFrom", source, bool(value)))
    return errs


def _as_dict(var: Any) -> dict[str, Any]:
    dump = getattr(var, "model_dump", None)
    out: dict[str, Any] = dump(by_alias=True, exclude_none=True) if dump else {}
    return out


def _value_from(path: str, source: Any, has_value: bool) -> list[FieldError]:
    if not isinstance(source, Mapping):
        return [FieldError.invalid(path, source, "must be an object")]
    errs: list[FieldError] = []
    kinds = [
        k
        for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
        if source.get(k) is not None
    ]
    for kind in kinds:
        ref = source[kind]
        sub = f"{path}.{kind}"
        if not isinstance(ref, Mapping):
            errs.append(FieldError.invalid(sub, ref, "must be an object"))
        elif kind == "fieldRef":
            errs.extend(_field_ref(sub, ref))
        elif kind == "resourceFieldRef":
            resource = ref.get("resource")
            if not resource:
                errs.append(FieldError.required(f"{sub}.resource", ""))
            elif resource not in ENV_RESOURCE_PATHS:
                errs.append(
                    FieldError.not_supported(f"{sub}.resource", resource, list(ENV_RESOURCE_PATHS))
                )
        else:
            if not ref.get("key"):
                errs.append(FieldError.required(f"{sub}.key", ""))
    if not kinds:
        errs.append(
            FieldError.invalid(
                path,
                "",
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                "`secretKeyRef`",
            )
        )
    elif has_value:
        errs.append(FieldError.invalid(path, "", "may not be specified when `value` is not empty"))
    elif len(kinds) > 1:
        errs.append(
            FieldError.invalid(path, "", "may not have more than one field specified at a time")
        )
    return errs


def _field_ref(path: str, ref: Mapping[str, Any]) -> list[FieldError]:
    """``validateObjectFieldSelector`` with ``ConvertDownwardAPIFieldLabel`` (apiVersion v1)."""
    field_path = ref.get("fieldPath")
    version = ref.get("apiVersion") or "v1"
    if not field_path:
        return [FieldError.required(f"{path}.fieldPath", "")]
    if version != "v1":
        return [
            FieldError.invalid(
                f"{path}.fieldPath",
                field_path,
                f"error converting fieldPath: unsupported pod version: {version}",
            )
        ]
    m = _SUBSCRIPTED.match(str(field_path))
    if m:
        base, key = m.group("path"), m.group("key")
        if base not in ("metadata.annotations", "metadata.labels"):
            return [
                FieldError.invalid(
                    f"{path}.fieldPath",
                    field_path,
                    f"error converting fieldPath: field label does not support subscript: "
                    f"{field_path}",
                )
            ]
        key = key.lower() if base == "metadata.annotations" else key
        return [FieldError.invalid(path, key, p) for p in meta.qualified_name_problems(key)]
    if field_path not in _CONVERTIBLE_FIELD_PATHS:
        return [
            FieldError.invalid(
                f"{path}.fieldPath",
                field_path,
                f"error converting fieldPath: field label not supported: {field_path}",
            )
        ]
    if field_path not in ENV_FIELD_PATHS:
        return [FieldError.not_supported(f"{path}.fieldPath", field_path, list(ENV_FIELD_PATHS))]
    return []


RESOURCE_FIELDS = ("limits", "requests", "claims")


def unknown_resource_fields(path: str, keys: Any) -> list[FieldError]:
    """Keys of a ``resources`` object that ResourceRequirements does not have (``cpu: 2`` written
    beside ``limits``): kubectl's strict field validation refuses them, the apiserver would
    drop them, and the amount would silently not apply."""
    return [
        FieldError.forbidden(
            f"{path}.{key}",
            f'unknown field "{key}"; resources take limits, requests and claims (for example '
            f"limits: {{{key}: ...}})",
        )
        for key in keys
        if key not in RESOURCE_FIELDS
    ]


def validate_container(path: str, ctr: Mapping[str, Any]) -> list[FieldError]:
    """A container of a pod template (a dict): env, resources, and NUL-free command and args."""
    errs = validate_env(f"{path}.env", ctr.get("env") if isinstance(ctr.get("env"), list) else None)
    res = ctr.get("resources")
    if isinstance(res, Mapping):
        errs.extend(unknown_resource_fields(f"{path}.resources", res))
        errs.extend(validate_resources(f"{path}.resources", res.get("limits"), res.get("requests")))
    errs.extend(validate_argv(path, ctr))
    errs.extend(validate_mounts(f"{path}.volumeMounts", ctr.get("volumeMounts")))
    return errs


def descending_path_problems(value: str) -> list[str]:
    """``validateLocalDescendingPath``: a relative path that never climbs out (``..``)."""
    out = []
    if value.startswith("/"):
        out.append("must be a relative path")
    if ".." in value.split("/"):
        out.append("must not contain '..'")
    return out


def validate_mounts(path: str, mounts: Any) -> list[FieldError]:
    """A container's ``volumeMounts``: a ``subPath`` stays inside its volume."""
    errs: list[FieldError] = []
    for i, m in enumerate(mounts if isinstance(mounts, list) else ()):
        sub = m.get("subPath") if isinstance(m, Mapping) else None
        if isinstance(sub, str) and sub:
            where = f"{path}[{i}].subPath"
            errs.extend(FieldError.invalid(where, sub, p) for p in descending_path_problems(sub))
    return errs


def validate_argv(path: str, ctr: Mapping[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    for fld in ("command", "args"):
        for i, arg in enumerate(ctr.get(fld) or ()):
            if isinstance(arg, str) and "\0" in arg:
                errs.append(FieldError.invalid(f"{path}.{fld}[{i}]", arg, NUL_MESSAGE))
    return errs
