"""Admission webhooks (``admission.k8s.io/v1`` AdmissionReview) with upstream's paths and messages.

* ``/mutate-trainer-kubeflow-org-v1alpha1-trainjob`` (``defaulter.trainjob.trainer.kubeflow.org``):
  v2.0/v2.1 fields (``labels``, ``annotations``, ``podSpecOverrides``, ``podTemplateOverrides``)
  become ``runtimePatches`` (:mod:`trainjob.api.legacy`); each patch gets ``time`` = now on create
  when unset; on update, as upstream's defaulter, a patch whose content (ignoring time) did not
  change keeps the old object's time, a changed one gets now whatever time the client sent, and a
  new manager's gets now when unset.
* ``/validate-trainer-kubeflow-org-v1alpha1-trainjob`` (``validator.trainjob...``): the runtime must
  be a supported kind and exist (its snapshot on updates); then every validation of
  :func:`trainjob.runtime.validate`; patches of a suspended TrainJob cannot change while a
  replicated job of its JobSet is still active. Deprecated runtimes give a warning.
* ``/validate-trainer-kubeflow-org-v1alpha1-optimizationjob`` (``validator.optimizationjob...``):
  :func:`trainjob.api.optimization.parse_optimization_job`, the rules ``plan``, ``run`` and the SDK
  apply, in the same words; on updates the spec's immutability.
* ``/validate-trainer-kubeflow-org-v1alpha1-trainingruntime`` and
  ``...-clustertrainingruntime``: :func:`trainjob.api.validation.validate_runtime`; deprecated
  runtimes give a warning on create.

Refusals are what controller-runtime sends for a validator's aggregated field errors: HTTP 403
``Forbidden`` with the errors joined as Kubernetes joins them (one error alone, else
``[e1, e2]``), so ``kubectl`` prints ``admission webhook "validator.trainjob.trainer.kubeflow.org"
denied the request: spec.runtimeRef: Invalid value: ...``. The Status also carries
``details.causes`` (field, reason, message) for programs.

Served by ``trainjob.controller.webhooks.server``.
"""

from __future__ import annotations

import base64
import copy
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trainjob.api import constants as c
from trainjob.api import legacy, validation
from trainjob.api.base import to_dict
from trainjob.api.load import parse
from trainjob.api.optimization import parse_optimization_job
from trainjob.api.optimization_validation import validate_optimization_job
from trainjob.api.trainer import ClusterTrainingRuntime, TrainingRuntime, TrainJob
from trainjob.controller import runtimes
from trainjob.core import times
from trainjob.errors import ErrorType, FieldError, GoStruct, InvalidError
from trainjob.kube import http
from trainjob.kube import resources as r
from trainjob.kube.client import Client
from trainjob.kube.errors import ApiError, NotFound
from trainjob.runtime.compiler import validate as compile_validate
from trainjob.runtime.plugins.jobset import patches_without_time

log = logging.getLogger(__name__)

Obj = dict[str, Any]

PATH_MUTATE_TRAINJOB = "/mutate-trainer-kubeflow-org-v1alpha1-trainjob"
PATH_VALIDATE_TRAINJOB = "/validate-trainer-kubeflow-org-v1alpha1-trainjob"
PATH_VALIDATE_TRAINING_RUNTIME = "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime"
PATH_VALIDATE_OPTIMIZATION_JOB = "/validate-trainer-kubeflow-org-v1alpha1-optimizationjob"
PATH_VALIDATE_CLUSTER_TRAINING_RUNTIME = (
    "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime"
)

LEGACY_FIELDS = ("labels", "annotations", "podSpecOverrides", "podTemplateOverrides")

