"""Validation of TrainJobs and runtimes: the CRD schema and CEL rules, with upstream's messages.

The same rules are written into the CRDs (``trainjob.api.crd``) so the apiserver enforces them too;
here they run without a cluster (``trainjob plan``, the local backend, the webhooks). A runtime's
rules are :mod:`trainjob.api.runtime_validation`, a namespace's :mod:`trainjob.api.meta`; both
are exported here too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from trainjob.api import constants as c
from trainjob.api import container_validation, meta
from trainjob.api.base import to_dict
from trainjob.api.k8s_types import EnvVar
from trainjob.api.meta import DNS1123_LABEL, DNS1123_LABEL_MESSAGE, validate_namespace
from trainjob.api.runtime_validation import go_container, validate_runtime
from trainjob.api.trainer import Runtime, TrainJob
from trainjob.errors import FieldError

__all__ = [
    "DNS1123_LABEL",
    "DNS1123_LABEL_MESSAGE",
    "go_container",
    "is_quantity",
    "trainjob_warnings",
    "validate_domain_prefixed_path",
    "validate_namespace",
    "validate_runtime",
    "validate_runtime_ref",
    "validate_trainjob",
]

RFC1035_LABEL = meta.DNS1035_LABEL
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://.+$")
QUALIFIED_PATH = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")

# Kubernetes' resource.Quantity grammar and the message the apiserver gives for a bad one.
QUANTITY = re.compile(
    r"^[+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
QUANTITY_MESSAGE = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


def is_quantity(value: object) -> bool:
    """True for ``2``, ``"500m"``, ``"1Gi"``, ``"0.5"``; False for ``lots``, booleans and ``0.5``.

    A bare decimal such as ``cpu: 0.5`` is refused, as the apiserver refuses it (the schema takes
    an integer or a string): write ``"0.5"`` or ``500m``.
    """
    if isinstance(value, bool | float):
        return False
    if isinstance(value, int):
        return True  # a negative one is refused by container_validation.validate_resources, as the apiserver does
    return isinstance(value, str) and bool(QUANTITY.match(value))


MANAGED_BY_VALUES = (c.MANAGED_BY_TRAINER, c.MANAGED_BY_MULTIKUEUE)
MAX_ENV = 128
MAX_COMMAND = 128
MAX_IMAGE = 500
MAX_STORAGE_URI = 2048
MAX_PATCHES = 16


NUM_NODES_ZERO_WARNING = (
    "spec.trainer.numNodes: 0 gives the trainer job no pods (parallelism 0), so the TrainJob "
    "completes without training: set numNodes to 1 or more to train (the local backend refuses 0)"
)


def trainjob_warnings(tj: TrainJob, old: TrainJob | None = None) -> list[str]:
    """What is valid but most likely not meant, as admission warnings (kubectl prints each as
    ``Warning: ...``; ``trainjob plan`` too). ``numNodes: 0`` is valid (upstream's CRD minimum is
    0, kubeflow/trainer#3809, as JobSet's replicas may be 0) and builds a trainer job of no pods;
    it is said on create and when an update sets it."""
    nodes = tj.spec.trainer.num_nodes if tj.spec.trainer is not None else None
    was = old.spec.trainer.num_nodes if old is not None and old.spec.trainer is not None else None
    if nodes == 0 and (old is None or was != 0):
        return [NUM_NODES_ZERO_WARNING]
    return []


def validate_trainjob(tj: TrainJob, old: TrainJob | None = None) -> list[FieldError]:
    """Object-level and spec-level rules of the TrainJob CRD (upstream v2.3)."""
    errs: list[FieldError] = []
    name = tj.metadata.name
    if not name and not tj.metadata.generate_name:
        errs.append(FieldError.required("metadata.name", "name or generateName is required"))
    elif name:
        if not RFC1035_LABEL.match(name):
            errs.append(
                FieldError.invalid(
                    "metadata.name", name, "metadata.name must match RFC 1035 DNS label format"
                )
            )
        if len(name) > 63:
            errs.append(
                FieldError.invalid(
                    "metadata.name", name, "metadata.name must be no more than 63 characters"
                )
            )
    errs.extend(validate_namespace(tj.metadata.namespace))
    errs.extend(meta.validate_metadata("metadata", tj.metadata))
    spec = tj.spec
    errs.extend(meta.validate_labels("spec.labels", spec.labels))
    errs.extend(meta.validate_annotations("spec.annotations", spec.annotations))
    ref = spec.runtime_ref
    if not ref.name:
        errs.append(FieldError.required("spec.runtimeRef.name", "must specify a runtime name"))
    elif len(ref.name) > 253:
        errs.append(FieldError.too_long("spec.runtimeRef.name", ref.name, 253))
    if ref.kind not in (None, c.TRAINING_RUNTIME_KIND, c.CLUSTER_TRAINING_RUNTIME_KIND):
        errs.append(
            FieldError.not_supported(
                "spec.runtimeRef.kind",
                ref.kind,
                [c.CLUSTER_TRAINING_RUNTIME_KIND, c.TRAINING_RUNTIME_KIND],
            )
        )
    if spec.managed_by is not None and spec.managed_by not in MANAGED_BY_VALUES:
        errs.append(
            FieldError.invalid(
                "spec.managedBy",
                spec.managed_by,
                "ManagedBy must be trainer.kubeflow.org/trainjob-controller or "
                "kueue.x-k8s.io/multikueue if set",
            )
        )
    if spec.active_deadline_seconds is not None and spec.active_deadline_seconds < 1:
        errs.append(
            FieldError.invalid(
                "spec.activeDeadlineSeconds",
                spec.active_deadline_seconds,
                "should be greater than or equal to 1",
            )
        )
    if spec.ttl_seconds_after_finished is not None and spec.ttl_seconds_after_finished < 0:
        errs.append(
            FieldError.invalid(
                "spec.ttlSecondsAfterFinished",
                spec.ttl_seconds_after_finished,
                "should be greater than or equal to 0",
            )
        )
    tr = spec.trainer
    if tr is not None:
        if tr.num_nodes is not None and tr.num_nodes < 0:
            errs.append(
                FieldError.invalid(
                    "spec.trainer.numNodes", tr.num_nodes, "should be greater than or equal to 0"
                )
            )
        if isinstance(tr.num_proc_per_node, int) and tr.num_proc_per_node < 1:
            errs.append(
                FieldError.invalid(
                    "spec.trainer.numProcPerNode",
                    tr.num_proc_per_node,
                    "numProcPerNode must be greater than or equal to 1",
                )
            )
        if tr.image is not None and len(tr.image) > MAX_IMAGE:
            errs.append(FieldError.too_long("spec.trainer.image", tr.image, MAX_IMAGE))
        for fld, values in (("command", tr.command), ("args", tr.args)):
            if values is not None and len(values) > MAX_COMMAND:
                errs.append(FieldError.too_many(f"spec.trainer.{fld}", len(values), MAX_COMMAND))
        errs.extend(_validate_env("spec.trainer.env", tr.env))
        errs.extend(
            container_validation.validate_argv(
                "spec.trainer", {"command": tr.command, "args": tr.args}
            )
        )
        rpn = tr.resources_per_node
        if rpn is not None:
            for kind in ("limits", "requests"):
                for res, qty in (getattr(rpn, kind) or {}).items():
                    if not is_quantity(qty):
                        errs.append(
                            FieldError.invalid(
                                f"spec.trainer.resourcesPerNode.{kind}.{res}", qty, QUANTITY_MESSAGE
                            )
                        )
            path = "spec.trainer.resourcesPerNode"
            errs.extend(container_validation.unknown_resource_fields(path, rpn.model_extra or {}))
            errs.extend(container_validation.validate_resources(path, rpn.limits, rpn.requests))
    init = spec.initializer
    if init is not None:
        for part, cfg in (("dataset", init.dataset), ("model", init.model)):
            if cfg is None:
                continue
            path = f"spec.initializer.{part}"
            uri = cfg.storage_uri
            if uri is not None:
                if len(uri) > MAX_STORAGE_URI:
                    errs.append(FieldError.too_long(f"{path}.storageUri", uri, MAX_STORAGE_URI))
                elif uri != "" and not URI.match(uri):
                    errs.append(
                        FieldError.invalid(
                            f"{path}.storageUri",
                            uri,
                            "storageUri may be empty, or it must be a valid URI (scheme://...)",
                        )
                    )
            errs.extend(_validate_env(f"{path}.env", cfg.env))
    patches = spec.runtime_patches or []
    if len(patches) > MAX_PATCHES:
        errs.append(FieldError.too_many("spec.runtimePatches", len(patches), MAX_PATCHES))
    seen: set[str] = set()
    for i, p in enumerate(patches):
        if p.manager in seen:
            errs.append(FieldError.duplicate(f"spec.runtimePatches[{i}]", {"manager": p.manager}))
        seen.add(p.manager)
        # Upstream's JobSet plugin names the field without the index (its text, verbatim).
        errs.extend(validate_domain_prefixed_path("spec.runtimePatches.manager", p.manager))
    for fld, items in (
        ("runtimePatches", spec.runtime_patches),
        ("podSpecOverrides", spec.pod_spec_overrides),
        ("podTemplateOverrides", spec.pod_template_overrides),
    ):
        for i, item in enumerate(items or ()):
            patch = to_dict(item)
            errs.extend(_patch_directives(f"spec.{fld}[{i}]", patch))
            errs.extend(meta.validate_nested_metadata(f"spec.{fld}[{i}]", patch))
    trainer_status = tj.status.trainer_status if tj.status else None
    if trainer_status is not None and trainer_status.last_updated_time is None:
        errs.append(
            FieldError.invalid(
                "status.trainerStatus",
                trainer_status,
                "lastUpdatedTime is required when trainerStatus is present",
            )
        )
    if old is not None:
        errs.extend(_validate_immutable(old, tj))
    return errs


def _patch_directives(path: str, value: Any) -> list[FieldError]:
    """``$patch``, ``$retainKeys``, ... anywhere in a patch: upstream's typed patch has no room for
    them (the apiserver drops them), and merged here they would end up as fields of the JobSet."""
    errs: list[FieldError] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and key.startswith("$"):
                errs.append(
                    FieldError.forbidden(
                        f"{path}.{key}",
                        "strategic merge patch directives are not supported in runtime patches",
                    )
                )
            else:
                errs.extend(_patch_directives(f"{path}.{key}", item))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            errs.extend(_patch_directives(f"{path}[{i}]", item))
    return errs


def _validate_env(path: str, env: Sequence[EnvVar] | None) -> list[FieldError]:
    if not env:
        return []
    errs: list[FieldError] = []
    if len(env) > MAX_ENV:
        errs.append(FieldError.too_many(path, len(env), MAX_ENV))
    names: set[str] = set()
    for i, e in enumerate(env):
        n = getattr(e, "name", "")
        if not n:
            errs.append(FieldError.required(f"{path}[{i}].name", ""))
        elif n in names:
            errs.append(FieldError.duplicate(f"{path}[{i}]", {"name": n}))
        names.add(n)
    errs.extend(container_validation.validate_env(path, env))
    return errs


def validate_domain_prefixed_path(path: str, value: str) -> list[FieldError]:
    """Kubernetes ``IsDomainPrefixedPath``: ``example.com/manager``."""
    if not value:
        return [FieldError.required(path, "")]
    if len(value) > 253:
        return [FieldError.too_long(path, value, 253)]
    host, sep, rest = value.partition("/")
    if not sep or not rest:
        return [
            FieldError.invalid(
                path, value, 'must be a domain-prefixed path (such as "acme.io/foo")'
            )
        ]
    if not DNS1123_SUBDOMAIN.match(host):
        return [
            FieldError.invalid(
                path,
                host,
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character",
            )
        ]
    if not re.match(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$", rest):
        return [FieldError.invalid(path, rest, "Invalid path")]
    return []


def _validate_immutable(old: TrainJob, new: TrainJob) -> list[FieldError]:
    errs: list[FieldError] = []
    checks: tuple[tuple[str, Any, Any], ...] = (
        ("spec.runtimeRef", old.spec.runtime_ref, new.spec.runtime_ref),
        ("spec.initializer", old.spec.initializer, new.spec.initializer),
        ("spec.trainer", old.spec.trainer, new.spec.trainer),
        (
            "spec.activeDeadlineSeconds",
            old.spec.active_deadline_seconds,
            new.spec.active_deadline_seconds,
        ),
        ("spec.managedBy", old.spec.managed_by, new.spec.managed_by),
    )
    for path, a, b in checks:
        if a != b:
            errs.append(FieldError.invalid(path, b, "field is immutable"))
    return errs


def validate_runtime_ref(tj: TrainJob, runtime: Runtime) -> list[FieldError]:
    """The runtime handed in is the one ``spec.runtimeRef`` names."""
    ref = tj.spec.runtime_ref
    errs: list[FieldError] = []
    if ref.api_group not in (None, c.GROUP):
        errs.append(
            FieldError.invalid(
                "spec.runtimeRef", ref, f"unsupported runtime: {ref.kind}.{ref.api_group}"
            )
        )
    if (ref.kind or c.CLUSTER_TRAINING_RUNTIME_KIND) != runtime.kind:
        errs.append(
            FieldError.invalid(
                "spec.runtimeRef.kind",
                ref.kind,
                f"must be {runtime.kind} to use runtime {runtime.metadata.name}",
            )
        )
    if runtime.metadata.name and ref.name != runtime.metadata.name:
        errs.append(
            FieldError.invalid("spec.runtimeRef.name", ref.name, f"must be {runtime.metadata.name}")
        )
    return errs
