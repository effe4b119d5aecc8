"""``compile`` and ``validate``: TrainJob + runtime -> Plan, or the field errors that prevent it.

Both are pure. ``compile`` validates first (unless its caller has: ``validated=True``) and raises
:class:`trainjob.errors.InvalidError` with every problem found; ``validate`` returns the list instead (the admission webhook and ``trainjob plan``
print it kubectl-style).

:func:`build_info` is upstream's ``newRuntimeInfo`` (v2.3/HEAD): JobSet labels/annotations from the
runtime template then each patch's metadata; ``runtimePatches`` (after the v2.0/v2.1 fields
translated into patches) merged one by one as strategic merge patches onto the JobSetSpec, then
replicatedJobs put back in the runtime's order; one PodSet per replicatedJob whose count is the
job's ``parallelism`` (default 1), or ``mlPolicy.numNodes`` (default 1) for the trainer job when
the runtime has an ``mlPolicy`` (MPI's launcher included), never below 1; ``trainer.image``,
``command``, ``args`` onto the trainer's ``node`` container, and ``resourcesPerNode`` merged key by
key into it when the runtime has an ``mlPolicy``. Upstream's cases are pinned in
``tests/unit/runtime/test_upstream_cases.py``.

Deliberate differences from upstream:

* patches and overrides are validated against the runtime's template *before* patching (upstream
  validates the patched template, into which a strategic merge has already added an unknown job);
* ``resourcesPerNode.claims`` merge into the container's claims by name (v2.3 drops claims from the
  apply configuration; v2.0/v2.1 replaced ``resources`` wholesale);
* the JobSet is always planned: not re-applying a running, unsuspended JobSet (upstream's JobSet
  builder returns nothing then) is the controller's call, as is the runtimePatches rule that needs
  the live JobSet ("... cannot be modified when the JobSet's ReplicatedJob ... is still active");
* zero values are left out (upstream's typed round trip writes ``resources: {}`` and a null
  ``creationTimestamp``), and the owner reference has no ``uid`` when the TrainJob has none yet;
* what upstream admits and then fails to apply is a field error here: label keys/values the
  apiserver refuses in any metadata a patch or template carries into the JobSet
  (:mod:`trainjob.api.meta`), ``$patch`` directives in patches (upstream's typed patch drops them),
  an MPI hostfile over the 1 MiB a ConfigMap may hold;
* fields the patch types do not name (``priorityClassName`` in a pod patch, a future field) are
  merged, not pruned: the CRD preserves them, so nothing a user wrote is dropped.
"""

from __future__ import annotations

from typing import Any

from trainjob.api import constants as c
from trainjob.api import legacy, validation
from trainjob.api.base import to_dict
from trainjob.api.trainer import Runtime, RuntimePatch, TrainJob
from trainjob.errors import FieldError, InvalidError
from trainjob.runtime import smp
from trainjob.runtime.compileoptions import CompileOptions
from trainjob.runtime.info import Info, PodSet, iter_containers
from trainjob.runtime.plan import Plan
from trainjob.runtime.plugins import volcano
from trainjob.runtime.registry import framework, framework_with
from trainjob.runtime.resources import merge_resources

__all__ = ["CompileOptions", "build_info", "compile", "framework", "merge_resources", "validate"]


def _runtime_spec_dict(runtime: Runtime) -> dict[str, Any]:
    return to_dict(runtime.spec.template.spec)


