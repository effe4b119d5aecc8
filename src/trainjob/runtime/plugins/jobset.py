"""JobSet: pod network, initializer and trainer steps, and the JobSet itself (upstream ``plugins/jobset``).

* ``pre_build``: each PodSet's endpoints ``<trainjob>-<job>-0-<pod>.<subdomain>`` and its pod count
  as the Job's ``parallelism``/``completions``.
* ``build``: the JobSet named like the TrainJob, labels/annotations from the runtime (and patches),
  initializer envs (``STORAGE_URI``, env, secretRef), ``replicas: 1`` for ancestor jobs, scheduler pod
  labels, ``suspend``, and a controller ownerReference to the TrainJob.
* ``validate``: initializer jobs/containers/volume mounts exist; patches (and the v2.0/v2.1
  overrides) target jobs and containers of the runtime template as written, before any patch, and
  do not set envs of the reserved containers; the names JobSet will give the Jobs and pods are
  DNS-1035 labels (so no more than 63 characters); on update, ``runtimePatches`` change only when the
  TrainJob is suspended before or after, v2.1 ``podTemplateOverrides`` only when it is suspended
  (whether the JobSet still runs is checked by the admission webhook, which can read it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from trainjob.api import constants as c
from trainjob.api import meta
from trainjob.api.base import to_dict
from trainjob.api.jobset import API_VERSION as JOBSET_API_VERSION
from trainjob.api.trainer import DatasetInitializer, PodSpecOverride, PodSpecPatch, TrainJob
from trainjob.core import conditions as cond
from trainjob.core import jobset as js
from trainjob.errors import FieldError
from trainjob.runtime.info import Endpoints, Info, Obj, upsert_env
from trainjob.runtime.kinds import JOBSET, Kind

NAME = "JobSet"

RUNTIME_REF_PATH = "spec.runtimeRef"
RUNTIME_PATCHES_PATH = "spec.runtimePatches"
POD_SPEC_OVERRIDES_PATH = "spec.podSpecOverrides"
POD_TEMPLATE_OVERRIDES_PATH = "spec.podTemplateOverrides"

# JobSet's webhook's messages (kubernetes-sigs/jobset pkg/webhooks/jobset_webhook.go).
JOB_NAME_TOO_LONG = (
    "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
)
POD_NAME_TOO_LONG = (
    "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
)

# What a patch or a legacy override sets on one job's pods (containers and init containers).
PodSpecLike = PodSpecPatch | PodSpecOverride


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


def owned_meta(trainjob: TrainJob, name: str | None = None) -> Obj:
    """:func:`object_meta` with the TrainJob as controlling owner: metadata of what plugins build."""
    meta = object_meta(trainjob, name)
    meta["ownerReferences"] = [owner_reference(trainjob)]
    return meta


class JobSet:
    name = NAME

    def kinds(self) -> tuple[Kind, ...]:
        """The kinds it plans (the JobSet it builds) and how each executor treats them."""
        return (JOBSET,)

    def status(
        self, trainjob: Obj, owned: Mapping[tuple[str, str], Obj], conditions: list[Obj]
    ) -> list[Obj] | None:
        """Upstream's JobSet ``Status``: a JobSet ``Completed=True`` becomes TrainJob
        ``Complete``, ``Failed=True`` becomes ``Failed`` (same status, reason, message and time);
        ``jobsStatus`` is the JobSet's ``replicatedJobsStatus``. None while the TrainJob has no
        JobSet of its own."""
        jobset = owned.get(JOBSET.key)
        if jobset is None or not owned_by(jobset, trainjob):
            return None
        return apply_jobset_status(conditions, jobset)

    def cleanup(self, trainjob: Obj) -> list[tuple[Kind, str]]:
        """The JobSet: deleting it stops every pod (past ``activeDeadlineSeconds``)."""
        return [(JOBSET, str((trainjob.get("metadata") or {}).get("name", "")))]

    # -- pod network ---------------------------------------------------------------------------
    def pre_build(self, info: Info, trainjob: TrainJob) -> None:
        name = trainjob.metadata.name or ""
        network = info.jobset_spec.get("network") or {}
        subdomain = network.get("subdomain") or name
        for ps in info.pod_sets:
            ps.endpoints = Endpoints(f"{name}-{ps.name}-0-", subdomain, ps.count)
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
        ref = new.spec.runtime_ref  # printed as Go prints the struct: name, apiGroup, kind
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
        known = info.runtime_containers
        if known is None:
            known = {job: set(ctrs) for job, ctrs in containers.items()}
        errors.extend(_validate_overrides(new, known))
        errors.extend(_validate_patches(new, known))
        errors.extend(_validate_patch_mutation(old, new))
        errors.extend(_validate_generated_names(info, new))
        return errors


def _validate_generated_names(info: Info, trainjob: TrainJob) -> list[FieldError]:
    """The names JobSet gives its Jobs (``<trainjob>-<job>-<index>``) and their pods (``...-<pod
    index>-<5 random characters>``) must be DNS-1035 labels: JobSet's webhook refuses the JobSet
    otherwise (its messages), which upstream leaves to every reconcile; here the TrainJob is
    refused before anything is made or run. A trainer job's pod index is counted from
    ``numNodes`` when set (the most pods any ML policy gives it)."""
    name = trainjob.metadata.name
    if not name or meta.dns1035_label(name):
        return []  # generateName (named by the apiserver before admission), or already refused
    errors: list[FieldError] = []
    trainer = trainjob.spec.trainer
    for ps in info.pod_sets:
        if meta.dns1035_label(ps.name):
            errors.append(
                FieldError.invalid(
                    RUNTIME_REF_PATH,
                    trainjob.spec.runtime_ref,
                    f'must have replicatedJob names that are DNS-1035 labels: "{ps.name}": '
                    + "; ".join(meta.dns1035_label(ps.name)),
                )
            )
            continue
        replicas = 1 if ps.ancestor in c.ANCESTORS else ps.rjob.get("replicas", 1)
        count = ps.count
        if ps.ancestor == c.ANCESTOR_TRAINER and trainer is not None and trainer.num_nodes:
            count = max(count, trainer.num_nodes)
        job = f"{name}-{ps.name}-{max(int(replicas) - 1, 0)}"
        pod = f"{job}-{max(count - 1, 0)}-xxxxx"  # and 5 random characters
        for what, generated, message in (
            ("job", job, JOB_NAME_TOO_LONG),
            ("pod", pod, POD_NAME_TOO_LONG),
        ):
            if len(generated) > meta.MAX_LABEL:
                errors.append(
                    FieldError.invalid(
                        "metadata.name",
                        name,
                        f'{message} (replicatedJob "{ps.name}": {what} "{generated}", '
                        f"{len(generated)} characters): shorten the TrainJob's name",
                    )
                )
                break
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


def _validate_patches(new: TrainJob, names: dict[str, set[str]]) -> list[FieldError]:
    """v2.2+ ``runtimePatches`` target jobs and containers of the runtime template."""
    patches = new.spec.runtime_patches or []
    targets: list[tuple[str, PodSpecLike | None]] = []
    for patch in patches:
        tmpl = patch.training_runtime_spec.template if patch.training_runtime_spec else None
        for rjob in (tmpl.spec.replicated_jobs or []) if tmpl and tmpl.spec else []:
            pod = rjob.template.spec.template if rjob.template and rjob.template.spec else None
            targets.append((rjob.name, pod.spec if pod else None))
    value: list[object] = list(patches)
    return _validate_targets(RUNTIME_PATCHES_PATH, value, targets, names, "replicated job")


def _validate_overrides(new: TrainJob, names: dict[str, set[str]]) -> list[FieldError]:
    """v2.0 ``podSpecOverrides`` and v2.1 ``podTemplateOverrides``, with those versions' messages."""
    errors: list[FieldError] = []
    spec_overrides = new.spec.pod_spec_overrides or []
    targets: list[tuple[str, PodSpecLike | None]] = [
        (t.name, o) for o in spec_overrides for t in o.target_jobs
    ]
    if targets:
        value: list[object] = list(spec_overrides)
        errors.extend(
            _validate_targets(POD_SPEC_OVERRIDES_PATH, value, targets, names, "targetJob")
        )
    tmpl_overrides = new.spec.pod_template_overrides or []
    targets = [(t.name, o.spec) for o in tmpl_overrides for t in o.target_jobs]
    if targets:
        value = list(tmpl_overrides)
        errors.extend(
            _validate_targets(POD_TEMPLATE_OVERRIDES_PATH, value, targets, names, "targetJob")
        )
    return errors


