"""Validation of TrainingRuntimes and ClusterTrainingRuntimes: upstream's runtime webhooks and CEL
rules, with upstream's messages.

Run by the runtime admission webhook, ``trainjob plan``, ``trainjob apply`` and the local backend
before a runtime is stored; :func:`go_container` prints a container as upstream's errors print
it. Exported by :mod:`trainjob.api.validation` too.
"""

from __future__ import annotations

from typing import Any

from trainjob.api import constants as c
from trainjob.api import meta, templates
from trainjob.api.base import to_dict
from trainjob.api.meta import validate_namespace
from trainjob.api.trainer import ClusterTrainingRuntime, TrainingRuntime
from trainjob.errors import FieldError, GoStruct


def validate_runtime(rt: TrainingRuntime | ClusterTrainingRuntime) -> list[FieldError]:
    """The runtime admission rules (upstream TrainingRuntime/ClusterTrainingRuntime webhooks + CEL)."""
    errs: list[FieldError] = []
    if not rt.metadata.name:
        errs.append(FieldError.required("metadata.name", "name or generateName is required"))
    errs.extend(validate_namespace(rt.metadata.namespace))
    errs.extend(meta.validate_metadata("metadata", rt.metadata))
    errs.extend(meta.validate_nested_metadata("spec.template", to_dict(rt.spec.template)))
    errs.extend(templates.validate_template(to_dict(rt.spec.template.spec)))
    run = rt.spec.run_policy
    if (
        run is not None
        and run.active_deadline_seconds is not None
        and run.active_deadline_seconds < 1
    ):
        errs.append(
            FieldError.invalid(
                "spec.runPolicy.activeDeadlineSeconds",
                run.active_deadline_seconds,
                "should be greater than or equal to 1",
            )
        )
    if (
        run is not None
        and run.ttl_seconds_after_finished is not None
        and run.ttl_seconds_after_finished < 0
    ):
        errs.append(
            FieldError.invalid(
                "spec.runPolicy.ttlSecondsAfterFinished",
                run.ttl_seconds_after_finished,
                "should be greater than or equal to 0",
            )
        )
    policy = rt.spec.ml_policy
    if policy is not None:
        set_policies = [n for n in ("torch", "mpi", "jax", "xgboost", "flux") if getattr(policy, n)]
        if len(set_policies) > 1:
            errs.append(
                FieldError.invalid(
                    "spec.mlPolicy", policy, "Only one of the policy can be configured"
                )
            )
        if policy.num_nodes is not None and policy.num_nodes < 1:
            errs.append(
                FieldError.invalid(
                    "spec.mlPolicy.numNodes",
                    policy.num_nodes,
                    "should be greater than or equal to 1",
                )
            )
        if policy.torch is not None:
            npp = policy.torch.num_proc_per_node
            if npp is not None and not (
                (isinstance(npp, int) and npp > 0) or npp in ("auto", "cpu", "gpu")
            ):
                errs.append(
                    FieldError.invalid(
                        "spec.mlPolicy.torch.numProcPerNode",
                        npp,
                        "NumProcPerNode must be equal to auto, cpu, gpu, or int value",
                    )
                )
            if policy.num_nodes is not None and policy.torch.elastic_policy is not None:
                errs.append(
                    FieldError.invalid(
                        "spec.mlPolicy",
                        policy,
                        "numNodes should not be set if torch.elasticPolicy is configured",
                    )
                )
            inj = policy.torch.env_injection
            for i, t in enumerate((inj.targets or []) if inj else []):
                p = f"spec.mlPolicy.torch.envInjection.targets[{i}].containerNames"
                if not 1 <= len(t.container_names) <= 8:
                    errs.append(FieldError.invalid(p, t.container_names, "must have 1 to 8 items"))
                if c.CONTAINER_NODE in t.container_names:
                    errs.append(
                        FieldError.invalid(
                            p,
                            t.container_names,
                            "containerNames must not include the main node container because "
                            "PET_* envs are always injected into it",
                        )
                    )
        if policy.mpi is not None:
            mpi = policy.mpi
            if mpi.num_proc_per_node is not None and mpi.num_proc_per_node < 1:
                errs.append(
                    FieldError.invalid(
                        "spec.mlPolicy.mpi.numProcPerNode",
                        mpi.num_proc_per_node,
                        "numProcPerNode must be greater than or equal to 1",
                    )
                )
            if mpi.mpi_implementation not in (None, "", c.MPI_IMPL_OPENMPI):
                errs.append(
                    FieldError.not_supported(
                        "spec.mlPolicy.mpi.mpiImplementation",
                        mpi.mpi_implementation,
                        [c.MPI_IMPL_OPENMPI],
                    )
                )
        flux = policy.flux
        if flux is not None and flux.num_proc_per_node is not None and flux.num_proc_per_node < 1:
            errs.append(
                FieldError.invalid(
                    "spec.mlPolicy.flux.numProcPerNode",
                    flux.num_proc_per_node,
                    "NumProcPerNode in fluxPolicy must be >= 1",
                )
            )
    pgp = rt.spec.pod_group_policy
    if pgp is not None and pgp.coscheduling is not None and pgp.volcano is not None:
        errs.append(
            FieldError.invalid(
                "spec.podGroupPolicy", pgp, "Only one of the policy can be configured"
            )
        )
    rjobs = rt.spec.template.spec.replicated_jobs or []
    names: set[str] = set()
    for i, rj in enumerate(rjobs):
        base = f"spec.template.spec.replicatedJobs[{i}]"
        if rj.name in names:
            errs.append(FieldError.duplicate(f"{base}.name", rj.name))
        names.add(rj.name)
        labels = (rj.template.metadata.labels or {}) if rj.template.metadata else {}
        ancestor = labels.get(c.LABEL_ANCESTOR)
        if ancestor not in c.ANCESTORS:
            continue
        if rj.replicas is not None and rj.replicas != 1:
            errs.append(FieldError.invalid(f"{base}.replicas", rj.replicas, "always must be 1"))
        containers = rj.template.spec.template.spec.containers
        required = c.REQUIRED_CONTAINER[ancestor]
        if not any(ctr.name == required for ctr in containers):
            errs.append(
                FieldError.invalid(
                    f"{base}.template.spec.template.spec.containers",
                    [go_container(ctr) for ctr in containers],
                    f"must contain the required container for the ancestor: {ancestor}",
                )
            )
    return errs


