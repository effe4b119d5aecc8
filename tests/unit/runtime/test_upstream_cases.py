"""Upstream's own cases for the compiler core, ported as data: the JobSet (and PodGroup) each
TrainJob + runtime must compile to.

Sources (kubeflow/trainer): ``pkg/runtime/core/trainingruntime_test.go``
(``TestTrainingRuntimeNewObjects``), ``pkg/runtime/framework/plugins/jobset/jobset_test.go``
(``TestJobSet``, ``TestValidate``), ``plugins/plainml/plainml_test.go`` and the builders of
``pkg/util/testing/wrapper.go``, mirrored here as :func:`upstream_jobs` (the default replicated
jobs of ``MakeTrainingRuntimeWrapper``/``MakeJobSetWrapper``) and small ``want_*`` editors.

Upstream compares with ``cmpopts.SortSlices`` over env, volumes, volume mounts and tolerations;
these cases pin the order upstream's code really produces instead:

* env: the runtime's envs keep their places (values replaced by name), new ones are appended
  (``apply.UpsertEnvVars`` over the PodSet env, which starts as the runtime's list);
* lists merged by a strategic merge patch (``podTemplateOverrides``, ``runtimePatches``): what the
  patch adds goes before the runtime's items the patch does not name (apimachinery's
  ``normalizeElementOrder``), see :mod:`trainjob.runtime.smp`.

The v2.1 override cases run on trainjob through the translation of ``podTemplateOverrides`` into
``runtimePatches`` (:mod:`trainjob.api.legacy`); the expectations are upstream's.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from trainjob.api import constants as c
from trainjob.api.load import parse
from trainjob.api.trainer import TrainingRuntime, TrainJob
from trainjob.api.validation import validate_runtime
from trainjob.errors import FieldError
from trainjob.runtime import compile, validate
from trainjob.runtime.compiler import build_info
from trainjob.runtime.plugins.jobset import JobSet

Obj = dict[str, Any]

RES = {"cpu": "1"}
ANTARCTICA = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {
                            "key": "topology.kubernetes.io/zone",
                            "operator": "In",
                            "values": ["antarctica-east1", "antarctica-west1"],
                        }
                    ]
                }
            ]
        }
    }
}
P5 = {"node.kubernetes.io/instance-type": "p5.48xlarge"}
KUEUE_GATE = {"name": "kueue.x-k8s.io/admission"}
GPU_TOLERATION = {"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
INITIALIZER_VOLUME = {"name": "initializer", "persistentVolumeClaim": {"claimName": "initializer"}}
PET_NODE_RANK = {"fieldRef": {"fieldPath": c.JOB_COMPLETION_INDEX_FIELD}}


# -- upstream's builders (pkg/util/testing/wrapper.go) as dict editors ---------------------------


def upstream_jobs() -> list[Obj]:
    """The three replicated jobs every upstream runtime and JobSet wrapper starts from."""

    def job(name: str, ancestor: str, container: str, mounts: list[str]) -> Obj:
        return {
            "name": name,
            "template": {
                "metadata": {"labels": {c.LABEL_ANCESTOR: ancestor}},
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": container,
                                    "volumeMounts": [
                                        {"name": "initializer", "mountPath": p} for p in mounts
                                    ],
                                }
                            ],
                            "volumes": [copy.deepcopy(INITIALIZER_VOLUME)],
                        }
                    }
                },
            },
        }

    return [
        job(
            c.JOB_DATASET_INITIALIZER,
            c.ANCESTOR_DATASET_INITIALIZER,
            c.CONTAINER_DATASET_INITIALIZER,
            [c.DATASET_MOUNT_PATH],
        ),
        job(
            c.JOB_MODEL_INITIALIZER,
            c.ANCESTOR_MODEL_INITIALIZER,
            c.CONTAINER_MODEL_INITIALIZER,
            [c.MODEL_MOUNT_PATH],
        ),
        job(
            c.JOB_NODE,
            c.ANCESTOR_TRAINER,
            c.CONTAINER_NODE,
            [c.DATASET_MOUNT_PATH, c.MODEL_MOUNT_PATH],
        ),
    ]


def _job(jobs: list[Obj], name: str) -> Obj:
    for rj in jobs:
        if rj["name"] == name:
            return rj
    raise AssertionError(f"no job {name}")


def _pod(jobs: list[Obj], name: str) -> Obj:
    return _job(jobs, name)["template"]["spec"]["template"]  # type: ignore[no-any-return]


def _ctr(jobs: list[Obj], job: str, name: str, init: bool = False) -> Obj:
    for ctr in _pod(jobs, job)["spec"].get("initContainers" if init else "containers", []):
        if ctr["name"] == name:
            return ctr  # type: ignore[no-any-return]
    raise AssertionError(f"no container {name} in {job}")


def with_container(
    jobs: list[Obj],
    job: str,
    name: str,
    image: str,
    command: list[str],
    args: list[str],
    requests: Obj,
) -> list[Obj]:
    """``Container(...)``: set image/command/args/requests, or append a new container."""
    containers = _pod(jobs, job)["spec"]["containers"]
    for ctr in containers:
        if ctr["name"] == name:
            ctr.update(image=image, command=command, args=args)
            ctr.setdefault("resources", {})["requests"] = dict(requests)
            return jobs
    containers.append(
        {
            "name": name,
            "image": image,
            "command": command,
            "args": args,
            "resources": {"requests": dict(requests)},
        }
    )
    return jobs


def with_env(jobs: list[Obj], job: str, name: str, *env: Obj, init: bool = False) -> list[Obj]:
    _ctr(jobs, job, name, init).setdefault("env", []).extend(env)
    return jobs


def with_init_container(jobs: list[Obj], job: str, name: str, image: str, *env: Obj) -> list[Obj]:
    ctr: Obj = {"name": name, "image": image}
    if env:
        ctr["env"] = list(env)
    _pod(jobs, job)["spec"]["initContainers"] = [ctr]
    return jobs


def e(name: str, value: Any) -> Obj:
    return (
        {"name": name, "valueFrom": value}
        if isinstance(value, dict)
        else {"name": name, "value": value}
    )


def upstream_runtime(
    jobs: list[Obj],
    *,
    ml_policy: Obj | None = None,
    pod_group_policy: Obj | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> TrainingRuntime:
    """``MakeTrainingRuntimeWrapper(default, "test-runtime")``; ``labels``/``annotations`` go on
    the runtime object itself (upstream's ``Label``/``Annotation``), not on its template."""
    spec: Obj = {"template": {"spec": {"replicatedJobs": jobs}}}
    if ml_policy is not None:
        spec["mlPolicy"] = ml_policy
    if pod_group_policy is not None:
        spec["podGroupPolicy"] = pod_group_policy
    meta: Obj = {"name": "test-runtime", "namespace": "default"}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    rt = parse(
        {
            "apiVersion": c.API_VERSION,
            "kind": c.TRAINING_RUNTIME_KIND,
            "metadata": meta,
            "spec": spec,
        }
    )
    assert isinstance(rt, TrainingRuntime)
    return rt


def upstream_trainjob(name: str = "test-job", **spec: Any) -> TrainJob:
    """``MakeTrainJobWrapper(default, name).UID("uid").RuntimeRef(TrainingRuntime, test-runtime)``."""
    body: Obj = {"runtimeRef": {"name": "test-runtime", "kind": c.TRAINING_RUNTIME_KIND}, **spec}
    tj = parse(
        {
            "apiVersion": c.API_VERSION,
            "kind": c.TRAINJOB_KIND,
            "metadata": {"name": name, "namespace": "default", "uid": "uid"},
            "spec": body,
        }
    )
    assert isinstance(tj, TrainJob)
    return tj


def trainer_container(image: str, command: list[str], args: list[str], requests: Obj) -> Obj:
    """``MakeTrainJobTrainerWrapper().Container(image, command, args, res)``."""
    return {
        "image": image,
        "command": command,
        "args": args,
        "resourcesPerNode": {"requests": dict(requests)},
    }


def want_jobset(
    jobs: list[Obj],
    *,
    replicas: tuple[str, ...] = (c.JOB_DATASET_INITIALIZER, c.JOB_MODEL_INITIALIZER, c.JOB_NODE),
    counts: dict[str, int] | None = None,
    suspend: bool = False,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    pod_labels: dict[str, str] | None = None,
    name: str = "test-job",
) -> Obj:
    """``MakeJobSetWrapper(default, name).ControllerReference(TrainJob, name, "uid")...``:
    ``counts`` are each job's parallelism and completions (1 where not named)."""
    for rj in jobs:
        n = (counts or {}).get(rj["name"], 1)
        rj["template"]["spec"]["parallelism"] = n
        rj["template"]["spec"]["completions"] = n
        if rj["name"] in replicas:
            rj["replicas"] = 1
        if pod_labels:
            rj["template"]["spec"]["template"].setdefault("metadata", {}).setdefault(
                "labels", {}
            ).update(pod_labels)
    meta: Obj = {"name": name, "namespace": "default"}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    meta["ownerReferences"] = [
        {
            "apiVersion": c.API_VERSION,
            "kind": c.TRAINJOB_KIND,
            "name": name,
            "uid": "uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": meta,
        "spec": {"replicatedJobs": jobs, "suspend": suspend},
    }


def trainer_runtime_containers(jobs: list[Obj]) -> list[Obj]:
    """All three jobs' containers as ``Container(job, job, "test:runtime", [runtime], [runtime], res)``."""
    for job, ctr in (
        (c.JOB_DATASET_INITIALIZER, c.CONTAINER_DATASET_INITIALIZER),
        (c.JOB_MODEL_INITIALIZER, c.CONTAINER_MODEL_INITIALIZER),
        (c.JOB_NODE, c.CONTAINER_NODE),
    ):
        with_container(jobs, job, ctr, "test:runtime", ["runtime"], ["runtime"], RES)
    return jobs


def node_trainjob_container(jobs: list[Obj]) -> list[Obj]:
    return with_container(
        jobs, c.JOB_NODE, c.CONTAINER_NODE, "test:trainjob", ["trainjob"], ["trainjob"], RES
    )


def _set_pod(jobs: list[Obj], job: str, **fields: Any) -> list[Obj]:
    _pod(jobs, job)["spec"].update(copy.deepcopy(fields))
    return jobs


# -- TestTrainingRuntimeNewObjects ----------------------------------------------------------------


def case_plainml_podgroup() -> tuple[TrainingRuntime, TrainJob, Obj]:
    rt = upstream_runtime(
        trainer_runtime_containers(upstream_jobs()),
        ml_policy={"numNodes": 100},
        pod_group_policy={"coscheduling": {"scheduleTimeoutSeconds": 120}},
        labels={"conflictLabel": "overridden"},
        annotations={"conflictAnnotation": "overridden"},
    )
    tj = upstream_trainjob(
        suspend=True,
        labels={"conflictLabel": "override"},
        annotations={"conflictAnnotation": "override"},
        trainer={"numNodes": 30},
    )
    want = want_jobset(
        trainer_runtime_containers(upstream_jobs()),
        counts={c.JOB_NODE: 30},
        suspend=True,
        labels={"conflictLabel": "override"},
        annotations={"conflictAnnotation": "override"},
        pod_labels={c.COSCHEDULING_POD_GROUP_LABEL: "test-job"},
    )
    return rt, tj, want


def case_plainml_container_from_trainjob() -> tuple[TrainingRuntime, TrainJob, Obj]:
    jobs = with_container(
        upstream_jobs(), c.JOB_NODE, c.CONTAINER_NODE, "test:runtime", ["runtime"], ["runtime"], RES
    )
    with_env(
        jobs, c.JOB_NODE, c.CONTAINER_NODE, e("TRAIN_JOB", "original"), e("RUNTIME", "test:runtime")
    )
    rt = upstream_runtime(jobs, ml_policy={"numNodes": 100})
    trainer = trainer_container("test:trainjob", ["trainjob"], ["trainjob"], RES)
    trainer["env"] = [e("TRAIN_JOB", "override"), e("TRAIN_JOB_CUSTOM", "test:trainjob")]
    tj = upstream_trainjob(trainer=trainer)
    want_jobs = node_trainjob_container(upstream_jobs())
    with_env(
        want_jobs,
        c.JOB_NODE,
        c.CONTAINER_NODE,
        e("TRAIN_JOB", "override"),
        e("RUNTIME", "test:runtime"),
        e("TRAIN_JOB_CUSTOM", "test:trainjob"),
    )
    return rt, tj, want_jobset(want_jobs, counts={c.JOB_NODE: 100})


def _override_runtime(**init_env: list[Obj]) -> list[Obj]:
    jobs = upstream_jobs()
    with_init_container(
        jobs,
        c.JOB_DATASET_INITIALIZER,
        "override-init-container",
        "test:runtime",
        *init_env.get("dataset", []),
    )
    with_init_container(
        jobs, c.JOB_NODE, "override-init-container", "test:runtime", *init_env.get("node", [])
    )
    with_container(
        jobs, c.JOB_NODE, c.CONTAINER_NODE, "test:runtime", ["runtime"], ["runtime"], RES
    )
    with_container(
        jobs, c.JOB_NODE, "override-container", "test:runtime", ["runtime"], ["runtime"], RES
    )
    return jobs


def case_pod_template_overrides() -> tuple[TrainingRuntime, TrainJob, Obj]:
    jobs = _override_runtime(
        dataset=[e("INIT_ENV", "original_init"), e("DATASET_PATH", "runtime")],
        node=[e("INIT_ENV", "original_init")],
    )
    with_env(jobs, c.JOB_NODE, c.CONTAINER_NODE, e("TRAIN_JOB", "original"))
    with_env(jobs, c.JOB_NODE, "override-container", e("CONTAINER_ENV", "original_container"))
    rt = upstream_runtime(jobs, ml_policy={"numNodes": 100})
    secret_vol = {"name": "initializer_secret", "secret": {"secretName": "initializer_secret_name"}}
    claim_vol = {
        "name": "initializer_claim",
        "persistentVolumeClaim": {"claimName": "initializer_claim_name"},
    }
    node_secret = {"name": "node_secret", "secret": {"secretName": "node_secret_name"}}
    node_claim = {"name": "node_claim", "persistentVolumeClaim": {"claimName": "node_claim_name"}}
    init_mounts = [
        {"name": "initializer_secret", "mountPath": "initializer_secret_mount_path"},
        {"name": "initializer_claim", "mountPath": "initializer_claim_mount_path"},
    ]
    node_mounts = [
        {"name": "node_secret", "mountPath": "node_secret_mount_path"},
        {"name": "node_claim", "mountPath": "node_claim_mount_path"},
    ]
    tj = upstream_trainjob(
        trainer=trainer_container("test:trainjob", ["trainjob"], ["trainjob"], RES),
        podTemplateOverrides=[
            {
                "manager": "manager-1",
                "targetJobs": [{"name": c.JOB_DATASET_INITIALIZER}],
                "spec": {
                    "initContainers": [
                        {
                            "name": "override-init-container",
                            "env": [
                                e("INIT_ENV", "override_init"),
                                e("NEW_VALUE", "from_overrides"),
                            ],
                        }
                    ],
                    "containers": [
                        {"name": c.CONTAINER_DATASET_INITIALIZER, "volumeMounts": init_mounts}
                    ],
                    "affinity": ANTARCTICA,
                    "nodeSelector": P5,
                    "schedulingGates": [KUEUE_GATE],
                    "tolerations": [GPU_TOLERATION],
                    "volumes": [secret_vol, claim_vol],
                },
            },
            {
                "manager": "manager-2",
                "targetJobs": [{"name": c.JOB_NODE}],
                "spec": {
                    "serviceAccountName": "override-sa",
                    "initContainers": [
                        {"name": "override-init-container", "env": [e("INIT_ENV", "override_init")]}
                    ],
                    "containers": [
                        {"name": c.CONTAINER_NODE, "volumeMounts": node_mounts},
                        {
                            "name": "override-container",
                            "env": [e("CONTAINER_ENV", "override_container")],
                        },
                    ],
                    "affinity": ANTARCTICA,
                    "imagePullSecrets": [{"name": "registry-credential"}],
                    "nodeSelector": P5,
                    "schedulingGates": [KUEUE_GATE],
                    "tolerations": [GPU_TOLERATION],
                    "volumes": [node_secret, node_claim],
                },
            },
        ],
    )
    want_jobs = _override_runtime(
        # A strategic merge patch puts what it adds before the items it does not name.
        dataset=[
            e("INIT_ENV", "override_init"),
            e("NEW_VALUE", "from_overrides"),
            e("DATASET_PATH", "runtime"),
        ],
        node=[e("INIT_ENV", "override_init")],
    )
    node_trainjob_container(want_jobs)
    with_env(want_jobs, c.JOB_NODE, c.CONTAINER_NODE, e("TRAIN_JOB", "original"))
    with_env(want_jobs, c.JOB_NODE, "override-container", e("CONTAINER_ENV", "override_container"))
    ds_ctr = _ctr(want_jobs, c.JOB_DATASET_INITIALIZER, c.CONTAINER_DATASET_INITIALIZER)
    ds_ctr["volumeMounts"] = init_mounts + ds_ctr["volumeMounts"]
    node_ctr = _ctr(want_jobs, c.JOB_NODE, c.CONTAINER_NODE)
    node_ctr["volumeMounts"] = node_mounts + node_ctr["volumeMounts"]
    _set_pod(
        want_jobs,
        c.JOB_DATASET_INITIALIZER,
        affinity=ANTARCTICA,
        nodeSelector=P5,
        schedulingGates=[KUEUE_GATE],
        tolerations=[GPU_TOLERATION],
        volumes=[secret_vol, claim_vol, INITIALIZER_VOLUME],
    )
    _set_pod(
        want_jobs,
        c.JOB_NODE,
        serviceAccountName="override-sa",
        affinity=ANTARCTICA,
        imagePullSecrets=[{"name": "registry-credential"}],
        nodeSelector=P5,
        schedulingGates=[KUEUE_GATE],
        tolerations=[GPU_TOLERATION],
        volumes=[node_secret, node_claim, INITIALIZER_VOLUME],
    )
    return rt, tj, want_jobset(want_jobs, counts={c.JOB_NODE: 100})


def case_nil_affinity_overrides() -> tuple[TrainingRuntime, TrainJob, Obj]:
    rt = upstream_runtime(_override_runtime(), ml_policy={"numNodes": 100})
    tj = upstream_trainjob(
        trainer=trainer_container("test:trainjob", ["trainjob"], ["trainjob"], RES),
        podTemplateOverrides=[
            {
                "manager": "manager-1",
                "targetJobs": [{"name": c.JOB_DATASET_INITIALIZER}],
                "spec": {},
            },
            {"manager": "manager-2", "targetJobs": [{"name": c.JOB_NODE}], "spec": {}},
        ],
    )
    want_jobs = node_trainjob_container(_override_runtime())
    return rt, tj, want_jobset(want_jobs, counts={c.JOB_NODE: 100})


def case_security_context_overrides() -> tuple[TrainingRuntime, TrainJob, Obj]:
    def jobs() -> list[Obj]:
        out = with_container(
            upstream_jobs(),
            c.JOB_NODE,
            c.CONTAINER_NODE,
            "test:runtime",
            ["runtime"],
            ["runtime"],
            RES,
        )
        return with_container(
            out, c.JOB_NODE, "sidecar", "test:runtime", ["runtime"], ["runtime"], RES
        )

    pod_sc = {"fsGroup": 2000, "runAsUser": 1000, "runAsGroup": 3000, "runAsNonRoot": True}
    ctr_sc = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True}
    rt = upstream_runtime(jobs(), ml_policy={"numNodes": 100})
    tj = upstream_trainjob(
        trainer=trainer_container("test:trainjob", ["trainjob"], ["trainjob"], RES),
        podTemplateOverrides=[
            {
                "targetJobs": [{"name": c.JOB_NODE}],
                "spec": {
                    "securityContext": pod_sc,
                    "containers": [{"name": "sidecar", "securityContext": ctr_sc}],
                },
            }
        ],
    )
    want_jobs = node_trainjob_container(jobs())
    _set_pod(want_jobs, c.JOB_NODE, securityContext=pod_sc)
    _ctr(want_jobs, c.JOB_NODE, "sidecar")["securityContext"] = dict(ctr_sc)
    return rt, tj, want_jobset(want_jobs, counts={c.JOB_NODE: 100})


def case_labels_annotations_overrides() -> tuple[TrainingRuntime, TrainJob, Obj]:
    rt = upstream_runtime(_override_runtime(), ml_policy={"numNodes": 100})
    tj = upstream_trainjob(
        trainer=trainer_container("test:trainjob", ["trainjob"], ["trainjob"], RES),
        podTemplateOverrides=[
            {
                "manager": "manager-1",
                "targetJobs": [{"name": c.JOB_DATASET_INITIALIZER}],
                "metadata": {"labels": {"k1": "v1"}, "annotations": {"a1": "v1"}},
            },
            {
                "manager": "manager-2",
                "targetJobs": [{"name": c.JOB_NODE}],
                "metadata": {"labels": {"k2": "v2"}, "annotations": {"a2": "v2"}},
            },
        ],
    )
    want_jobs = node_trainjob_container(_override_runtime())
    _pod(want_jobs, c.JOB_DATASET_INITIALIZER)["metadata"] = {
        "labels": {"k1": "v1"},
        "annotations": {"a1": "v1"},
    }
    _pod(want_jobs, c.JOB_NODE)["metadata"] = {"labels": {"k2": "v2"}, "annotations": {"a2": "v2"}}
    return rt, tj, want_jobset(want_jobs, counts={c.JOB_NODE: 100})


def _node_only_runtime() -> list[Obj]:
    return with_container(
        upstream_jobs(), c.JOB_NODE, c.CONTAINER_NODE, "test:runtime", ["runtime"], ["runtime"], RES
    )


def case_duplicate_target_jobs() -> tuple[TrainingRuntime, TrainJob, Obj]:
    rt = upstream_runtime(_node_only_runtime())  # no mlPolicy: the node job keeps parallelism 1
    tj = upstream_trainjob(
        podTemplateOverrides=[
            {
                "manager": "manager-1",
                "targetJobs": [{"name": c.JOB_NODE}],
                "spec": {"nodeSelector": P5},
            },
            {
                "manager": "manager-1",
                "targetJobs": [{"name": c.JOB_NODE}],
                "spec": {"serviceAccountName": "test-sa"},
            },
        ]
    )
    want_jobs = _set_pod(
        _node_only_runtime(), c.JOB_NODE, nodeSelector=P5, serviceAccountName="test-sa"
    )
    return rt, tj, want_jobset(want_jobs)


def case_same_job_different_values() -> tuple[TrainingRuntime, TrainJob, Obj]:
    rt = upstream_runtime(_node_only_runtime())
    tj = upstream_trainjob(
        podTemplateOverrides=[
            {
                "manager": "manager-1",
                "targetJobs": [{"name": c.JOB_NODE}],
                "spec": {"nodeSelector": P5},
            },
            {
                "manager": "manager-1",
                "targetJobs": [{"name": c.JOB_NODE}],
                "spec": {"nodeSelector": {"node.kubernetes.io/instance-type": "p5en.48xlarge"}},
            },
        ]
    )
    want_jobs = _set_pod(
        _node_only_runtime(),
        c.JOB_NODE,
        nodeSelector={"node.kubernetes.io/instance-type": "p5en.48xlarge"},
    )
    return rt, tj, want_jobset(want_jobs)


def _initializer_runtime_jobs() -> list[Obj]:
    jobs = upstream_jobs()
    args = ("test:runtime", ["runtime"], ["runtime"], RES)
    with_container(jobs, c.JOB_DATASET_INITIALIZER, c.CONTAINER_DATASET_INITIALIZER, *args)
    # Upstream's case names the dataset container in the model job too: it is appended there.
    with_container(jobs, c.JOB_MODEL_INITIALIZER, c.CONTAINER_DATASET_INITIALIZER, *args)
    with_container(jobs, c.JOB_NODE, c.CONTAINER_NODE, *args)
    return jobs


def case_initializers() -> tuple[TrainingRuntime, TrainJob, Obj]:
    rt = upstream_runtime(_initializer_runtime_jobs(), ml_policy={"numNodes": 100})
    tj = upstream_trainjob(
        initializer={
            "dataset": {
                "storageUri": "hf://trainjob-dataset",
                "env": [e("TRAIN_JOB", "test:trainjob:dataset")],
                "secretRef": {"name": "trainjob-secret-dataset"},
            },
            "model": {
                "storageUri": "hf://trainjob-model",
                "env": [e("TRAIN_JOB", "test:trainjob:model")],
                "secretRef": {"name": "trainjob-secret-model"},
            },
        },
        trainer={},
    )
    want_jobs = _initializer_runtime_jobs()
    for job, ctr, part in (
        (c.JOB_DATASET_INITIALIZER, c.CONTAINER_DATASET_INITIALIZER, "dataset"),
        (c.JOB_MODEL_INITIALIZER, c.CONTAINER_MODEL_INITIALIZER, "model"),
    ):
        with_env(
            want_jobs,
            job,
            ctr,
            e(c.ENV_STORAGE_URI, f"hf://trainjob-{part}"),
            e("TRAIN_JOB", f"test:trainjob:{part}"),
        )
        _ctr(want_jobs, job, ctr)["envFrom"] = [{"secretRef": {"name": f"trainjob-secret-{part}"}}]
    return rt, tj, want_jobset(want_jobs, counts={c.JOB_NODE: 100})


def _torch_jobs() -> list[Obj]:
    jobs = with_container(
        upstream_jobs(), c.JOB_NODE, c.CONTAINER_NODE, "test:runtime", ["runtime"], ["runtime"], RES
    )
    _job(jobs, c.JOB_NODE)["dependsOn"] = [
        {"name": c.JOB_DATASET_INITIALIZER, "status": "Complete"},
        {"name": c.JOB_MODEL_INITIALIZER, "status": "Complete"},
    ]
    return jobs


def _pet(nnodes: str, nproc: str) -> list[Obj]:
    return [
        e(c.TORCH_ENV_NUM_NODES, nnodes),
        e(c.TORCH_ENV_NUM_PROC_PER_NODE, nproc),
        e(c.TORCH_ENV_NODE_RANK, PET_NODE_RANK),
        e(c.TORCH_ENV_MASTER_ADDR, "test-job-node-0-0.test-job"),
        e(c.TORCH_ENV_MASTER_PORT, "29500"),
    ]


def case_torch_from_trainjob() -> tuple[TrainingRuntime, TrainJob, Obj]:
    rt = upstream_runtime(_torch_jobs(), ml_policy={"numNodes": 100, "torch": {}})
    tj = upstream_trainjob(trainer={"numNodes": 30, "numProcPerNode": 3})
    want_jobs = _torch_jobs()
    node = _ctr(want_jobs, c.JOB_NODE, c.CONTAINER_NODE)
    node["env"] = _pet("30", "3")
    node["ports"] = [{"containerPort": c.CONTAINER_TRAINER_PORT}]
    return rt, tj, want_jobset(want_jobs, counts={c.JOB_NODE: 30})


def case_torch_from_runtime_with_envs() -> tuple[TrainingRuntime, TrainJob, Obj]:
    jobs = with_container(
        upstream_jobs(), c.JOB_NODE, c.CONTAINER_NODE, "test:runtime", ["runtime"], ["runtime"], RES
    )
    with_env(
        jobs, c.JOB_NODE, c.CONTAINER_NODE, e("TRAIN_JOB", "original"), e("RUNTIME", "test:runtime")
    )
    rt = upstream_runtime(jobs, ml_policy={"numNodes": 100, "torch": {}})
    trainer = trainer_container("test:trainjob", ["trainjob"], ["trainjob"], RES)
    trainer["env"] = [e("TRAIN_JOB", "override"), e("TRAIN_JOB_CUSTOM", "test:trainjob")]
    tj = upstream_trainjob(trainer=trainer)
    want_jobs = node_trainjob_container(upstream_jobs())
    node = _ctr(want_jobs, c.JOB_NODE, c.CONTAINER_NODE)
    node["env"] = [
        e("TRAIN_JOB", "override"),
        e("RUNTIME", "test:runtime"),
        e("TRAIN_JOB_CUSTOM", "test:trainjob"),
        *_pet("100", "1"),
    ]
    node["ports"] = [{"containerPort": c.CONTAINER_TRAINER_PORT}]
    return rt, tj, want_jobset(want_jobs, counts={c.JOB_NODE: 100})


NEW_OBJECTS_CASES = [
    pytest.param(
        case_plainml_podgroup,
        id="succeeded to build PodGroup and JobSet with NumNodes from the TrainJob and container "
        "from the Runtime",
    ),
    pytest.param(
        case_plainml_container_from_trainjob,
        id="succeeded to build JobSet with NumNodes from the Runtime and container from the TrainJob",
    ),
    pytest.param(
        case_pod_template_overrides,
        id="succeeded to build JobSet with TrainJob's PodTemplateOverrides",
    ),
    pytest.param(
        case_nil_affinity_overrides,
        id="succeeded to build JobSet with nil affinity overrides from the TrainJob's "
        "PodTemplateOverrides",
    ),
    pytest.param(
        case_security_context_overrides,
        id="succeeded to build JobSet with securityContext overrides from the TrainJob's "
        "PodTemplateOverrides",
    ),
    pytest.param(
        case_labels_annotations_overrides,
        id="succeeded to build JobSet with labels and annotations overrides from the TrainJob's "
        "PodTemplateOverrides",
    ),
    pytest.param(
        case_duplicate_target_jobs,
        id="succeeded to build JobSet with TrainJob's PodTemplateOverrides containing duplicate "
        "TargetJobs",
    ),
    pytest.param(
        case_same_job_different_values,
        id="succeeded to build JobSet with TrainJob's PodTemplateOverrides targeting the same job "
        "with different values",
    ),
    pytest.param(
        case_initializers,
        id="succeeded to build JobSet with dataset and model initializer from the TrainJob",
    ),
    pytest.param(
        case_torch_from_trainjob, id="succeeded to build JobSet with Torch values from the TrainJob"
    ),
    pytest.param(
        case_torch_from_runtime_with_envs,
        id="succeeded to build JobSet with Torch values from the Runtime and envs",
    ),
]


@pytest.mark.parametrize("case", NEW_OBJECTS_CASES)
def test_new_objects_jobset(case: Any) -> None:
    rt, tj, want = case()
    assert compile(tj, rt).jobset == want


def test_new_objects_podgroup_counts_trainer_nodes_and_initializers() -> None:
    """32 members = 30 trainer nodes + 2 initializers; 32 CPUs, one per pod."""
    rt, tj, _ = case_plainml_podgroup()
    podgroup = compile(tj, rt).podgroup
    assert podgroup is not None
    assert podgroup["metadata"]["name"] == "test-job"
    assert podgroup["metadata"]["ownerReferences"][0]["uid"] == "uid"
    assert podgroup["spec"]["minMember"] == 32
    assert podgroup["spec"]["minResources"] == {"cpu": "32"}
    assert podgroup["spec"]["scheduleTimeoutSeconds"] == 120


# -- count rules (newRuntimeInfo, PlainML) --------------------------------------------------------

COUNT_CASES = [
    pytest.param(None, 3, None, 3, id="without an mlPolicy the trainer job keeps its parallelism"),
    pytest.param({}, 3, None, 1, id="an mlPolicy without numNodes gives the trainer job one node"),
    pytest.param({"numNodes": 4}, 3, None, 4, id="mlPolicy numNodes replaces the parallelism"),
    pytest.param({"numNodes": 4}, None, 7, 7, id="trainJob trainer numNodes are respected"),
    pytest.param(None, None, 2, 2, id="trainer numNodes apply without an mlPolicy too"),
    pytest.param(
        {"numNodes": 2, "mpi": {}},
        None,
        None,
        2,
        id="the MPI trainer job (launcher) takes mlPolicy numNodes like any trainer job",
    ),
]


@pytest.mark.parametrize(("ml_policy", "parallelism", "num_nodes", "want"), COUNT_CASES)
def test_trainer_pod_count(
    ml_policy: Obj | None, parallelism: int | None, num_nodes: int | None, want: int
) -> None:
    jobs = _node_only_runtime()[2:]
    if parallelism is not None:
        jobs[0]["template"]["spec"]["parallelism"] = parallelism
    rt = upstream_runtime(jobs, ml_policy=ml_policy)
    tj = upstream_trainjob(trainer={"numNodes": num_nodes} if num_nodes is not None else {})
    job_spec = compile(tj, rt).jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert (job_spec["parallelism"], job_spec["completions"]) == (want, want)


def test_non_trainer_jobs_keep_their_parallelism_and_count_at_least_one() -> None:
    jobs = _node_only_runtime()
    _job(jobs, c.JOB_DATASET_INITIALIZER)["template"]["spec"]["parallelism"] = 0
    _job(jobs, c.JOB_MODEL_INITIALIZER)["template"]["spec"]["parallelism"] = 2
    info = build_info(upstream_trainjob(), upstream_runtime(jobs, ml_policy={"numNodes": 3}))
    assert [ps.count for ps in info.pod_sets] == [1, 2, 3]


RESOURCES_CASES = [
    pytest.param(
        {"numNodes": 1},
        {"requests": {"cpu": "2", "memory": "1Gi"}},
        {"requests": {"cpu": "4"}, "limits": {"nvidia.com/gpu": "1"}},
        {"requests": {"cpu": "4", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}},
        id="resourcesPerNode merges key by key into the trainer's node container",
    ),
    pytest.param(
        None,
        {"requests": {"cpu": "2"}},
        {"requests": {"cpu": "4"}},
        {"requests": {"cpu": "2"}},
        id="without an mlPolicy resourcesPerNode is not applied (upstream newRuntimeInfo)",
    ),
]


@pytest.mark.parametrize(("ml_policy", "runtime_res", "per_node", "want"), RESOURCES_CASES)
def test_resources_per_node(
    ml_policy: Obj | None, runtime_res: Obj, per_node: Obj, want: Obj
) -> None:
    jobs = _node_only_runtime()
    _ctr(jobs, c.JOB_NODE, c.CONTAINER_NODE)["resources"] = runtime_res
    plan = compile(
        upstream_trainjob(trainer={"resourcesPerNode": per_node}),
        upstream_runtime(jobs, ml_policy=ml_policy),
    )
    node = _ctr(plan.jobset["spec"]["replicatedJobs"], c.JOB_NODE, c.CONTAINER_NODE)
    assert node["resources"] == want


# -- TestJobSet (PreBuildSync / pod network) -------------------------------------------------------

ENDPOINT_CASES = [
    pytest.param(
        None,
        {c.JOB_NODE: ["trainJob-node-0-0.trainJob", "trainJob-node-0-1.trainJob"]},
        id="endpoints use the trainJob name as subdomain",
    ),
    pytest.param(
        "kubeflow.org",
        {c.JOB_NODE: ["trainJob-node-0-0.kubeflow.org", "trainJob-node-0-1.kubeflow.org"]},
        id="subDomain in jobSetSpec is used to endpoint",
    ),
]


@pytest.mark.parametrize(("subdomain", "want"), ENDPOINT_CASES)
def test_pod_network_endpoints(subdomain: str | None, want: dict[str, list[str]]) -> None:
    jobs = _node_only_runtime()
    rt_doc = upstream_runtime(jobs, ml_policy={"numNodes": 2}).to_dict()
    if subdomain:
        rt_doc["spec"]["template"]["spec"]["network"] = {"subdomain": subdomain}
    rt = parse(rt_doc)
    assert isinstance(rt, TrainingRuntime)
    # Upstream's case names the TrainJob "trainJob"; names are not validated on this path.
    tj = upstream_trainjob().model_copy(
        update={"metadata": upstream_trainjob().metadata.model_copy(update={"name": "trainJob"})}
    )
    info = build_info(tj, rt)
    JobSet().pre_build(info, tj)
    got = {ps.name: list(ps.endpoints) for ps in info.pod_sets}
    assert got[c.JOB_NODE] == want[c.JOB_NODE]
    assert got[c.JOB_DATASET_INITIALIZER] == [
        "trainJob-dataset-initializer-0-0." + (subdomain or "trainJob")
    ]
    assert (
        _job(info.jobset_spec["replicatedJobs"], c.JOB_NODE)["template"]["spec"]["completions"] == 2
    )


# -- TestValidate (JobSet plugin) ----------------------------------------------------------------


def _patch(job: str, pod_spec: Obj | None = None) -> Obj:
    rj: Obj = {"name": job}
    if pod_spec is not None:
        rj["template"] = {"spec": {"template": {"spec": pod_spec}}}
    return {
        "manager": "test.io/manager",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [rj]}}},
    }