def _validate_targets(
    path: str,
    value: Sequence[object],
    targets: Sequence[tuple[str, PodSpecLike | None]],
    names: dict[str, set[str]],
    job_noun: str,
) -> list[FieldError]:
    """Each (job, pod spec patch) names an existing job and existing containers, and sets no env
    of the containers the TrainJob's own fields own."""
    errors: list[FieldError] = []
    reserved = (c.CONTAINER_DATASET_INITIALIZER, c.CONTAINER_MODEL_INITIALIZER, c.CONTAINER_NODE)
    for job_name, pod_spec in targets:
        job = names.get(job_name)
        if job is None:
            errors.append(
                FieldError.invalid(
                    path,
                    value,
                    f"must not have {job_noun} that doesn't exist in the runtime job template",
                )
            )
            continue
        if pod_spec is None:
            continue
        for ctr in pod_spec.init_containers or ():
            if ctr.name not in job:
                errors.append(
                    FieldError.invalid(
                        path,
                        value,
                        f"must not have initContainer that doesn't exist in the runtime job {job_name}",
                    )
                )
        for ctr in pod_spec.containers or ():
            if ctr.name not in job:
                errors.append(
                    FieldError.invalid(
                        path,
                        value,
                        f"must not have container that doesn't exist in the runtime job {job_name}",
                    )
                )
            elif ctr.env and ctr.name in reserved:
                errors.append(
                    FieldError.invalid(
                        path,
                        value,
                        "must not have envs for the dataset-initializer, model-initializer, "
                        "node containers",
                    )
                )
    return errors


