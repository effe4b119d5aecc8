"""The rules a runtime's JobSet template meets on a cluster once it is applied: JobSet's webhook
(replicatedJob names that are DNS-1035 labels, ``dependsOn``, success and failure policy targets;
kubernetes-sigs/jobset ``pkg/webhooks/jobset_webhook.go``) and CRD, and the apiserver's Job and
Pod rules for the Jobs and pods it creates (``parallelism``, ``backoffLimit``, containers, their
env and resources).

Upstream admits a runtime that breaks them and its TrainJobs then never start on a cluster (the
JobSet or its pods are refused); on the local backend they ran, or never finished (no
replicatedJobs stayed Created, no containers stayed Running, a job depending on itself stayed
Pending). Called by :func:`trainjob.api.validation.validate_runtime`, which ``plan``, ``run``, the
SDK and the runtime webhooks share. Paths are the runtime's: ``spec.template.spec...``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainjob.api import container_validation, meta
from trainjob.errors import FieldError

Obj = dict[str, Any]
BASE = "spec.template.spec"


def validate_template(spec: Obj) -> list[FieldError]:
    """Every rule above for ``spec.template.spec`` (a JobSetSpec as a dict)."""
    errs: list[FieldError] = []
    rjobs = spec.get("replicatedJobs")
    if not isinstance(rjobs, list) or not rjobs:
        return [
            FieldError.required(f"{BASE}.replicatedJobs", "must have at least one replicatedJob")
        ]
    names: list[str] = []
    for i, rjob in enumerate(rjobs):
        if not isinstance(rjob, Mapping):
            continue
        path = f"{BASE}.replicatedJobs[{i}]"
        name = str(rjob.get("name") or "")
        # JobSet names each Job <jobset>-<name>-<index> and refuses one that is no DNS-1035 label
        errs.extend(FieldError.invalid(f"{path}.name", name, p) for p in meta.dns1035_label(name))
        errs.extend(_depends_on(path, i, name, rjob.get("dependsOn"), names))
        names.append(name)
        replicas = rjob.get("replicas")
        if isinstance(replicas, int) and replicas < 0:
            errs.append(
                FieldError.invalid(
                    f"{path}.replicas", replicas, "should be greater than or equal to 0"
                )
            )
        job_spec = (rjob.get("template") or {}).get("spec") or {}
        for fld in ("parallelism", "completions", "backoffLimit"):
            value = job_spec.get(fld)
            if isinstance(value, int) and not isinstance(value, bool) and value < 0:
                errs.append(
                    FieldError.invalid(
                        f"{path}.template.spec.{fld}", value, "must be greater than or equal to 0"
                    )
                )
        pod = (job_spec.get("template") or {}).get("spec") or {}
        errs.extend(_pod(f"{path}.template.spec.template.spec", pod))
    if spec.get("startupPolicy", {}).get("startupPolicyOrder") == "InOrder" and any(
        isinstance(r, Mapping) and r.get("dependsOn") for r in rjobs
    ):
        errs.append(
            FieldError.invalid(BASE, "", "StartupPolicy and DependsOn APIs are mutually exclusive")
        )
    known = set(names)
    for j, target in enumerate((spec.get("successPolicy") or {}).get("targetReplicatedJobs") or ()):
        if target not in known:
            errs.append(
                FieldError.invalid(
                    f"{BASE}.successPolicy.targetReplicatedJobs[{j}]",
                    target,
                    f"invalid replicatedJob name '{target}' does not appear in .spec.ReplicatedJobs",
                )
            )
    for r, rule in enumerate((spec.get("failurePolicy") or {}).get("rules") or ()):
        for j, target in enumerate((rule or {}).get("targetReplicatedJobs") or ()):
            if target not in known:
                errs.append(
                    FieldError.invalid(
                        f"{BASE}.failurePolicy.rules[{r}].targetReplicatedJobs[{j}]",
                        target,
                        f"invalid replicatedJob name '{target}' in failure policy does not appear "
                        "in .spec.ReplicatedJobs",
                    )
                )
    return errs


def _depends_on(path: str, index: int, name: str, deps: Any, before: list[str]) -> list[FieldError]:
    if not deps:
        return []
    if index == 0:
        return [
            FieldError.invalid(
                f"{path}.dependsOn", deps, "DependsOn can't be set for the first ReplicatedJob"
            )
        ]
    errs: list[FieldError] = []
    for j, dep in enumerate(deps if isinstance(deps, list) else ()):
        target = (dep or {}).get("name") if isinstance(dep, Mapping) else None
        if target not in before:
            # JobSet's webhook checks only for a known name, so a job that depends on itself
            # passes there and then waits for itself forever: here it must be an earlier job.
            errs.append(
                FieldError.invalid(
                    f"{path}.dependsOn[{j}].name",
                    target,
                    f"replicatedJob: {name} cannot depend on replicatedJob: {target} (it must "
                    "depend on a replicatedJob listed before it)",
                )
            )
    return errs


def _pod(path: str, pod: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    containers = pod.get("containers")
    if not containers:
        errs.append(FieldError.required(f"{path}.containers", ""))
    for v, volume in enumerate(pod.get("volumes") or ()):
        for kind in ("secret", "configMap"):
            source = volume.get(kind) if isinstance(volume, Mapping) else None
            for j, item in enumerate((source or {}).get("items") or ()):
                rel = item.get("path") if isinstance(item, Mapping) else None
                if isinstance(rel, str):
                    where = f"{path}.volumes[{v}].{kind}.items[{j}].path"
                    errs.extend(
                        FieldError.invalid(where, rel, p)
                        for p in container_validation.descending_path_problems(rel)
                    )
    seen: set[str] = set()  # one name space for init containers and containers
    for fld in ("initContainers", "containers"):
        for i, ctr in enumerate(pod.get(fld) or ()):
            if not isinstance(ctr, Mapping):
                continue
            where = f"{path}.{fld}[{i}]"
            name = ctr.get("name")
            if isinstance(name, str) and name in seen:
                errs.append(FieldError.duplicate(f"{where}.name", name))
            seen.add(str(name))
            errs.extend(container_validation.validate_container(where, ctr))
    return errs