RESERVED_ENVS = "must not have envs for the dataset-initializer, model-initializer, node containers"

VALIDATE_CASES = [
    pytest.param({}, [], id="no initializer job"),
    pytest.param({"initializer": {"model": {}}}, [], id="model initializer job present"),
    pytest.param(
        {"runtimePatches": [_patch("invalid")]},
        [
            (
                "spec.runtimePatches",
                "must not have replicated job that doesn't exist in the runtime job template",
            )
        ],
        id="runtimePatches contain invalid replicated job",
    ),
    pytest.param(
        {"runtimePatches": [_patch(c.JOB_NODE, {"initContainers": [{"name": "invalid"}]})]},
        [
            (
                "spec.runtimePatches",
                "must not have initContainer that doesn't exist in the runtime job node",
            )
        ],
        id="runtimePatches contain invalid initContainer",
    ),
    pytest.param(
        {"runtimePatches": [_patch(c.JOB_NODE, {"containers": [{"name": "invalid"}]})]},
        [
            (
                "spec.runtimePatches",
                "must not have container that doesn't exist in the runtime job node",
            )
        ],
        id="runtimePatches contain invalid container",
    ),
    pytest.param(
        {
            "runtimePatches": [
                _patch(
                    c.JOB_NODE,
                    {"containers": [{"name": "node", "env": [e("ENV_NAME", "OVERRIDE")]}]},
                )
            ]
        },
        [("spec.runtimePatches", RESERVED_ENVS)],
        id="runtimePatches contain envs for reserved container",
    ),
    pytest.param(
        {"runtimePatches": [_patch(c.JOB_NODE, {"serviceAccountName": "service-account"})]},
        [],
        id="allow runtimePatches when creating a new trainJob",
    ),
    pytest.param(
        {"podSpecOverrides": [{"targetJobs": [{"name": "invalid"}]}]},
        [
            (
                "spec.podSpecOverrides",
                "must not have targetJob that doesn't exist in the runtime job template",
            )
        ],
        id="podSpecOverrides contain invalid targetJob",
    ),
    pytest.param(
        {
            "podSpecOverrides": [
                {"targetJobs": [{"name": c.JOB_NODE}], "initContainers": [{"name": "invalid"}]}
            ]
        },
        [
            (
                "spec.podSpecOverrides",
                "must not have initContainer that doesn't exist in the runtime job node",
            )
        ],
        id="podSpecOverrides contain invalid initContainer",
    ),
    pytest.param(
        {
            "podSpecOverrides": [
                {"targetJobs": [{"name": c.JOB_NODE}], "containers": [{"name": "invalid"}]}
            ]
        },
        [
            (
                "spec.podSpecOverrides",
                "must not have container that doesn't exist in the runtime job node",
            )
        ],
        id="podSpecOverrides contain invalid container",
    ),
    pytest.param(
        {
            "podSpecOverrides": [
                {
                    "targetJobs": [{"name": c.JOB_NODE}],
                    "containers": [{"name": "node", "env": [e("ENV_NAME", "OVERRIDE")]}],
                }
            ]
        },
        [("spec.podSpecOverrides", RESERVED_ENVS)],
        id="podSpecOverrides contain envs for reserved container",
    ),
    pytest.param(
        {"podTemplateOverrides": [{"targetJobs": [{"name": "invalid"}]}]},
        [
            (
                "spec.podTemplateOverrides",
                "must not have targetJob that doesn't exist in the runtime job template",
            )
        ],
        id="podTemplateOverrides contain invalid targetJob",
    ),
    pytest.param(
        {
            "podTemplateOverrides": [
                {
                    "targetJobs": [{"name": c.JOB_NODE}],
                    "spec": {"initContainers": [{"name": "invalid"}]},
                }
            ]
        },
        [
            (
                "spec.podTemplateOverrides",
                "must not have initContainer that doesn't exist in the runtime job node",
            )
        ],
        id="podTemplateOverrides contain invalid initContainer",
    ),
    pytest.param(
        {
            "podTemplateOverrides": [
                {
                    "targetJobs": [{"name": c.JOB_NODE}],
                    "spec": {"containers": [{"name": "invalid"}]},
                }
            ]
        },
        [
            (
                "spec.podTemplateOverrides",
                "must not have container that doesn't exist in the runtime job node",
            )
        ],
        id="podTemplateOverrides contain invalid container",
    ),
    pytest.param(
        {
            "podTemplateOverrides": [
                {
                    "targetJobs": [{"name": c.JOB_DATASET_INITIALIZER}],
                    "spec": {"containers": [{"name": "dataset-initializer", "env": [e("A", "b")]}]},
                }
            ]
        },
        [("spec.podTemplateOverrides", RESERVED_ENVS)],
        id="podTemplateOverrides contain envs for reserved container",
    ),
]


