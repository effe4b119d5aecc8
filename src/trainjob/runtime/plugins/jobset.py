"""JobSet: pod network, initializer and trainer steps, and the JobSet itself (upstream ``plugins/jobset``).

* ``pre_build``: each PodSet's endpoints ``<trainjob>-<job>-0-<pod>.<subdomain>`` and its pod count
  as the Job's ``parallelism``/``completions``.
* ``build``: the JobSet named like the TrainJob, labels/annotations from the runtime (and patches),
  initializer envs (``STORAGE_URI``, env, secretRef), ``replicas: 1`` for ancestor jobs, scheduler pod
  labels, ``suspend``, and a controller ownerReference to the TrainJob.
* ``validate``: initializer jobs/containers/volume mounts exist; patches target existing jobs and
  containers and do not set envs of the reserved containers.
"""

from __future__ import annotations

from trainjob.api import constants as c
from trainjob.api.base import to_dict
from trainjob.api.jobset import API_VERSION as JOBSET_API_VERSION
from trainjob.api.trainer import DatasetInitializer, TrainJob
from trainjob.errors import FieldError
from trainjob.runtime.info import Info, Obj, upsert_env

NAME = "JobSet"

RUNTIME_REF_PATH = "spec.runtimeRef"
RUNTIME_PATCHES_PATH = "spec.runtimePatches"


def owner_reference(trainjob: TrainJob) -> Obj:
    ref: Obj = {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB_KIND,
        "name": trainjob.metadata.name,
    }
    if trainjob.metadata.uid:
        ref["uid"] = trainjob.metadata.uid
    ref["controller"] = True
    ref["blockOwnerDeletion"] = True
    return ref


def object_meta(trainjob: TrainJob, name: str | None = None) -> Obj:
    meta: Obj = {"name": name or trainjob.metadata.name}
    if trainjob.metadata.namespace:
        meta["namespace"] = trainjob.metadata.namespace
    return meta


class JobSet:
    name = NAME

    # -- pod network ---------------------------------------------------------------------------
    def pre_build(self, info: Info, trainjob: TrainJob) -> None:
        name = trainjob.metadata.name or ""
        network = info.jobset_spec.get("network") or {}
        subdomain = network.get("subdomain") or name
        for ps in info.pod_sets:
            ps.endpoints = [f"{name}-{ps.name}-0-{i}.{subdomain}" for i in range(ps.count)]
            job_spec = ps.rjob.setdefault("template", {}).setdefault("spec", {})
            job_spec["parallelism"] = ps.count
            job_spec["completions"] = ps.count

    # -- component builder ---------------------------------------------------------------------
    def build(self, info: Info, trainjob: TrainJob, options: object) -> list[Obj]:
        spec = info.jobset_spec
        init = trainjob.spec.initializer
        for ps in info.pod_sets:
            if ps.ancestor in c.ANCESTORS:
                ps.rjob["replicas"] = 1
            if ps.ancestor == c.ANCESTOR_DATASET_INITIALIZER and init and init.dataset:
                _initializer(ps.container(c.CONTAINER_DATASET_INITIALIZER), init.dataset)
            elif ps.ancestor == c.ANCESTOR_MODEL_INITIALIZER and init and init.model:
                _initializer(ps.container(c.CONTAINER_MODEL_INITIALIZER), init.model)
            if info.pod_labels or info.pod_annotations:
                pod_tmpl = ps.rjob["template"]["spec"].setdefault("template", {})
                meta = pod_tmpl.setdefault("metadata", {})
                if info.pod_labels:
                    meta.setdefault("labels", {}).update(info.pod_labels)
                if info.pod_annotations:
                    meta.setdefault("annotations", {}).update(info.pod_annotations)
        if trainjob.spec.suspend is not None:
            spec["suspend"] = trainjob.spec.suspend
        meta = object_meta(trainjob)
        if info.labels:
            meta["labels"] = dict(info.labels)
        if info.annotations:
            meta["annotations"] = dict(info.annotations)
        meta["ownerReferences"] = [owner_reference(trainjob)]
        return [
            {"apiVersion": JOBSET_API_VERSION, "kind": "JobSet", "metadata": meta, "spec": spec}
        ]

    # -- validation ----------------------------------------------------------------------------
    def validate(self, info: Info | None, old: TrainJob | None, new: TrainJob) -> list[FieldError]:
        errors: list[FieldError] = []
        if info is None:
            return errors
        containers: dict[str, dict[str, Obj]] = {}
        for ps in info.pod_sets:
            names: dict[str, Obj] = {}
            for ctr in ps.pod_spec.get("initContainers") or ():
                names[ctr.get("name", "")] = ctr
            for ctr in ps.pod_spec.get("containers") or ():
                names[ctr.get("name", "")] = ctr
            containers[ps.name] = names
        ref = to_dict(new.spec.runtime_ref)
        init = new.spec.initializer
        for kind, cfg, conf_name in (
            (c.JOB_DATASET_INITIALIZER, init.dataset if init else None, "datasetConfig"),
            (c.JOB_MODEL_INITIALIZER, init.model if init else None, "modelConfig"),
        ):
            if cfg is None:
                continue
            job = containers.get(kind)
            if job is None:
                errors.append(
                    FieldError.invalid(
                        RUNTIME_REF_PATH,
                        ref,
                        f"must have {kind} job when trainJob is configured with input {conf_name}",
                    )
                )
            elif kind not in job:
                errors.append(
                    FieldError.invalid(
                        RUNTIME_REF_PATH,
                        ref,
                        f"must have container with name - {kind} in the {kind} job",
                    )
                )
            elif not any(
                m.get("name") == c.INITIALIZER_VOLUME for m in job[kind].get("volumeMounts") or ()
            ):
                errors.append(
                    FieldError.invalid(
                        RUNTIME_REF_PATH,
                        ref,
                        f"must have volumeMount with name - {c.INITIALIZER_VOLUME} in container "
                        f"{kind} of the {kind} job",
                    )
                )
        errors.extend(_validate_patches(new, containers))
        errors.extend(_validate_patch_mutation(old, new))
        return errors


