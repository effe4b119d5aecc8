"""The differential test's corpus: what both controllers are shown, case by case.

Two sources:

* **upstream's own files**, read from the ``github.com/kubeflow/trainer/v2`` module zip: every
  built-in runtime of ``manifests/base/runtimes`` (each shown a TrainJob without ``spec.trainer``
  and one with a typical trainer) and every YAML example of ``examples/`` (``examples/yaml``,
  ``examples/flux``). The notebooks there drive the SDK, not YAML, and are not part of it.
* **cases written here**, one or more for every plugin and option (Torch and torchtune, MPI,
  PlainML, JAX, XGBoost, Flux, coscheduling, Volcano, the JobSet builder's initializers and
  runtime patches, the v2.0/v2.1 fields, suspend, deadlines, managedBy, the webhooks' refusals),
  each a sentence saying what it shows.

A case is the objects created in order in a fresh namespace (runtimes, then TrainJobs), optionally
one merge patch of its TrainJob once the controller has acted (``update``), and whether the
webhooks see the namespace. ClusterTrainingRuntimes are shared by every case of a phase, so a
case's own ones get names no other case uses (:func:`check`).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]
API = "trainer.kubeflow.org/v1alpha1"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
TORCH_IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"


@dataclass(frozen=True)
class Case:
    """One input of the differential test.

    ``update`` is a JSON merge patch applied to the case's last TrainJob after the controller
    settled; ``webhooks=False`` puts the case in a namespace both controllers' webhooks skip (what
    a cluster without webhooks, or a webhook bypassed, hands the reconciler).
    """

    name: str
    what: str
    docs: tuple[Obj, ...]
    source: str = "trainjob"
    update: Obj | None = None
    webhooks: bool = True
    tags: tuple[str, ...] = field(default=())

    @property
    def trainjobs(self) -> list[Obj]:
        return [d for d in self.docs if d.get("kind") == "TrainJob"]


# -- builders ------------------------------------------------------------------------------------
def trainjob(
    runtime: str = "torch-distributed", *, name: str = "job", kind: str | None = None, **spec: Any
) -> Obj:
    ref: Obj = {"name": runtime}
    if kind is not None:
        ref["kind"] = kind
    return {
        "apiVersion": API,
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": ref, **spec},
    }


def container(name: str = "node", image: str = TORCH_IMAGE, **extra: Any) -> Obj:
    return {"name": name, "image": image, **extra}


def rjob(
    name: str = "node",
    ancestor: str | None = "trainer",
    containers: list[Obj] | None = None,
    *,
    init: list[Obj] | None = None,
    replicas: int | None = None,
    depends_on: list[Obj] | None = None,
    pod: Obj | None = None,
    job: Obj | None = None,
) -> Obj:
    pod_spec: Obj = {"containers": containers if containers is not None else [container()]}
    if init:
        pod_spec["initContainers"] = init
    pod_spec.update(pod or {})
    tmpl: Obj = {"spec": {**(job or {}), "template": {"spec": pod_spec}}}
    if ancestor is not None:
        tmpl["metadata"] = {"labels": {ANCESTOR: ancestor}}
    out: Obj = {"name": name, "template": tmpl}
    if replicas is not None:
        out["replicas"] = replicas
    if depends_on:
        out["dependsOn"] = depends_on
    return out


def runtime(
    name: str,
    *jobs: Obj,
    kind: str = "TrainingRuntime",
    ml: Obj | None = None,
    pod_group: Obj | None = None,
    labels: dict[str, str] | None = None,
    template_meta: Obj | None = None,
    jobset: Obj | None = None,
) -> Obj:
    spec: Obj = {}
    if ml is not None:
        spec["mlPolicy"] = ml
    if pod_group is not None:
        spec["podGroupPolicy"] = pod_group
    tmpl: Obj = {"spec": {**(jobset or {}), "replicatedJobs": list(jobs) or [rjob()]}}
    if template_meta:
        tmpl["metadata"] = template_meta
    spec["template"] = tmpl
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": API, "kind": kind, "metadata": meta, "spec": spec}


def torch_runtime(name: str = "torch", *jobs: Obj, **kw: Any) -> Obj:
    kw.setdefault("ml", {"numNodes": 1, "torch": {}})
    return runtime(name, *jobs, **kw)


def initializer_jobs(*, mount: bool = True) -> list[Obj]:
    vm = [{"name": "initializer", "mountPath": "/workspace"}] if mount else []
    return [
        rjob(
            "dataset-initializer",
            "dataset-initializer",
            [
                container(
                    "dataset-initializer",
                    "ghcr.io/kubeflow/trainer/dataset-initializer",
                    env=[{"name": "STORAGE_URI", "value": "hf://tatsu-lab/alpaca"}],
                    volumeMounts=vm,
                )
            ],
        ),
        rjob(
            "model-initializer",
            "model-initializer",
            [
                container(
                    "model-initializer",
                    "ghcr.io/kubeflow/trainer/model-initializer",
                    volumeMounts=vm,
                )
            ],
        ),
    ]


def patch(manager: str = "example.com/user", **template: Any) -> Obj:
    return {"manager": manager, "trainingRuntimeSpec": {"template": template}}


def node_pod_patch(pod_spec: Obj, job: str = "node", **pod_meta: Any) -> Obj:
    tmpl: Obj = {"spec": pod_spec}
    if pod_meta:
        tmpl["metadata"] = pod_meta
    return {"replicatedJobs": [{"name": job, "template": {"spec": {"template": tmpl}}}]}


CMD = ["torchrun", "train.py"]


# -- upstream's files ----------------------------------------------------------------------------
def _docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def upstream_runtimes(module: Path) -> list[Obj]:
    """Every built-in runtime of ``manifests/base/runtimes`` and the Flux example's runtime."""
    base = module / "manifests" / "base" / "runtimes"
    files = sorted(p for p in base.rglob("*.yaml") if p.name != "kustomization.yaml")
    files.append(module / "examples" / "flux" / "flux-runtime.yaml")
    return [d for f in files for d in _docs(f)]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def upstream_cases(module: Path) -> list[Case]:
    cases: list[Case] = []
    for path in sorted((module / "examples").rglob("*.yaml")):
        if path.name == "flux-runtime.yaml":
            continue
        rel = path.relative_to(module).as_posix()
        cases.append(
            Case(
                f"ex-{_slug(path.parent.name)}-{_slug(path.stem)}",
                f"upstream example {rel}, as written",
                tuple(_docs(path)),
                source=f"upstream {rel}",
            )
        )
    for rt in upstream_runtimes(module):
        name = rt["metadata"]["name"]
        rel = "manifests/base/runtimes"
        policy = rt["spec"].get("mlPolicy") or {}
        cases.append(
            Case(
                f"rt-{_slug(name)}-bare",
                f"built-in {name}, a TrainJob without spec.trainer",
                (trainjob(name),),
                source=f"upstream {rel}",
            )
        )
        if name.startswith("torchtune-"):
            trainer: Obj = {
                "command": ["tune", "run"],
                "args": ["dataset.data_dir=/workspace/dataset/data", "epochs=1", "batch_size=2"],
                "resourcesPerNode": {"limits": {"nvidia.com/gpu": 1}},
            }
        elif "flux" in policy:
            trainer = {"numNodes": 2, "command": ["lmp", "-in", "in.reaxc.hns"]}
        else:
            trainer = {"numNodes": 2, "command": CMD}
        cases.append(
            Case(
                f"rt-{_slug(name)}-trainer",
                f"built-in {name}, a typical trainer",
                (trainjob(name, trainer=trainer),),
                source=f"upstream {rel}",
            )
        )
    return cases