@pytest.mark.parametrize(("spec", "want"), VALIDATE_CASES)
def test_validate(spec: Obj, want: list[tuple[str, str]]) -> None:
    rt = upstream_runtime(upstream_jobs(), ml_policy={"numNodes": 1})
    errors = validate(upstream_trainjob(**spec), rt)
    assert [(err.field, err.detail) for err in errors] == want
    assert all(err.type.value == "Invalid value" for err in errors)


INITIALIZER_CASES = [
    pytest.param(
        "dataset",
        [
            {
                "name": "random",
                "template": {"spec": {"template": {"spec": {"containers": [{"name": "random"}]}}}},
            }
        ],
        "must have dataset-initializer job when trainJob is configured with input datasetConfig",
        id="must have dataset initializer job when trainJob is configured with input datasetConfig",
    ),
    pytest.param(
        "dataset",
        [
            {
                "name": "dataset-initializer",
                "template": {"spec": {"template": {"spec": {"containers": [{"name": "x"}]}}}},
            }
        ],
        "must have container with name - dataset-initializer in the dataset-initializer job",
        id="must have container with name - dataset initializer in the dataset initializer job",
    ),
    pytest.param(
        "model",
        [
            {
                "name": "random",
                "template": {"spec": {"template": {"spec": {"containers": [{"name": "random"}]}}}},
            }
        ],
        "must have model-initializer job when trainJob is configured with input modelConfig",
        id="must have model initializer job when trainJob is configured with input modelConfig",
    ),
    pytest.param(
        "model",
        [
            {
                "name": "model-initializer",
                "template": {"spec": {"template": {"spec": {"containers": [{"name": "x"}]}}}},
            }
        ],
        "must have container with name - model-initializer in the model-initializer job",
        id="must have container with name - model initializer in the model initializer job",
    ),
    pytest.param(
        "dataset",
        [
            {
                "name": "dataset-initializer",
                "template": {
                    "spec": {
                        "template": {"spec": {"containers": [{"name": "dataset-initializer"}]}}
                    }
                },
            }
        ],
        "must have volumeMount with name - initializer in container dataset-initializer of the "
        "dataset-initializer job",
        id="must have volumeMount with name - initializer in the dataset initializer container",
    ),
    pytest.param(
        "model",
        [
            {
                "name": "model-initializer",
                "template": {
                    "spec": {"template": {"spec": {"containers": [{"name": "model-initializer"}]}}}
                },
            }
        ],
        "must have volumeMount with name - initializer in container model-initializer of the "
        "model-initializer job",
        id="must have volumeMount with name - initializer in the model initializer container",
    ),
]