def _initializer(ctr: Obj | None, cfg: DatasetInitializer) -> None:
    if ctr is None:
        return
    env = ctr.setdefault("env", [])
    if cfg.storage_uri is not None:
        upsert_env(env, {"name": c.ENV_STORAGE_URI, "value": cfg.storage_uri})
    if cfg.env:
        upsert_env(env, *(to_dict(e) for e in cfg.env))
    if cfg.secret_ref is not None and cfg.secret_ref.name:
        ctr.setdefault("envFrom", []).append({"secretRef": {"name": cfg.secret_ref.name}})
    if not env:
        del ctr["env"]


def _validate_patches(new: TrainJob, containers: dict[str, dict[str, Obj]]) -> list[FieldError]:
    errors: list[FieldError] = []
    patches = new.spec.runtime_patches or []
    value = [to_dict(p) for p in patches]
    reserved = (c.CONTAINER_DATASET_INITIALIZER, c.CONTAINER_MODEL_INITIALIZER, c.CONTAINER_NODE)
    for patch in patches:
        tmpl = patch.training_runtime_spec.template if patch.training_runtime_spec else None
        for rjob in (tmpl.spec.replicated_jobs or []) if tmpl and tmpl.spec else []:
            job = containers.get(rjob.name)
            if job is None:
                errors.append(
                    FieldError.invalid(
                        RUNTIME_PATCHES_PATH,
                        value,
                        "must not have replicated job that doesn't exist in the runtime job template",
                    )
                )
                continue
            pod = rjob.template.spec.template if rjob.template and rjob.template.spec else None
            pod_spec = pod.spec if pod else None
            if pod_spec is None:
                continue
            for ctr in pod_spec.init_containers or ():
                if ctr.name not in job:
                    errors.append(
                        FieldError.invalid(
                            RUNTIME_PATCHES_PATH,
                            value,
                            f"must not have initContainer that doesn't exist in the runtime job {rjob.name}",
                        )
                    )
            for ctr in pod_spec.containers or ():
                if ctr.name not in job:
                    errors.append(
                        FieldError.invalid(
                            RUNTIME_PATCHES_PATH,
                            value,
                            f"must not have container that doesn't exist in the runtime job {rjob.name}",
                        )
                    )
                elif ctr.env and ctr.name in reserved:
                    errors.append(
                        FieldError.invalid(
                            RUNTIME_PATCHES_PATH,
                            value,
                            "must not have envs for the dataset-initializer, model-initializer, "
                            "node containers",
                        )
                    )
    return errors


def _validate_patch_mutation(old: TrainJob | None, new: TrainJob) -> list[FieldError]:
    if old is None:
        return []

    def strip(tj: TrainJob) -> list[Obj]:
        out = []
        for p in tj.spec.runtime_patches or []:
            d = to_dict(p)
            d.pop("time", None)
            out.append(d)
        return out

    if strip(old) == strip(new):
        return []
    if not old.spec.suspend and not new.spec.suspend:
        return [
            FieldError.forbidden(
                RUNTIME_PATCHES_PATH,
                "RuntimePatches can only be modified when the TrainJob is suspended before or after "
                "the update",
            )
        ]
    return []