CAUSE_TYPES = {
    ErrorType.NOT_FOUND: "FieldValueNotFound",
    ErrorType.REQUIRED: "FieldValueRequired",
    ErrorType.DUPLICATE: "FieldValueDuplicate",
    ErrorType.INVALID: "FieldValueInvalid",
    ErrorType.NOT_SUPPORTED: "FieldValueNotSupported",
    ErrorType.FORBIDDEN: "FieldValueForbidden",
    ErrorType.TOO_LONG: "FieldValueTooLong",
    ErrorType.TOO_MANY: "FieldValueTooMany",
    ErrorType.INTERNAL: "InternalError",
}


@dataclass(frozen=True)
class Webhook:
    """One webhook of the configurations: upstream's name, path, resource and kind, and the
    ``matchConditions`` (CEL) under which the apiserver calls it at all."""

    name: str
    path: str
    plural: str
    mutating: bool = False
    match_conditions: tuple[tuple[str, str], ...] = ()


MUTATE_TRAINJOB_WHEN = (
    "!('spec' in object) ? false : type(object.spec) != map || "
    + "["
    + ", ".join(f"'{f}'" for f in ("runtimePatches", *LEGACY_FIELDS))
    + "].exists(f, f in object.spec)"
)
"""When the apiserver calls the TrainJob defaulter: only when :meth:`Admission.mutate_trainjob`
can have something to do, i.e. the spec has ``runtimePatches`` (whose ``time`` it stamps) or a
v2.0/v2.1 field it translates (or is no map, for the handler to answer). Otherwise its answer is
always "allowed, no patch", so the call is skipped: most TrainJobs then cost one webhook round
trip, not two (upstream calls both for every TrainJob). ``&&``/``||`` absorb an error in CEL, so
the expression never fails; failurePolicy Fail would refuse the TrainJob if it did."""


WEBHOOKS = (
    Webhook(
        "defaulter.trainjob.trainer.kubeflow.org",
        PATH_MUTATE_TRAINJOB,
        "trainjobs",
        True,
        match_conditions=(("patches-or-legacy-fields", MUTATE_TRAINJOB_WHEN),),
    ),
    Webhook(
        "validator.clustertrainingruntime.trainer.kubeflow.org",
        PATH_VALIDATE_CLUSTER_TRAINING_RUNTIME,
        "clustertrainingruntimes",
    ),
    Webhook(
        "validator.trainingruntime.trainer.kubeflow.org",
        PATH_VALIDATE_TRAINING_RUNTIME,
        "trainingruntimes",
    ),
    Webhook("validator.trainjob.trainer.kubeflow.org", PATH_VALIDATE_TRAINJOB, "trainjobs"),
    Webhook(
        "validator.optimizationjob.trainer.kubeflow.org",
        PATH_VALIDATE_OPTIMIZATION_JOB,
        "optimizationjobs",
    ),
)


@dataclass
class Verdict:
    """What one admission request gets back."""

    allowed: bool = True
    patch: list[Obj] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    status: Obj | None = None


def aggregate(errors: list[Any]) -> str:
    """Kubernetes ``utilerrors.NewAggregate(...).Error()``: one message, or ``[a, b]``, deduplicated."""
    msgs: list[str] = []
    for e in errors:
        s = str(e)
        if s not in msgs:
            msgs.append(s)
    if len(msgs) == 1:
        return msgs[0]
    return "[" + ", ".join(msgs) + "]"


def deny(errors: list[FieldError] | str, kind: str = "", name: str = "") -> Verdict:
    """A 403 Forbidden refusal (controller-runtime's ``admission.Denied``) with field causes."""
    message = errors if isinstance(errors, str) else aggregate(errors)
    status: Obj = {"code": 403, "reason": "Forbidden", "message": message, "status": "Failure"}
    if not isinstance(errors, str) and errors:
        kind_name, _, group = kind.partition(".")
        status["details"] = {
            "name": name,
            "group": group,
            "kind": kind_name,
            "causes": [
                {
                    "reason": CAUSE_TYPES.get(e.type, "FieldValueInvalid"),
                    "message": str(e)[len(e.field) + 2 :],
                    "field": e.field,
                }
                for e in errors
            ],
        }
    return Verdict(allowed=False, status=status)