@pytest.mark.parametrize(("part", "jobs", "want"), INITIALIZER_CASES)
def test_validate_initializer_jobs(part: str, jobs: list[Obj], want: str) -> None:
    errors = validate(upstream_trainjob(initializer={part: {}}), upstream_runtime(jobs))
    assert [(err.field, err.detail) for err in errors] == [("spec.runtimeRef", want)]
    assert errors[0].bad_value == {
        "name": "test-runtime",
        "apiGroup": c.GROUP,
        "kind": c.TRAINING_RUNTIME_KIND,
    }


MUTATION_CASES = [
    pytest.param(
        "service-account",
        False,
        "service-account",
        False,
        [],
        id="allow updates to trainJob with no changes to runtimePatches",
    ),
    pytest.param(
        "service-account",
        False,
        "service-account-updated",
        False,
        [
            "RuntimePatches can only be modified when the TrainJob is suspended before or after the update"
        ],
        id="forbid changes to runtimePatches when trainJob is not suspended",
    ),
    pytest.param(
        "service-account",
        True,
        "service-account-updated",
        True,
        [],
        id="allow changes to runtimePatches when trainJob is suspended and jobSet does not exist",
    ),
    pytest.param(
        "service-account",
        False,
        "service-account-updated",
        True,
        [],
        id="allow changes to runtimePatches when the update suspends the trainJob",
    ),
]