# -- cases written here --------------------------------------------------------------------------
def own_cases() -> list[Case]:
    C = Case
    tj = trainjob
    gpu1 = {"limits": {"nvidia.com/gpu": 1}}
    out = [
        # Torch
        C("torch-3-nodes", "torch: numNodes 3 sets the pod count and PET_NNODES",
          (tj(trainer={"numNodes": 3, "command": CMD}),)),
        C("torch-numproc-int", "torch: trainer.numProcPerNode 4 is PET_NPROC_PER_NODE",
          (tj(trainer={"numProcPerNode": 4, "command": CMD}),)),
        C("torch-cpu-requests", "torch: auto without GPUs is the CPU request, rounded up",
          (tj(trainer={"resourcesPerNode": {"requests": {"cpu": "2500m"}}}),)),
        C("torch-cpu-limits", "torch: auto without GPUs and no request is the CPU limit",
          (tj(trainer={"resourcesPerNode": {"limits": {"cpu": "3"}}}),)),
        C("torch-gpus-auto", "torch: auto with GPUs stays auto",
          (tj(trainer={"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}}}),)),
        C("torch-env-image-args", "torch: trainer env, image, command and args onto node",
          (tj(trainer={"image": "example.com/train:1", "command": ["python"], "args": ["-m", "t"],
                       "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}),)),
        C("torch-reserved-env", "torch: a PET_* env in trainer.env is refused",
          (tj(trainer={"env": [{"name": "PET_NNODES", "value": "9"},
                               {"name": "PET_MASTER_PORT", "value": "1"}]}),)),
        C("torch-numproc-zero", "torch: numProcPerNode 0 is refused by the CRD",
          (tj(trainer={"numProcPerNode": 0}),)),
        C("torch-numnodes-zero", "torch: numNodes 0 (the CRD's minimum)",
          (tj(trainer={"numNodes": 0}),)),
        C("rjob-name-not-dns1035", "a runtime's replicatedJob name that is no DNS-1035 label",
          (torch_runtime("torch", rjob("Node_1")), tj("torch", kind="TrainingRuntime"))),
        C("name-too-long-for-pods", "a TrainJob name whose pods' names pass 63 characters",
          (tj(name="n" * 50),)),
        C("torch-runtime-resources", "torch: resourcesPerNode merged key by key into the runtime's",
          (torch_runtime("torch", rjob(containers=[container(resources={
              "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}})])),
           tj("torch", kind="TrainingRuntime",
              trainer={"resourcesPerNode": {"requests": {"cpu": "4"}, "limits": {"cpu": "8"}}}))),
        C("torch-envinjection-init", "torch: envInjection into an init container of the trainer job",
          (torch_runtime("torch", rjob(init=[container("preflight", "busybox")]),
                         ml={"numNodes": 2, "torch": {"envInjection": {"targets": [
                             {"jobName": "node", "containerNames": ["preflight"]}]}}}),
           tj("torch", kind="TrainingRuntime", trainer={"command": CMD}))),
        C("torch-envinjection-other-job", "torch: envInjection into a container of another job",
          (torch_runtime("torch", rjob("warmup", None, [container("warm", "busybox")]), rjob(),
                         ml={"numNodes": 1, "torch": {"envInjection": {"targets": [
                             {"jobName": "warmup", "containerNames": ["warm"]}]}}}),
           tj("torch", kind="TrainingRuntime", trainer={"numNodes": 2}))),
        C("torch-envinjection-missing", "torch: envInjection naming a container the runtime lacks",
          (torch_runtime("torch", rjob(),
                         ml={"numNodes": 1, "torch": {"envInjection": {"targets": [
                             {"jobName": "node", "containerNames": ["nope"]}]}}}),
           tj("torch", kind="TrainingRuntime", trainer={"command": CMD}))),
        C("torch-envinjection-node-refused", "torch: envInjection naming node is refused by the CRD",
          (torch_runtime("torch", rjob(),
                         ml={"numNodes": 1, "torch": {"envInjection": {"targets": [
                             {"jobName": "node", "containerNames": ["node"]}]}}}),)),
        # torchtune
        C("tune-1b-lora", "torchtune: LoRA on one GPU picks the single-device LoRA recipe",
          (tj("torchtune-llama3.2-1b", trainer={
              "command": ["tune", "run"], "resourcesPerNode": gpu1,
              "args": ["model.lora_attn_modules=[q_proj,v_proj]", "model.lora_rank=8"]}),)),
        C("tune-1b-qlora", "torchtune: QLoRA on one GPU",
          (tj("torchtune-llama3.2-1b", trainer={
              "command": ["tune", "run"], "resourcesPerNode": gpu1,
              "args": ["model.lora_attn_modules=[q_proj]", "model.quantize_base=True"]}),)),
        C("tune-3b-two-gpus", "torchtune: two GPUs pick the distributed recipe and a rendezvous",
          (tj("torchtune-llama3.2-3b", trainer={
              "command": ["tune", "run"], "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}}),)),
        C("tune-qwen-numproc-1", "torchtune: qwen with numProcPerNode 1",
          (tj("torchtune-qwen2.5-1.5b", trainer={"command": ["tune", "run"], "numProcPerNode": 1}),)),
        C("tune-1b-two-nodes", "torchtune: two nodes for a 1B model is refused",
          (tj("torchtune-llama3.2-1b", trainer={"command": ["tune", "run"], "numNodes": 2}),)),
        C("tune-1b-qlora-distributed", "torchtune: QLoRA on 2 GPUs of a 1B model is refused",
          (tj("torchtune-llama3.2-1b", trainer={
              "command": ["tune", "run"], "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}},
              "args": ["model.lora_attn_modules=[q_proj]", "model.quantize_base=True"]}),)),
        C("tune-immutable-arg", "torchtune: an arg setting output_dir is refused",
          (tj("torchtune-llama3.2-1b", trainer={"command": ["tune", "run"],
                                                "args": ["output_dir=/tmp/x"]}),)),
        C("tune-unknown-model", "torchtune: a runtime named for an unsupported model is refused",
          (runtime("torchtune-mistral-7b", kind="ClusterTrainingRuntime",
                   ml={"numNodes": 1, "torch": {}}),
           tj("torchtune-mistral-7b", trainer={"command": ["tune", "run"]}))),
        C("tune-initializers", "torchtune: initializer storageUri and env overrides",
          (tj("torchtune-llama3.2-1b", trainer={"command": ["tune", "run"], "resourcesPerNode": gpu1},
              initializer={
                  "dataset": {"storageUri": "hf://my/data", "env": [{"name": "X", "value": "1"}]},
                  "model": {"storageUri": "hf://my/model", "secretRef": {"name": "hf-token"}}}),)),
        # MPI
        C("mpi-deepspeed-3-nodes", "mpi: deepspeed launcher-as-node on 3 nodes (hostfile, SSH)",
          (tj("deepspeed-distributed", trainer={"numNodes": 3, "command": ["deepspeed", "t.py"]}),)),
        C("mpi-mlx-numproc", "mpi: mlx with numProcPerNode 2 (slots)",
          (tj("mlx-distributed", trainer={"numNodes": 2, "numProcPerNode": 2}),)),
        C("mpi-gpus-slots", "mpi: GPUs per node become the slots when numProcPerNode is 1",
          (tj("deepspeed-distributed",
              trainer={"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}}}),)),
        C("mpi-launcher-separate", "mpi: runLauncherAsNode false keeps the launcher out of the hostfile",
          (runtime("mpi", rjob("launcher", "trainer", [container("node", "mpi")]),
                   rjob("node", None, [container("node", "mpi")]),
                   ml={"numNodes": 1, "mpi": {"numProcPerNode": 2, "sshAuthMountPath": "/root/.ssh"}}),
           tj("mpi", kind="TrainingRuntime", trainer={"numNodes": 3}))),
        C("mpi-reserved-env", "mpi: an OMPI_MCA_* env in trainer.env is refused",
          (tj("deepspeed-distributed", trainer={"env": [
              {"name": "OMPI_MCA_orte_default_hostfile", "value": "/x"}]}),)),
        C("mpi-launcher-as-node-no-launcher",
          "mpi: numNodes 2 with runLauncherAsNode but no launcher job is refused",
          (runtime("mpi", rjob("node", "trainer", [container("node", "mpi")]),
                   ml={"numNodes": 1, "mpi": {"runLauncherAsNode": True}}),
           tj("mpi", kind="TrainingRuntime", trainer={"numNodes": 2}))),
        C("mpi-subdomain", "mpi: network.subdomain names the hostfile's hosts",
          (runtime("mpi", rjob("launcher", "trainer", [container("node", "mpi")]),
                   rjob("node", None, [container("node", "mpi")]),
                   ml={"numNodes": 2, "mpi": {"runLauncherAsNode": True}},
                   jobset={"network": {"subdomain": "hosts", "publishNotReadyAddresses": True}}),
           tj("mpi", kind="TrainingRuntime"))),
        # PlainML / no policy
        C("plainml-nodes-env", "plainml: an mlPolicy without a framework takes numNodes and env",
          (runtime("plain", ml={"numNodes": 2}),
           tj("plain", kind="TrainingRuntime",
              trainer={"numNodes": 4, "env": [{"name": "A", "value": "1"}]}))),
        C("no-mlpolicy", "a runtime without mlPolicy: trainer fields but no resources merge",
          (runtime("plain"),
           tj("plain", kind="TrainingRuntime",
              trainer={"numNodes": 3, "image": "x:1", "resourcesPerNode": {"limits": {"cpu": "1"}}}))),
        # JAX, XGBoost
        C("jax-3-nodes", "jax: coordinator address, process count and port",
          (tj("jax-distributed", trainer={"numNodes": 3}),)),
        C("xgboost-gpus", "xgboost: DMLC_NUM_WORKER is nodes x GPUs",
          (tj("xgboost-distributed",
              trainer={"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}}),)),
        C("xgboost-reserved-env", "xgboost: a DMLC_* env in trainer.env is refused",
          (tj("xgboost-distributed", trainer={"env": [{"name": "DMLC_TASK_ID", "value": "0"}]}),)),
        # Flux
        C("flux-args-numproc", "flux: command and args wrapped, numProcPerNode and GPUs in flags",
          (tj("flux-distributed", trainer={
              "numNodes": 3, "numProcPerNode": 2, "command": ["lmp"], "args": ["-in", "x"],
              "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}},
              "env": [{"name": "FLUX_QUEUE_POLICY", "value": "easy"}]}),)),
        C("flux-reserved-init", "flux: a runtime init container named flux-installer is refused",
          (runtime("flux-own-installer", rjob(init=[container("flux-installer", "busybox")]),
                   kind="ClusterTrainingRuntime", ml={"numNodes": 1, "flux": {}}),
           tj("flux-own-installer", trainer={"numNodes": 2}))),
        C("flux-runtime-env", "flux: FLUX_* settings from the runtime's node env",
          (runtime("flux-env", rjob(containers=[container(env=[
              {"name": "FLUX_NETWORK_DEVICE", "value": "eth1"}])]),
              ml={"numNodes": 2, "flux": {"numProcPerNode": 3}}),
           tj("flux-env", kind="TrainingRuntime", trainer={"numNodes": 2, "command": ["hostname"]}))),
        # coscheduling, Volcano
        C("cosched-initializers", "coscheduling: minMember and minResources over every job",
          (torch_runtime("gang", *initializer_jobs(), rjob(containers=[container(
              resources={"requests": {"cpu": "1", "memory": "1Gi"}})]),
              pod_group={"coscheduling": {"scheduleTimeoutSeconds": 120}}),
           tj("gang", kind="TrainingRuntime", trainer={"numNodes": 3}))),
        C("cosched-default-timeout", "coscheduling: scheduleTimeoutSeconds defaults to 60",
          (torch_runtime("gang", pod_group={"coscheduling": {}}),
           tj("gang", kind="TrainingRuntime", trainer={"numNodes": 2}))),
        C("volcano-queue-topology", "volcano: queue from the template, network topology",
          (torch_runtime("vc", rjob(containers=[container(
              resources={"requests": {"cpu": "2"}})]),
              pod_group={"volcano": {"networkTopology": {"mode": "hard", "highestTierAllowed": 2}}},
              template_meta={"annotations": {"scheduling.volcano.sh/queue-name": "research"}}),
           tj("vc", kind="TrainingRuntime", trainer={"numNodes": 2}))),
        C("volcano-priority-missing", "volcano: a PriorityClass that does not exist is refused",
          (torch_runtime("vc", rjob(pod={"priorityClassName": "nope"}), pod_group={"volcano": {}}),
           tj("vc", kind="TrainingRuntime"))),
        C("volcano-priority-system", "volcano: system-node-critical needs no PriorityClass object",
          (torch_runtime("vc", rjob(pod={"priorityClassName": "system-node-critical"}),
                         pod_group={"volcano": {}}),
           tj("vc", kind="TrainingRuntime"))),
        # initializers (JobSet builder)
        C("init-all-fields", "initializers: storageUri, env and secretRef on both",
          (torch_runtime("init", *initializer_jobs(), rjob(depends_on=[
              {"name": "dataset-initializer", "status": "Complete"}])),
           tj("init", kind="TrainingRuntime", initializer={
               "dataset": {"storageUri": "s3://b/d", "env": [{"name": "ENDPOINT", "value": "x"}],
                           "secretRef": {"name": "s3"}},
               "model": {"storageUri": "hf://m/n", "env": [{"name": "ACCESS_TOKEN", "value": "t"}]}}))),
        C("init-no-dataset-job", "initializers: a dataset but no dataset-initializer job is refused",
          (torch_runtime("init"),
           tj("init", kind="TrainingRuntime", initializer={"dataset": {"storageUri": "hf://a/b"}}))),
        C("init-no-model-container", "initializers: the model job lacks its container: refused",
          (torch_runtime("init", rjob("model-initializer", "model-initializer",
                                      [container("other", "x")]), rjob()),
           tj("init", kind="TrainingRuntime", initializer={"model": {"storageUri": "hf://a/b"}}))),
        C("init-no-volume-mount", "initializers: no initializer volumeMount is refused (v2.3)",
          (torch_runtime("init", *initializer_jobs(mount=False), rjob()),
           tj("init", kind="TrainingRuntime", initializer={"dataset": {"storageUri": "hf://a/b"}}))),
        C("init-storage-uri-invalid", "initializers: a storageUri that is no URI is refused (CEL)",
          (tj("torchtune-llama3.2-1b", initializer={"dataset": {"storageUri": "not a uri"}}),)),
        # runtime patches
        C("patch-metadata", "runtimePatches: JobSet, job and pod labels/annotations",
          (tj(trainer={"numNodes": 2}, runtimePatches=[patch(
              metadata={"labels": {"team": "a"}, "annotations": {"note": "x"}},
              spec={"replicatedJobs": [{"name": "node", "template": {
                  "metadata": {"labels": {"job-label": "j"}},
                  "spec": {"template": {"metadata": {"labels": {"pod-label": "p"},
                                                     "annotations": {"pod-ann": "q"}}}}}}]})]),)),
        C("patch-scheduling", "runtimePatches: nodeSelector, tolerations, affinity, gates",
          (tj(runtimePatches=[patch(spec=node_pod_patch({
              "nodeSelector": {"pool": "gpu"},
              "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
              "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                  "nodeSelectorTerms": [{"matchExpressions": [
                      {"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
              "schedulingGates": [{"name": "example.com/gate"}]}))]),)),
        C("patch-pod-fields", "runtimePatches: SA, volumes, mounts, security, pull secrets, grace",
          (tj(runtimePatches=[patch(spec=node_pod_patch({
              "serviceAccountName": "trainer",
              "volumes": [{"name": "data", "emptyDir": {}}],
              "containers": [{"name": "node", "volumeMounts": [{"name": "data", "mountPath": "/d"}],
                              "securityContext": {"runAsNonRoot": True}}],
              "imagePullSecrets": [{"name": "regcred"}],
              "securityContext": {"runAsUser": 1000},
              "terminationGracePeriodSeconds": 5}))]),)),
        C("patch-env-node", "runtimePatches: env on the node container is refused",
          (tj(runtimePatches=[patch(spec=node_pod_patch(
              {"containers": [{"name": "node", "env": [{"name": "A", "value": "1"}]}]}))]),)),
        C("patch-unknown-job", "runtimePatches: a replicated job the runtime lacks is refused",
          (tj(runtimePatches=[patch(spec=node_pod_patch({"nodeSelector": {"a": "b"}}, job="x"))]),)),
        C("patch-unknown-container", "runtimePatches: a container the runtime lacks is refused",
          (tj(runtimePatches=[patch(spec=node_pod_patch(
              {"containers": [{"name": "sidecar", "volumeMounts": [
                  {"name": "v", "mountPath": "/v"}]}]}))]),)),
        C("patch-sidecar-env", "runtimePatches: env on another container is allowed",
          (torch_runtime("side", rjob(containers=[container(), container("sidecar", "busybox")])),
           tj("side", kind="TrainingRuntime", runtimePatches=[patch(spec=node_pod_patch(
               {"containers": [{"name": "sidecar", "env": [{"name": "A", "value": "1"}]}]}))]))),
        C("patch-two-managers", "runtimePatches: two managers applied in order, later wins",
          (tj(runtimePatches=[
              patch("kueue.x-k8s.io/manager", spec=node_pod_patch({"nodeSelector": {"a": "1"}})),
              patch("example.com/user", spec=node_pod_patch({"nodeSelector": {"a": "2", "b": "3"}}),
                    metadata={"labels": {"x": "y"}})]),)),
        C("patch-manager-invalid", "runtimePatches: a manager without a domain is refused (CEL)",
          (tj(runtimePatches=[patch("user", metadata={"labels": {"a": "b"}})]),)),
        C("patch-time-given", "runtimePatches: a time given on create is kept",
          (tj(runtimePatches=[{**patch(metadata={"labels": {"a": "b"}}),
                               "time": "2025-01-02T03:04:05Z"}]),)),
        # v2.0/v2.1 fields (pruned by upstream's v2.3 CRD)
        C("legacy-pod-template-overrides", "v2.1 podTemplateOverrides",
          (tj(podTemplateOverrides=[{"targetJobs": [{"name": "node"}],
                                     "spec": {"nodeSelector": {"a": "b"}}}]),)),
        C("legacy-labels", "v2.0 labels and annotations",
          (tj(labels={"a": "b"}, annotations={"c": "d"}),)),
        C("legacy-numproc-string", "v2.0 numProcPerNode as a string",
          (tj(trainer={"numProcPerNode": "auto"}),)),
        # TrainJob options
        C("suspend", "suspend: a suspended JobSet and the Suspended condition",
          (tj(suspend=True, trainer={"numNodes": 2}),)),
        C("suspend-resume", "suspend then resume: the JobSet follows, Suspended=False/Resumed",
          (tj(suspend=True),), update={"spec": {"suspend": False}}),
        C("suspend-patch-then-resume", "patches changed while suspended reach the JobSet on resume",
          (tj(suspend=True),),
          update={"spec": {"suspend": False, "runtimePatches": [
              patch(spec=node_pod_patch({"nodeSelector": {"late": "yes"}}))]}}),
        C("patch-while-running", "patches changed while running are refused",
          (tj(),), update={"spec": {"runtimePatches": [
              patch(metadata={"labels": {"a": "b"}})]}}),
        C("trainer-immutable", "spec.trainer changed after create is refused (CEL)",
          (tj(trainer={"numNodes": 1}),), update={"spec": {"trainer": {"numNodes": 2}}}),
        C("deadline-pending", "activeDeadlineSeconds not yet reached",
          (tj(activeDeadlineSeconds=3600),)),
        C("deadline-passed", "activeDeadlineSeconds passed: Failed/DeadlineExceeded, JobSet deleted",
          (tj(activeDeadlineSeconds=1),), tags=("slow",)),
        C("managed-by-multikueue", "managedBy multikueue: nothing is created",
          (tj(managedBy="kueue.x-k8s.io/multikueue"),)),
        C("managed-by-invalid", "managedBy another value is refused (CEL)",
          (tj(managedBy="example.com/other"),)),
        C("runtime-missing", "a TrainingRuntime that does not exist is refused",
          (tj("nope", kind="TrainingRuntime"),)),
        C("cluster-runtime-missing", "a ClusterTrainingRuntime that does not exist is refused",
          (tj("nope-cluster-runtime"),)),
        C("runtime-kind-unknown", "an unknown runtimeRef kind is refused",
          (tj("torch-distributed", kind="Foo"),)),
        C("name-too-long", "a TrainJob name over 63 characters is refused (CEL)",
          (tj(name="a" * 64),)),
        C("name-not-rfc1035", "a TrainJob name that is no RFC 1035 label is refused (CEL)",
          (tj(name="1job"),)),
        C("runtime-deprecated", "a deprecated ClusterTrainingRuntime warns on create and use",
          (runtime("old-torch", kind="ClusterTrainingRuntime", ml={"numNodes": 1, "torch": {}},
                   labels={"trainer.kubeflow.org/support": "deprecated"}),
           tj("old-torch"))),
        C("runtime-replicas-2", "a runtime whose trainer job has replicas 2 is refused",
          (torch_runtime("bad", rjob(replicas=2)),)),
        C("runtime-no-node-container", "a runtime whose trainer job lacks container node is refused",
          (torch_runtime("bad", rjob(containers=[container("main")])),)),
        C("runtime-validation-disabled", "webhook-validation: disabled skips the runtime webhook",
          (torch_runtime("unchecked", rjob(replicas=2),
                         labels={"trainer.kubeflow.org/webhook-validation": "disabled"}),
           tj("unchecked", kind="TrainingRuntime"))),
        C("runtime-two-policies", "a runtime with two ML policies is refused (CEL)",
          (runtime("two", ml={"torch": {}, "mpi": {}}),)),
        C("jobset-passthrough", "runtime JobSet fields (failure/success policy, TTL) pass through",
          (torch_runtime("js", jobset={"failurePolicy": {"maxRestarts": 3},
                                       "successPolicy": {"operator": "All"},
                                       "ttlSecondsAfterFinished": 60,
                                       "startupPolicy": {"startupPolicyOrder": "InOrder"}}),
           tj("js", kind="TrainingRuntime", trainer={"numNodes": 2}))),
        # no webhook: what the reconciler does with input no webhook vetted
        C("nowebhook-kind-unknown", "no webhook: an unknown runtimeRef kind",
          (tj("torch-distributed", kind="Foo"),), webhooks=False),
        C("nowebhook-runtime-missing", "no webhook: a TrainingRuntime that does not exist",
          (tj("nope", kind="TrainingRuntime"),), webhooks=False),
        C("nowebhook-cluster-runtime-missing", "no webhook: a ClusterTrainingRuntime that does not exist",
          (tj("nope-cluster-runtime"),), webhooks=False),
        C("nowebhook-reserved-env", "no webhook: a PET_* env in trainer.env",
          (tj(trainer={"env": [{"name": "PET_NNODES", "value": "9"}]}),), webhooks=False),
    ]  # fmt: skip
    return out


def all_cases(module: Path) -> list[Case]:
    cases = upstream_cases(module) + own_cases()
    check(cases)
    return cases


def check(cases: list[Case]) -> None:
    """Names are unique, and no two cases need a ClusterTrainingRuntime of one name."""
    names = [c.name for c in cases]
    dupes = sorted({n for n in names if names.count(n) > 1})
    assert not dupes, f"duplicate case names: {dupes}"
    seen: dict[str, str] = {}
    for case in cases:
        for doc in case.docs:
            if doc.get("kind") != "ClusterTrainingRuntime":
                continue
            n = doc["metadata"]["name"]
            assert n not in seen, (
                f"cases {seen[n]} and {case.name} both define ClusterTrainingRuntime {n}"
            )
            seen[n] = case.name


def placed(doc: Obj, namespace: str) -> Obj:
    """``doc`` ready to create in ``namespace`` (cluster-scoped ones as they are)."""
    out = copy.deepcopy(doc)
    if out.get("kind") != "ClusterTrainingRuntime":
        out.setdefault("metadata", {})["namespace"] = namespace
    return out
