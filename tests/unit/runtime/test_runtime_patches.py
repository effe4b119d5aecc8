"""runtimePatches, their v2.0/v2.1 predecessors, suspend and initializers: golden Plans on
torch-distributed, and the strategic-merge rules underneath.

* ``runtimePatches`` (v2.2+) merge onto the runtime's JobSetSpec as a strategic merge patch,
  one after the other, then replicatedJobs go back to the runtime's order.
* ``labels``/``annotations`` (v2.0/v2.1), ``podSpecOverrides`` (v2.0) and ``podTemplateOverrides``
  (v2.1) give the very same JobSet as the equivalent ``runtimePatches`` (trainjob translates them,
  :mod:`trainjob.api.legacy`).
* ``suspend`` is copied to the JobSet; ``initializer.dataset|model`` set ``STORAGE_URI``, their env
  and an ``envFrom`` secretRef on the initializer containers.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.helpers import builtin, container_of, env_of, replicated_job, trainjob
from trainjob.api import constants as c
from trainjob.api.load import parse
from trainjob.api.trainer import ClusterTrainingRuntime
from trainjob.runtime import compile, smp

Obj = dict[str, Any]

# -- a torch-distributed with an init container and a sidecar (what patches may target) --------


def torch_with_sidecars() -> ClusterTrainingRuntime:
    doc = builtin("torch-distributed").to_dict()
    pod = doc["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"]["initContainers"] = [
        {
            "name": "prepare",
            "image": "busybox:1.36",
            "command": ["sh", "-c", "ls $DATA_DIR"],
            "env": [{"name": "LOG_LEVEL", "value": "info"}],
        }
    ]
    pod["spec"]["containers"].append(
        {
            "name": "metrics",
            "image": "ghcr.io/acme/metrics-exporter:1.4",
            "env": [{"name": "METRICS_PATH", "value": "/metrics"}],
        }
    )
    rt = parse(doc)
    assert isinstance(rt, ClusterTrainingRuntime)
    return rt


NODE_SELECTOR = {"node.kubernetes.io/instance-type": "p5.48xlarge"}
TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
VOLUMES = [{"name": "datasets", "persistentVolumeClaim": {"claimName": "datasets"}}]
INIT_CONTAINERS = [{"name": "prepare", "env": [{"name": "DATA_DIR", "value": "/data"}]}]
CONTAINERS = [
    {
        "name": "node",
        "volumeMounts": [{"name": "datasets", "mountPath": "/data", "readOnly": True}],
    },
    {"name": "metrics", "env": [{"name": "METRICS_PORT", "value": "9400"}]},
]
POD_SPEC = {
    "nodeSelector": NODE_SELECTOR,
    "tolerations": TOLERATIONS,
    "volumes": VOLUMES,
    "initContainers": INIT_CONTAINERS,
    "containers": CONTAINERS,
}
JOBSET_LABELS = {"team": "vision"}
JOBSET_ANNOTATIONS = {"acme.io/cost-center": "42"}
POD_LABELS = {"acme.io/queue": "gpu-a"}


def runtime_patch(
    manager: str,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    pod_labels: dict[str, str] | None = None,
    pod_spec: Obj | None = None,
) -> Obj:
    template: Obj = {}
    if labels or annotations:
        template["metadata"] = {
            k: v for k, v in (("labels", labels), ("annotations", annotations)) if v
        }
    pod: Obj = {}
    if pod_labels:
        pod["metadata"] = {"labels": pod_labels}
    if pod_spec:
        pod["spec"] = pod_spec
    if pod:
        template["spec"] = {
            "replicatedJobs": [{"name": "node", "template": {"spec": {"template": pod}}}]
        }
    return {"manager": manager, "trainingRuntimeSpec": {"template": template}}


RUNTIME_PATCHES = [
    runtime_patch(
        "acme.io/scheduler",
        labels=JOBSET_LABELS,
        annotations=JOBSET_ANNOTATIONS,
        pod_labels=POD_LABELS,
        pod_spec=POD_SPEC,
    ),
    runtime_patch(
        "kueue.x-k8s.io/manager",
        pod_spec={"nodeSelector": {"cloud.google.com/gke-nodepool": "a3-pool"}},
    ),
]


def ddp(**spec: Any) -> Any:
    return trainjob("torch-distributed", name="ddp", trainer={"numNodes": 2}, **spec)


def test_golden_runtime_patches(golden: Any) -> None:
    plan = compile(ddp(runtimePatches=RUNTIME_PATCHES), torch_with_sidecars())
    golden("plans/torch-distributed__runtime-patches.yaml", plan.to_yaml())


def test_runtime_patches_merge_what_they_name_and_keep_the_rest() -> None:
    plan = compile(ddp(runtimePatches=RUNTIME_PATCHES), torch_with_sidecars())
    js = plan.jobset
    assert js["metadata"]["labels"] == JOBSET_LABELS
    assert js["metadata"]["annotations"] == JOBSET_ANNOTATIONS
    pod = replicated_job(plan, "node")["template"]["spec"]["template"]
    assert pod["metadata"]["labels"] == POD_LABELS
    # The second patch merges into the first one's nodeSelector (maps merge key by key).
    assert pod["spec"]["nodeSelector"] == {
        **NODE_SELECTOR,
        "cloud.google.com/gke-nodepool": "a3-pool",
    }
    assert pod["spec"]["tolerations"] == TOLERATIONS
    assert pod["spec"]["volumes"] == VOLUMES
    prepare = container_of(plan, "node", "prepare")
    assert prepare["image"] == "busybox:1.36"
    # What a strategic merge patch adds goes before what it leaves alone.
    assert list(env_of(prepare)) == ["DATA_DIR", "LOG_LEVEL"]
    assert list(env_of(container_of(plan, "node", "metrics"))) == ["METRICS_PORT", "METRICS_PATH"]
    node = container_of(plan, "node", "node")
    assert node["volumeMounts"] == CONTAINERS[0]["volumeMounts"]
    assert next(iter(env_of(node))) == c.TORCH_ENV_NUM_NODES


# -- v2.0/v2.1 fields: the same JobSet as the equivalent runtimePatches -----------------------

LEGACY_CASES = [
    pytest.param(
        "labels-annotations",
        {"labels": JOBSET_LABELS, "annotations": JOBSET_ANNOTATIONS},
        [runtime_patch("x.io/m", labels=JOBSET_LABELS, annotations=JOBSET_ANNOTATIONS)],
        id="v2.0/v2.1 labels and annotations go on the JobSet like a metadata patch",
    ),
    pytest.param(
        "pod-spec-overrides",
        {"podSpecOverrides": [{"targetJobs": [{"name": "node"}], **POD_SPEC}]},
        [runtime_patch("x.io/m", pod_spec=POD_SPEC)],
        id="v2.0 podSpecOverrides merge like a pod spec patch on the target job",
    ),
    pytest.param(
        "pod-template-overrides",
        {
            "labels": JOBSET_LABELS,
            "podTemplateOverrides": [
                {
                    "targetJobs": [{"name": "node"}],
                    "metadata": {"labels": POD_LABELS},
                    "spec": POD_SPEC,
                }
            ],
        },
        [runtime_patch("x.io/m", labels=JOBSET_LABELS, pod_labels=POD_LABELS, pod_spec=POD_SPEC)],
        id="v2.1 podTemplateOverrides merge like a pod template patch on the target job",
    ),
]


@pytest.mark.parametrize(("case", "legacy", "patches"), LEGACY_CASES)
def test_legacy_fields_compile_like_runtime_patches(
    golden: Any, case: str, legacy: Obj, patches: list[Obj]
) -> None:
    rt = torch_with_sidecars()
    plan = compile(ddp(**legacy), rt)
    assert plan.jobset == compile(ddp(runtimePatches=patches), rt).jobset
    golden(f"plans/torch-distributed__{case}.yaml", plan.to_yaml())


def test_legacy_fields_apply_before_runtime_patches() -> None:
    """Upstream applied overrides before anything else; a later runtimePatch wins."""
    tj = ddp(
        podSpecOverrides=[{"targetJobs": [{"name": "node"}], "nodeSelector": {"pool": "legacy"}}],
        runtimePatches=[runtime_patch("x.io/m", pod_spec={"nodeSelector": {"pool": "patch"}})],
    )
    pod = replicated_job(compile(tj, torch_with_sidecars()), "node")["template"]["spec"]["template"]
    assert pod["spec"]["nodeSelector"] == {"pool": "patch"}


# -- suspend ------------------------------------------------------------------------------------

SUSPEND_CASES = [
    pytest.param(True, True, id="suspend true is copied to the JobSet"),
    pytest.param(False, False, id="suspend false is copied to the JobSet"),
    pytest.param(None, False, id="suspend defaults to false"),
]


@pytest.mark.parametrize(("suspend", "want"), SUSPEND_CASES)
def test_suspend(suspend: bool | None, want: bool) -> None:
    spec = {} if suspend is None else {"suspend": suspend}
    plan = compile(ddp(**spec), builtin("torch-distributed"))
    assert plan.jobset["spec"]["suspend"] is want


def test_golden_suspend(golden: Any) -> None:
    plan = compile(ddp(suspend=True), builtin("torch-distributed"))
    golden("plans/torch-distributed__suspend.yaml", plan.to_yaml())


# -- initializers ---------------------------------------------------------------------------------


def torch_with_initializers() -> ClusterTrainingRuntime:
    """torch-distributed with dataset and model initializer jobs, laid out like the torchtune
    runtimes (a shared ``initializer`` volume, ``node`` waits for both)."""

    def initializer(kind: str, uri: str) -> Obj:
        return {
            "name": kind,
            "template": {
                "metadata": {"labels": {c.LABEL_ANCESTOR: kind}},
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": kind,
                                    "image": f"ghcr.io/kubeflow/trainer/{kind}:latest",
                                    "env": [
                                        {"name": "LOG_LEVEL", "value": "info"},
                                        {"name": c.ENV_STORAGE_URI, "value": uri},
                                    ],
                                    "volumeMounts": [
                                        {"name": c.INITIALIZER_VOLUME, "mountPath": "/workspace"}
                                    ],
                                }
                            ],
                            "volumes": [
                                {
                                    "name": c.INITIALIZER_VOLUME,
                                    "persistentVolumeClaim": {"claimName": "initializer"},
                                }
                            ],
                        }
                    }
                },
            },
        }

    doc = builtin("torch-distributed").to_dict()
    node = doc["spec"]["template"]["spec"]["replicatedJobs"][0]
    node["dependsOn"] = [
        {"name": c.JOB_DATASET_INITIALIZER, "status": "Complete"},
        {"name": c.JOB_MODEL_INITIALIZER, "status": "Complete"},
    ]
    pod = node["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["volumeMounts"] = [
        {"name": c.INITIALIZER_VOLUME, "mountPath": "/workspace"}
    ]
    pod["volumes"] = [
        {"name": c.INITIALIZER_VOLUME, "persistentVolumeClaim": {"claimName": "initializer"}}
    ]
    doc["spec"]["template"]["spec"]["replicatedJobs"] = [
        initializer(c.JOB_DATASET_INITIALIZER, "hf://tatsu-lab/alpaca"),
        initializer(c.JOB_MODEL_INITIALIZER, "hf://meta-llama/Llama-3.2-1B-Instruct"),
        node,
    ]
    rt = parse(doc)
    assert isinstance(rt, ClusterTrainingRuntime)
    return rt


INITIALIZER = {
    "dataset": {
        "storageUri": "hf://acme/support-tickets",
        "env": [
            {"name": "IGNORE_PATTERNS", "value": "*.md"},
            {"name": "LOG_LEVEL", "value": "debug"},
        ],
        "secretRef": {"name": "hf-token"},
    },
    "model": {
        "storageUri": "s3://models/llama-3.2-1b",
        "env": [{"name": "ENDPOINT", "value": "https://s3.acme.io"}],
        "secretRef": {"name": "s3-credentials"},
    },
}


def test_golden_initializers(golden: Any) -> None:
    plan = compile(ddp(initializer=INITIALIZER), torch_with_initializers())
    golden("plans/torch-distributed__initializers.yaml", plan.to_yaml())


INITIALIZER_CASES = [
    pytest.param(
        c.JOB_DATASET_INITIALIZER,
        {
            "LOG_LEVEL": "debug",
            "STORAGE_URI": "hf://acme/support-tickets",
            "IGNORE_PATTERNS": "*.md",
        },
        "hf-token",
        id="dataset: STORAGE_URI and env upserted in place, new env appended, secret as envFrom",
    ),
    pytest.param(
        c.JOB_MODEL_INITIALIZER,
        {
            "LOG_LEVEL": "info",
            "STORAGE_URI": "s3://models/llama-3.2-1b",
            "ENDPOINT": "https://s3.acme.io",
        },
        "s3-credentials",
        id="model: STORAGE_URI replaced, env appended, secret as envFrom",
    ),
]


@pytest.mark.parametrize(("job", "want_env", "secret"), INITIALIZER_CASES)
def test_initializer_step(job: str, want_env: dict[str, str], secret: str) -> None:
    plan = compile(ddp(initializer=INITIALIZER), torch_with_initializers())
    ctr = container_of(plan, job, job)
    assert env_of(ctr) == want_env
    assert list(env_of(ctr)) == list(want_env)
    assert ctr["envFrom"] == [{"secretRef": {"name": secret}}]
    assert replicated_job(plan, job)["replicas"] == 1
    assert [rj["name"] for rj in plan.jobset["spec"]["replicatedJobs"]] == [
        c.JOB_DATASET_INITIALIZER,
        c.JOB_MODEL_INITIALIZER,
        c.JOB_NODE,
    ]


def test_initializer_without_trainjob_config_keeps_the_runtime_values() -> None:
    plan = compile(ddp(), torch_with_initializers())
    ctr = container_of(plan, c.JOB_DATASET_INITIALIZER, c.CONTAINER_DATASET_INITIALIZER)
    assert env_of(ctr) == {"LOG_LEVEL": "info", "STORAGE_URI": "hf://tatsu-lab/alpaca"}
    assert "envFrom" not in ctr


# -- the strategic merge itself -------------------------------------------------------------------


def env(*names: str) -> list[Obj]:
    return [{"name": n, "value": n.lower()} for n in names]


SMP_CASES = [
    pytest.param(
        {"env": env("A", "B")},
        {"env": env("C")},
        ["C", "A", "B"],
        id="an added item goes before the items the patch does not name",
    ),
    pytest.param(
        {"env": env("A", "B")},
        {"env": env("B", "C")},
        ["A", "B", "C"],
        id="an added item follows the patch item it comes after",
    ),
    pytest.param(
        {"env": env("A", "B", "C")},
        {"env": env("C", "A")},
        ["B", "C", "A"],
        id="patch items keep the patch's order",
    ),
    pytest.param(
        {"env": env("A", "B")},
        {"env": []},
        ["A", "B"],
        id="an empty patch list keeps the original",
    ),
    pytest.param(
        {},
        {"env": env("B", "A")},
        ["B", "A"],
        id="a list the original lacks is taken as is",
    ),
]


@pytest.mark.parametrize(("original", "patch", "want"), SMP_CASES)
def test_strategic_merge_list_order(original: Obj, patch: Obj, want: list[str]) -> None:
    merged = smp.merge(original, patch)
    assert [item["name"] for item in merged["env"]] == want


def test_strategic_merge_replaces_lists_without_merge_key_and_merges_maps() -> None:
    original = {
        "tolerations": [{"key": "a"}],
        "nodeSelector": {"x": "1"},
        "args": ["--a"],
        "finalizers": ["f1", "f2"],
        "containers": [{"name": "node", "env": env("A"), "image": "old"}],
    }
    patch = {
        "tolerations": [{"key": "b"}],
        "nodeSelector": {"y": "2"},
        "args": ["--b"],
        "finalizers": ["f3", "f1"],
        "containers": [{"name": "node", "image": "new", "command": None}],
        "serviceAccountName": "sa",
    }
    assert smp.merge(original, patch) == {
        "tolerations": [{"key": "b"}],
        "nodeSelector": {"x": "1", "y": "2"},
        "args": ["--b"],
        "finalizers": ["f3", "f1", "f2"],
        "containers": [{"name": "node", "env": env("A"), "image": "new"}],
        "serviceAccountName": "sa",
    }