@pytest.mark.parametrize(("old_sa", "old_suspend", "new_sa", "new_suspend", "want"), MUTATION_CASES)
def test_validate_runtime_patch_mutation(
    old_sa: str, old_suspend: bool, new_sa: str, new_suspend: bool, want: list[str]
) -> None:
    rt = upstream_runtime(upstream_jobs(), ml_policy={"numNodes": 1})
    old = upstream_trainjob(
        suspend=old_suspend,
        runtimePatches=[_patch(c.JOB_NODE, {"serviceAccountName": old_sa})],
    )
    new = upstream_trainjob(
        suspend=new_suspend,
        runtimePatches=[_patch(c.JOB_NODE, {"serviceAccountName": new_sa})],
    )
    errors: list[FieldError] = validate(new, rt, old)
    assert [err.detail for err in errors] == want
    assert all(
        err.field == "spec.runtimePatches" and err.type.value == "Forbidden" for err in errors
    )


OVERRIDE_MUTATION_CASES = [
    pytest.param(
        "sa", False, "sa", False, [], id="allow updates with no changes to podTemplateOverrides"
    ),
    pytest.param(
        "sa",
        False,
        "sa-updated",
        False,
        ["PodTemplateOverrides can only be modified when the TrainJob is suspended"],
        id="forbid changes to podTemplateOverrides when trainJob is not suspended",
    ),
    pytest.param(
        "sa",
        True,
        "sa-updated",
        False,
        ["PodTemplateOverrides can only be modified when the TrainJob is suspended"],
        id="forbid changes to podTemplateOverrides when the update resumes the trainJob (v2.1)",
    ),
    pytest.param(
        "sa",
        False,
        "sa-updated",
        True,
        [],
        id="allow changes to podTemplateOverrides when suspended",
    ),
]