# Go's field order of the core/v1 types a runtime's container holds (k8s.io/api/core/v1), so a
# container prints as upstream's error prints the typed object; ``resources`` is a struct, so Go
# prints it even when empty.
_GO_FIELDS: dict[str, tuple[str, ...]] = {
    "container": (
        "name", "image", "command", "args", "workingDir", "ports", "envFrom", "env", "resources",
        "resizePolicy", "restartPolicy", "restartPolicyRules", "volumeMounts", "volumeDevices",
        "livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "terminationMessagePath",
        "terminationMessagePolicy", "imagePullPolicy", "securityContext", "stdin", "stdinOnce",
        "tty",
    ),
    "ports": ("name", "hostPort", "containerPort", "protocol", "hostIP"),
    "env": ("name", "value", "valueFrom"),
    "resources": ("limits", "requests", "claims"),
    "volumeMounts": (
        "name", "readOnly", "recursiveReadOnly", "mountPath", "subPath", "mountPropagation",
        "subPathExpr",
    ),
}  # fmt: skip


def _go_struct(value: dict[str, Any], kind: str) -> GoStruct:
    order = _GO_FIELDS[kind]
    out = GoStruct((k, value[k]) for k in order if k in value)
    out.update((k, value[k]) for k in sorted(value) if k not in out)
    return out


def go_container(ctr: Any) -> GoStruct:
    """A container as Go's ``json.Marshal`` prints a ``corev1.Container`` (field order, and
    ``resources`` always there), for errors that print whole containers as upstream's do."""
    d = to_dict(ctr) if hasattr(ctr, "model_dump") else dict(ctr)
    d["resources"] = _go_struct(d.get("resources") or {}, "resources")
    for key in ("ports", "env", "volumeMounts"):
        if isinstance(d.get(key), list):
            d[key] = [_go_struct(v, key) if isinstance(v, dict) else v for v in d[key]]
    return _go_struct(d, "container")