RuntimeLookup = Callable[[r.Resource, str, str], Obj | None]
"""``(resource, namespace, name) -> runtime`` from an informer cache, None on a miss."""


class Admission:
    """The handlers, bound to a cluster client (for runtime and JobSet lookups) and a clock.

    Runtimes are read from ``cached_runtime`` first (as upstream's cache-backed client does) and
    from the apiserver on a miss, so a runtime created a moment ago is never reported missing.
    """

    def __init__(
        self,
        client: Client,
        clock: Callable[[], str] = times.now,
        cached_runtime: RuntimeLookup | None = None,
    ) -> None:
        self.client = client
        self.clock = clock
        self.cached_runtime = cached_runtime

    def routes(self) -> dict[str, Callable[[Obj], Verdict]]:
        return {
            PATH_MUTATE_TRAINJOB: self.mutate_trainjob,
            PATH_VALIDATE_TRAINJOB: self.validate_trainjob,
            PATH_VALIDATE_TRAINING_RUNTIME: self.validate_training_runtime,
            PATH_VALIDATE_CLUSTER_TRAINING_RUNTIME: self.validate_cluster_training_runtime,
            PATH_VALIDATE_OPTIMIZATION_JOB: self.validate_optimization_job,
        }

    # -- mutating --------------------------------------------------------------------------------
    def mutate_trainjob(self, request: Obj) -> Verdict:
        obj = request.get("object") or {}
        spec = obj.get("spec") or {}
        new_spec = copy.deepcopy(spec)
        if any(spec.get(f) for f in LEGACY_FIELDS):
            try:
                model = parse(obj)
            except InvalidError as e:
                return deny(e.errors, e.kind, e.name)
            assert isinstance(model, TrainJob)
            translated = [to_dict(p) for p in legacy.legacy_patches(model.spec)]
            new_spec["runtimePatches"] = translated + list(spec.get("runtimePatches") or [])
            for f in LEGACY_FIELDS:
                new_spec.pop(f, None)
        patches = new_spec.get("runtimePatches") or []
        now = self.clock()
        if request.get("operation") == "UPDATE":
            old_spec = (request.get("oldObject") or {}).get("spec") or {}
            old_by_manager = {p.get("manager"): p for p in old_spec.get("runtimePatches") or ()}
            for p in patches:
                old = old_by_manager.get(p.get("manager"))
                if old is None:
                    if not p.get("time"):
                        p["time"] = now
                elif _without_time(old) != _without_time(p):
                    p["time"] = now  # changed: the admission time, whatever the client sent
                elif old.get("time") is not None:
                    p["time"] = old["time"]
                else:
                    p.pop("time", None)
        else:
            for p in patches:
                if not p.get("time"):
                    p["time"] = now
        ops: list[Obj] = []
        if new_spec.get("runtimePatches") != spec.get("runtimePatches"):
            ops.append(
                {"op": "add", "path": "/spec/runtimePatches", "value": new_spec["runtimePatches"]}
            )
        for f in LEGACY_FIELDS:
            if f in spec and f not in new_spec:
                ops.append({"op": "remove", "path": f"/spec/{f}"})
        return Verdict(patch=ops)

    # -- validating: TrainJob --------------------------------------------------------------------
    def validate_trainjob(self, request: Obj) -> Verdict:
        obj = request.get("object") or {}
        try:
            new = parse(obj)
            old_obj = request.get("oldObject") if request.get("operation") == "UPDATE" else None
            old = parse(old_obj) if old_obj else None
        except InvalidError as e:
            return deny(e.errors, e.kind, e.name)
        assert isinstance(new, TrainJob)
        assert old is None or isinstance(old, TrainJob)
        kind = f"{c.TRAINJOB_KIND}.{c.GROUP}"
        name = new.metadata.name or ""
        gk = runtimes.group_kind(obj)
        if gk not in runtimes.SUPPORTED:
            return deny(f"unsupported runtime: {gk}")
        runtime_obj, errors = self._runtime_for(obj, old is not None)
        if errors:
            return deny(errors, kind, name)
        assert runtime_obj is not None
        warnings: list[str] = []
        try:
            runtime = runtimes.to_model(runtime_obj)
        except InvalidError as e:
            return deny(e.errors, e.kind, e.name)
        if (runtime.metadata.labels or {}).get(c.LABEL_SUPPORT) == c.SUPPORT_DEPRECATED:
            warnings.append(
                f'Referenced {runtime.kind} "{runtime.metadata.name}" is deprecated and will be '
                "removed in a future release of Kubeflow Trainer. See runtime deprecation policy: "
                f"{c.RUNTIME_DEPRECATION_POLICY_URL}"
            )
        warnings.extend(validation.trainjob_warnings(new, old))
        field_errors = compile_validate(
            new, runtime, old, priority_class_error=self._priority_class_error
        )
        if old is not None and not field_errors:
            field_errors.extend(self._active_jobset_errors(old, new))
        if field_errors:
            verdict = deny(field_errors, kind, name)
            verdict.warnings = warnings
            return verdict
        return Verdict(warnings=warnings)

    def _priority_class_error(self, name: str) -> str | None:
        """None when the PriorityClass exists, else upstream's reason (the cache's NotFound)."""
        http.check_inline()
        try:
            self.client.get(r.PRIORITY_CLASSES, name)
        except NotFound:
            return f'{r.PRIORITY_CLASSES.kind}.{r.PRIORITY_CLASSES.group} "{name}" not found'
        return None

    def _runtime_for(self, obj: Obj, update: bool) -> tuple[Obj | None, list[FieldError]]:
        """The runtime to validate against: the snapshot (updates), else the live one."""
        resource = runtimes.SUPPORTED[runtimes.group_kind(obj)]
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or "default"
        ref = (obj.get("spec") or {}).get("runtimeRef") or {}
        cluster = resource is r.CLUSTER_TRAINING_RUNTIMES
        what = "clusterTrainingRuntime" if cluster else "trainingRuntime"
        path = "spec.RuntimeRef" if cluster else "spec.runtimeRef"
        try:
            if update:
                http.check_inline()
                cm = self.client.get_or_none(r.CONFIGMAPS, runtimes.snapshot_name(obj), ns)
                if cm is not None:
                    try:
                        return runtimes.runtime_from_snapshot(obj, cm), []
                    except runtimes.SnapshotError as e:
                        return None, [
                            FieldError(
                                ErrorType.INTERNAL,
                                "spec.runtimeRef",
                                f"unable to get runtime snapshot: {e}",
                            )
                        ]
            name = str(ref.get("name", ""))
            cached = self.cached_runtime(resource, ns, name) if self.cached_runtime else None
            if cached is not None:
                return cached, []
            http.check_inline()
            return self.client.get(resource, name, ns), []
        except NotFound:
            msg = runtimes.not_found_message(resource, str(ref.get("name", "")))
            # Printed as Go prints the RuntimeRef struct: name, apiGroup, kind.
            value = GoStruct((k, ref[k]) for k in ("name", "apiGroup", "kind") if k in ref)
            return None, [
                FieldError.invalid(
                    path,
                    value,
                    f"{msg}: specified {what} must be created before the TrainJob is created",
                )
            ]
        except ApiError as e:
            return None, [
                FieldError(ErrorType.INTERNAL, "spec.runtimeRef", f"unable to get {what}: {e}")
            ]

    def _active_jobset_errors(self, old: TrainJob, new: TrainJob) -> list[FieldError]:
        """Patches of a suspended TrainJob may change only while no replicated job is active."""
        if patches_without_time(old) == patches_without_time(new):
            return []
        http.check_inline()
        jobset = self.client.get_or_none(
            r.JOBSETS, new.metadata.name or "", new.metadata.namespace or "default"
        )
        errors = []
        for rj in ((jobset or {}).get("status") or {}).get("replicatedJobsStatus") or ():
            if int(rj.get("active") or 0) > 0:
                errors.append(
                    FieldError.forbidden(
                        "spec.runtimePatches",
                        "RuntimePatches cannot be modified when the JobSet's ReplicatedJob "
                        f"{rj.get('name')} is still active",
                    )
                )
        return errors

    # -- validating: OptimizationJob ------------------------------------------------------------
    def validate_optimization_job(self, request: Obj) -> Verdict:
        """The rules ``plan``, ``run`` and the SDK apply (:mod:`trainjob.api.optimization_validation`:
        the CRD's CEL rules, every placeholder a parameter, the filled-in template a valid
        TrainJob), and on an update that the spec did not change."""
        kind = f"{c.OPTIMIZATION_JOB_KIND}.{c.GROUP}"
        try:
            new = parse_optimization_job(request.get("object") or {})
        except InvalidError as e:
            return deny(e.errors, e.kind or kind, e.name)
        old_obj = request.get("oldObject") if request.get("operation") == "UPDATE" else None
        if old_obj:
            try:
                old = parse_optimization_job(old_obj)
            except InvalidError:
                return Verdict()  # admitted before these rules: only the spec's immutability
            errors = validate_optimization_job(new, old)
            if errors:
                return deny(errors, kind, new.metadata.name or "")
        return Verdict()

    # -- validating: runtimes ----------------------------------------------------------------------
    def validate_training_runtime(self, request: Obj) -> Verdict:
        return self._validate_runtime(request, c.TRAINING_RUNTIME_KIND)

    def validate_cluster_training_runtime(self, request: Obj) -> Verdict:
        return self._validate_runtime(request, c.CLUSTER_TRAINING_RUNTIME_KIND)

    def _validate_runtime(self, request: Obj, kind: str) -> Verdict:
        try:
            rt = parse(request.get("object") or {})
        except InvalidError as e:
            return deny(e.errors, e.kind, e.name)
        assert isinstance(rt, TrainingRuntime | ClusterTrainingRuntime)
        warnings = []
        labels = rt.metadata.labels or {}
        if (
            request.get("operation") == "CREATE"
            and labels.get(c.LABEL_SUPPORT) == c.SUPPORT_DEPRECATED
        ):
            warnings.append(
                f'{kind} "{rt.metadata.name}" is deprecated and will be removed in a future '
                "release of Kubeflow Trainer. See runtime deprecation policy: "
                f"{c.RUNTIME_DEPRECATION_POLICY_URL}"
            )
        errors = validation.validate_runtime(rt)
        if errors:
            verdict = deny(errors, f"{kind}.{c.GROUP}", rt.metadata.name or "")
            verdict.warnings = warnings
            return verdict
        return Verdict(warnings=warnings)


def _without_time(patch: Obj) -> Obj:
    return {k: v for k, v in patch.items() if k != "time"}


def review(body: bytes | Obj, handler: Callable[[Obj], Verdict]) -> bytes:
    """Decode an AdmissionReview (or take it decoded), run ``handler`` on its request, encode
    the response."""
    doc = body if isinstance(body, dict) else json.loads(body or b"{}")
    request = doc.get("request") or {}
    try:
        verdict = handler(request)
    except ApiError as e:
        log.warning("admission %s: %s", request.get("uid"), e)
        verdict = Verdict(
            allowed=False,
            status={"code": 500, "reason": "InternalError", "message": str(e), "status": "Failure"},
        )
    response: Obj = {"uid": request.get("uid", ""), "allowed": verdict.allowed}
    if verdict.status is not None:
        response["status"] = verdict.status
    if verdict.warnings:
        response["warnings"] = verdict.warnings
    if verdict.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(verdict.patch).encode()).decode()
    out = {
        "apiVersion": doc.get("apiVersion", "admission.k8s.io/v1"),
        "kind": "AdmissionReview",
        "response": response,
    }
    return json.dumps(out).encode()