@pytest.mark.parametrize(
    ("old_sa", "old_suspend", "new_sa", "new_suspend", "want"), OVERRIDE_MUTATION_CASES
)
def test_validate_pod_template_override_mutation(
    old_sa: str, old_suspend: bool, new_sa: str, new_suspend: bool, want: list[str]
) -> None:
    rt = upstream_runtime(upstream_jobs(), ml_policy={"numNodes": 1})

    def tj(sa: str, suspend: bool) -> TrainJob:
        return upstream_trainjob(
            suspend=suspend,
            podTemplateOverrides=[
                {"targetJobs": [{"name": c.JOB_NODE}], "spec": {"serviceAccountName": sa}}
            ],
        )

    errors = validate(tj(new_sa, new_suspend), rt, tj(old_sa, old_suspend))
    assert [err.detail for err in errors] == want
    assert all(
        err.field == "spec.podTemplateOverrides" and err.type.value == "Forbidden" for err in errors
    )


# -- TestValidateReplicatedJobs (runtime webhooks) ------------------------------------------------


def _launcher_first_of_node(jobs: list[Obj]) -> list[Obj]:
    """``LauncherReplica()``: a ``launcher`` job without ancestor label, just before ``node``."""
    launcher = {
        "name": c.JOB_LAUNCHER,
        "template": {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {"name": c.CONTAINER_NODE, "command": ["mpirun"], "args": ["echo.sh"]}
                        ]
                    }
                }
            }
        },
    }
    return [*jobs[:2], launcher, jobs[2]]