def build_info(trainjob: TrainJob, runtime: Runtime) -> Info:
    """Upstream ``newRuntimeInfo``: apply patches, merge resources, make PodSets."""
    tmpl = runtime.spec.template
    labels = dict(tmpl.metadata.labels or {}) if tmpl.metadata else {}
    annotations = dict(tmpl.metadata.annotations or {}) if tmpl.metadata else {}
    spec = _runtime_spec_dict(runtime)
    patches: list[RuntimePatch] = legacy.legacy_patches(trainjob.spec) + list(
        trainjob.spec.runtime_patches or []
    )
    runtime_containers: dict[str, set[str]] | None = None
    if patches:
        order = [rj.get("name") for rj in spec.get("replicatedJobs") or ()]
        runtime_containers = {
            rj.get("name", ""): {ctr.get("name", "") for ctr in iter_containers(_pod_spec(rj))}
            for rj in spec.get("replicatedJobs") or ()
        }
        for patch in patches:
            ptmpl = patch.training_runtime_spec.template if patch.training_runtime_spec else None
            if ptmpl is None:
                continue
            if ptmpl.metadata is not None:
                labels.update(ptmpl.metadata.labels or {})
                annotations.update(ptmpl.metadata.annotations or {})
            if ptmpl.spec is not None:
                smp.merge(spec, to_dict(ptmpl.spec))
        if spec.get("replicatedJobs"):
            rank = {n: i for i, n in enumerate(order)}
            spec["replicatedJobs"].sort(key=lambda rj: rank.get(rj.get("name"), len(rank)))

    policy = runtime.spec.ml_policy
    trainer = trainjob.spec.trainer
    pod_sets: list[PodSet] = []
    for rjob in spec.get("replicatedJobs") or ():
        tmpl_meta = (rjob.get("template") or {}).get("metadata") or {}
        ancestor = (tmpl_meta.get("labels") or {}).get(c.LABEL_ANCESTOR)
        job_spec = (rjob.get("template") or {}).get("spec") or {}
        parallelism = job_spec.get("parallelism")
        count = 1 if parallelism is None else parallelism
        if ancestor == c.ANCESTOR_TRAINER and policy is not None:
            count = 1 if policy.num_nodes is None else policy.num_nodes
        ps = PodSet(name=rjob.get("name", ""), ancestor=ancestor, count=max(count, 1), rjob=rjob)
        pod_sets.append(ps)
        if ancestor == c.ANCESTOR_TRAINER and trainer is not None:
            _apply_trainer(ps, trainjob, resources=policy is not None)
    return Info(
        labels=labels,
        annotations=annotations,
        ml_policy=policy,
        pod_group_policy=runtime.spec.pod_group_policy,
        jobset_spec=spec,
        pod_sets=pod_sets,
        runtime_containers=runtime_containers,
    )


def _pod_spec(rjob: dict[str, Any]) -> dict[str, Any]:
    job_spec = (rjob.get("template") or {}).get("spec") or {}
    pod_spec: dict[str, Any] = (job_spec.get("template") or {}).get("spec") or {}
    return pod_spec


def _apply_trainer(ps: PodSet, trainjob: TrainJob, *, resources: bool) -> None:
    """``trainer.image|command|args`` onto container ``node`` of the trainer job, and
    ``resourcesPerNode`` when the runtime has an ``mlPolicy`` (as upstream ``newRuntimeInfo``)."""
    trainer = trainjob.spec.trainer
    node = ps.container(c.CONTAINER_NODE)
    if trainer is None or node is None:
        return
    if trainer.image is not None:
        node["image"] = trainer.image
    if node.get("command") is not None:
        ps.runtime_command = list(node["command"])
    if node.get("args") is not None:
        ps.runtime_args = list(node["args"])
    if trainer.command is not None:
        node["command"] = list(trainer.command)
    if trainer.args is not None:
        node["args"] = list(trainer.args)
    if resources:
        merge_resources(node, trainer)


def validate(
    trainjob: TrainJob,
    runtime: Runtime | None,
    old: TrainJob | None = None,
    *,
    priority_class_error: volcano.PriorityClassLookup | None = None,
) -> list[FieldError]:
    """Every field error of ``trainjob`` against ``runtime`` (empty when it compiles).

    ``priority_class_error`` lets the Volcano plugin check that a runtime's PriorityClass exists
    (the admission webhook passes a cluster lookup; without one the check is skipped)."""
    errors = validation.validate_trainjob(trainjob, old)
    if runtime is None:
        return errors
    errors.extend(validation.validate_runtime_ref(trainjob, runtime))
    try:
        info: Info | None = build_info(trainjob, runtime)
    except InvalidError as e:
        errors.extend(e.errors)
        info = None
    fwk = framework() if priority_class_error is None else framework_with(priority_class_error)
    errors.extend(fwk.validate(info, old, trainjob))
    return errors


def compile(
    trainjob: TrainJob,
    runtime: Runtime,
    options: CompileOptions | None = None,
    *,
    validated: bool = False,
) -> Plan:
    """The Plan for ``trainjob`` on ``runtime``; raises InvalidError listing every problem.

    ``validated``: the caller has already found :func:`validate` empty for this pair
    (:func:`trainjob.executor.catalog.admit` does), so the compiler trusts it and does not run the same
    rules twice. Any other input is validated here first.
    """
    if not validated:
        errors = validate(trainjob, runtime)
        if errors:
            kind = c.TRAINJOB_KIND + "." + c.GROUP
            raise InvalidError(errors, kind, trainjob.metadata.name or "")
    info = build_info(trainjob, runtime)
    try:
        objects = framework().run(info, trainjob, options or CompileOptions())
    except InvalidError as e:
        if e.kind:
            raise
        # An enforce step found what only the runtime can fix (its paths are the runtime's).
        raise InvalidError(
            e.errors, f"{runtime.kind}.{c.GROUP}", runtime.metadata.name or ""
        ) from None
    return Plan(tuple(objects))