def patches_without_time(tj: TrainJob) -> list[Obj]:
    """``spec.runtimePatches`` without their ``time`` stamps: what an update may not change."""
    out = []
    for p in tj.spec.runtime_patches or []:
        d = to_dict(p)
        d.pop("time", None)
        out.append(d)
    return out


def _validate_patch_mutation(old: TrainJob | None, new: TrainJob) -> list[FieldError]:
    if old is None:
        return []
    errors: list[FieldError] = []
    if (
        patches_without_time(old) != patches_without_time(new)
        and not old.spec.suspend
        and not new.spec.suspend
    ):
        errors.append(
            FieldError.forbidden(
                RUNTIME_PATCHES_PATH,
                "RuntimePatches can only be modified when the TrainJob is suspended before or after "
                "the update",
            )
        )
    # v2.1 ruled on the new object alone: overrides change only while it is suspended.
    old_overrides = [to_dict(o) for o in old.spec.pod_template_overrides or []]
    new_overrides = [to_dict(o) for o in new.spec.pod_template_overrides or []]
    if old_overrides != new_overrides and not new.spec.suspend:
        errors.append(
            FieldError.forbidden(
                POD_TEMPLATE_OVERRIDES_PATH,
                "PodTemplateOverrides can only be modified when the TrainJob is suspended",
            )
        )
    return errors


JOB_STATUS_FIELDS = ("ready", "succeeded", "failed", "active", "suspended")


def jobs_status(jobset: Obj) -> list[Obj]:
    """``status.jobsStatus`` of the TrainJob: one entry per replicated job, counts as integers."""
    out: list[Obj] = []
    for rj in (jobset.get("status") or {}).get("replicatedJobsStatus") or ():
        entry: Obj = {"name": rj.get("name", "")}
        for f in JOB_STATUS_FIELDS:
            entry[f] = int(rj.get(f) or 0)
        out.append(entry)
    return out


def apply_jobset_status(conditions: list[Obj], jobset: Obj) -> list[Obj]:
    """Copy the JobSet's terminal conditions into ``conditions``; return the new jobsStatus."""
    js_conditions = (jobset.get("status") or {}).get("conditions") or []
    for js_type, tj_type in (
        (js.CONDITION_COMPLETED, c.CONDITION_COMPLETE),
        (js.CONDITION_FAILED, c.CONDITION_FAILED),
    ):
        js_cond = cond.find(js_conditions, js_type)
        if js_cond is None or js_cond.get("status") != cond.TRUE:
            continue
        cond.set_condition(
            conditions,
            tj_type,
            cond.TRUE,
            str(js_cond.get("reason") or ""),
            str(js_cond.get("message") or ""),
            last_transition_time=js_cond.get("lastTransitionTime"),
        )
    return jobs_status(jobset)


def owned_by(obj: Obj, owner: Obj) -> bool:
    """Whether ``owner`` (by uid) is ``obj``'s controller."""
    uid = (owner.get("metadata") or {}).get("uid")
    return any(
        ref.get("controller") and ref.get("uid") == uid
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or ()
    )