def _replicas(jobs: list[Obj], n: int) -> list[Obj]:
    for rj in jobs:
        rj["replicas"] = n
    return jobs


def _ancestor(jobs: list[Obj], value: str) -> list[Obj]:
    for rj in jobs:
        rj["template"]["metadata"]["labels"][c.LABEL_ANCESTOR] = value
    return jobs


def _replace_containers(jobs: list[Obj]) -> list[Obj]:
    for rj in jobs:
        rj["template"]["spec"]["template"]["spec"]["containers"] = [
            {"name": "test", "image": "test"}
        ]
    return jobs


RJOBS = "spec.template.spec.replicatedJobs"
CONTAINERS = "template.spec.template.spec.containers"

REPLICATED_JOBS_CASES = [
    pytest.param(
        _replicas(_launcher_first_of_node(upstream_jobs()), 1), [], id="valid replicatedJobs"
    ),
    pytest.param(
        _replicas(_ancestor(upstream_jobs(), "user-specified"), 2),
        [],
        id="valid replicatedJobs with unknown user-specified ancestor",
    ),
    pytest.param(
        _replicas(_launcher_first_of_node(upstream_jobs()), 2),
        [
            (f"{RJOBS}[0].replicas", "always must be 1"),
            (f"{RJOBS}[1].replicas", "always must be 1"),
            (f"{RJOBS}[3].replicas", "always must be 1"),
        ],
        id="invalid replicas",
    ),
    pytest.param(
        _replace_containers(_replicas(upstream_jobs(), 1)),
        [
            (
                f"{RJOBS}[{i}].{CONTAINERS}",
                f"must contain the required container for the ancestor: {a}",
            )
            for i, a in enumerate(
                (c.ANCESTOR_DATASET_INITIALIZER, c.ANCESTOR_MODEL_INITIALIZER, c.ANCESTOR_TRAINER)
            )
        ],
        id="missing required container in replicatedJobs",
    ),
]


@pytest.mark.parametrize(("jobs", "want"), REPLICATED_JOBS_CASES)
def test_runtime_replicated_jobs(jobs: list[Obj], want: list[tuple[str, str]]) -> None:
    errors = validate_runtime(upstream_runtime(jobs, ml_policy={"numNodes": 1}))
    assert [(err.field, err.detail) for err in errors] == want


def test_cluster_training_runtime_builds_the_same_jobset() -> None:
    """clustertrainingruntime_test.go: the same cases through a ClusterTrainingRuntime."""
    rt, tj, want = case_plainml_container_from_trainjob()
    doc = rt.to_dict()
    doc["kind"] = c.CLUSTER_TRAINING_RUNTIME_KIND
    del doc["metadata"]["namespace"]
    ctr = parse(doc)
    ref = tj.spec.runtime_ref.model_copy(update={"kind": c.CLUSTER_TRAINING_RUNTIME_KIND})
    tj = tj.model_copy(update={"spec": tj.spec.model_copy(update={"runtime_ref": ref})})
    assert compile(tj, ctr).jobset == want  # type: ignore[arg-type]


def test_scheduler_pod_labels_and_annotations_go_on_every_pod_template() -> None:
    """The builder's ``PodLabels``/``PodAnnotations``: merged into each job's pod template."""
    jobs = _node_only_runtime()
    _pod(jobs, c.JOB_NODE)["metadata"] = {"labels": {"app": "x"}, "annotations": {"a": "1"}}
    tj = upstream_trainjob()
    info = build_info(tj, upstream_runtime(jobs, ml_policy={"numNodes": 1}))
    info.pod_labels = {"scheduling.x-k8s.io/pod-group": "test-job"}
    info.pod_annotations = {"scheduling.k8s.io/group-name": "test-job"}
    JobSet().pre_build(info, tj)
    (js,) = JobSet().build(info, tj, None)
    metas = [rj["template"]["spec"]["template"]["metadata"] for rj in js["spec"]["replicatedJobs"]]
    assert metas[2] == {
        "labels": {"app": "x", "scheduling.x-k8s.io/pod-group": "test-job"},
        "annotations": {"a": "1", "scheduling.k8s.io/group-name": "test-job"},
    }
    assert metas[0] == {
        "labels": {"scheduling.x-k8s.io/pod-group": "test-job"},
        "annotations": {"scheduling.k8s.io/group-name": "test-job"},
    }
