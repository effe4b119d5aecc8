"""Documents and helpers shared by the CRD tests (unit: test_crd.py; integration: test_crds.py).

``prune`` and ``apply_defaults`` restate what the apiserver does to an object with a CRD schema
(drop unknown fields unless ``x-kubernetes-preserve-unknown-fields``; fill ``default`` s), so unit
tests can check documents against the generated schemas; the integration test checks the same
documents on a real apiserver.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from trainjob.api.load import load_documents

REPO = Path(__file__).resolve().parents[3]
Obj = dict[str, Any]


def prune(obj: Any, schema: Obj, root: bool = True) -> Any:
    """What the apiserver would store of ``obj`` after pruning unknown fields."""
    if isinstance(obj, dict):
        if root:
            return {
                k: (
                    v
                    if k in ("apiVersion", "kind", "metadata")
                    else prune(v, schema["properties"][k], False)
                )
                for k, v in obj.items()
                if k in schema["properties"]
            }
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        keep = schema.get("x-kubernetes-preserve-unknown-fields") is True
        out = {}
        for k, v in obj.items():
            if k in props:
                out[k] = prune(v, props[k], False)
            elif isinstance(extra, dict):
                out[k] = prune(v, extra, False)
            elif keep:
                out[k] = v
        return out
    if isinstance(obj, list) and isinstance(schema.get("items"), dict):
        return [prune(v, schema["items"], False) for v in obj]
    return obj


def apply_defaults(obj: Any, schema: Obj) -> Any:
    """What the apiserver would default in ``obj`` (CRD ``default`` keywords)."""
    if isinstance(obj, dict):
        out = dict(obj)
        for k, prop in schema.get("properties", {}).items():
            if k not in out and "default" in prop:
                out[k] = copy.deepcopy(prop["default"])
            if k in out:
                out[k] = apply_defaults(out[k], prop)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            out = {k: apply_defaults(v, extra) for k, v in out.items()}
        return out
    if isinstance(obj, list) and isinstance(schema.get("items"), dict):
        return [apply_defaults(v, schema["items"]) for v in obj]
    return obj


def is_subset(small: Any, big: Any, path: str = "") -> list[str]:
    """Paths where ``small`` has something ``big`` lacks or has differently."""
    if isinstance(small, dict) and isinstance(big, dict):
        return [
            m for k, v in small.items() for m in is_subset(v, big.get(k, _MISSING), f"{path}.{k}")
        ]
    if isinstance(small, list) and isinstance(big, list) and len(small) == len(big):
        return [
            m
            for i, (a, b) in enumerate(zip(small, big, strict=True))
            for m in is_subset(a, b, f"{path}[{i}]")
        ]
    return [] if small == big else [f"{path}: {small!r} != {big!r}"]


_MISSING = object()
PLURAL_OF = {
    "TrainJob": "trainjobs",
    "TrainingRuntime": "trainingruntimes",
    "ClusterTrainingRuntime": "clustertrainingruntimes",
    "OptimizationJob": "optimizationjobs",
}

UPSTREAM_STYLE_DOCS = """
# v2.3: everything a TrainJob can say, status included.
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: llm-finetune, namespace: default, labels: {team: a}}
spec:
  runtimeRef: {name: torchtune-llama3.2-1b, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}
  initializer:
    dataset:
      storageUri: hf://tatsu-lab/alpaca
      env: [{name: IGNORE_PATTERNS, value: "*.bin"}]
      secretRef: {name: hf-token}
    model: {storageUri: "hf://meta-llama/Llama-3.2-1B-Instruct"}
  trainer:
    image: ghcr.io/kubeflow/trainer/torchtune-trainer
    command: [tune, run]
    args: [epochs=1, batch_size=4]
    numNodes: 1
    numProcPerNode: 2
    resourcesPerNode:
      requests: {cpu: "4", memory: 16Gi}
      limits: {nvidia.com/gpu: 2}
    env:
      - {name: HF_HOME, value: /tmp}
      - name: POD_NAME
        valueFrom: {fieldRef: {fieldPath: metadata.name}}
  runtimePatches:
    - manager: kueue.x-k8s.io/manager
      time: "2026-01-01T00:00:00Z"
      trainingRuntimeSpec:
        template:
          metadata: {labels: {kueue.x-k8s.io/queue-name: q}}
          spec:
            replicatedJobs:
              - name: node
                template:
                  metadata: {labels: {x: y}}
                  spec:
                    template:
                      metadata: {annotations: {a: b}}
                      spec:
                        serviceAccountName: trainer
                        nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
                        affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: In, values: [v]}]}]}}}
                        tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
                        schedulingGates: [{name: kueue.x-k8s.io/admission}]
                        imagePullSecrets: [{name: regcred}]
                        securityContext: {fsGroup: 1000}
                        volumes: [{name: cache, emptyDir: {sizeLimit: 1Gi}}]
                        initContainers: [{name: warmup, env: [{name: A, value: "1"}]}]
                        containers:
                          - name: sidecar
                            env: [{name: X, value: "1"}]
                            volumeMounts: [{name: cache, mountPath: /cache, readOnly: true}]
                            securityContext: {runAsUser: 1000}
                        terminationGracePeriodSeconds: 30
  suspend: true
  activeDeadlineSeconds: 3600
  managedBy: kueue.x-k8s.io/multikueue
status:
  conditions:
    - {type: Suspended, status: "True", reason: Suspended, message: TrainJob is suspended, lastTransitionTime: "2026-01-01T00:00:00Z"}
  jobsStatus:
    - {name: node, ready: 0, succeeded: 0, failed: 0, active: 0, suspended: 1}
  trainerStatus:
    progressPercentage: 10
    estimatedRemainingSeconds: 60
    metrics: [{name: loss, value: "0.5"}]
    lastUpdatedTime: "2026-01-01T00:00:00Z"
---
# v2.0: labels/annotations/podSpecOverrides and a string numProcPerNode.
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: v20-job}
spec:
  runtimeRef: {name: torch-distributed}
  labels: {a: b}
  annotations: {c: d}
  trainer: {numNodes: 2, numProcPerNode: auto}
  podSpecOverrides:
    - targetJobs: [{name: node}]
      serviceAccountName: sa
      nodeSelector: {disk: ssd}
      tolerations: [{key: k, operator: Exists}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
      containers: [{name: node, volumeMounts: [{name: data, mountPath: /data}]}]
---
# v2.1: podTemplateOverrides.
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: v21-job}
spec:
  runtimeRef: {name: torch-distributed}
  podTemplateOverrides:
    - targetJobs: [{name: node}]
      metadata: {labels: {l: v}}
      spec:
        serviceAccountName: sa
        schedulingGates: [{name: gate}]
        containers: [{name: node, env: [{name: E, value: v}]}]
---
# An MPI runtime shaped like upstream's deepspeed-distributed, with gang scheduling.
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: deepspeed-distributed
  labels: {trainer.kubeflow.org/framework: deepspeed}
spec:
  mlPolicy:
    numNodes: 1
    mpi: {numProcPerNode: 1, mpiImplementation: OpenMPI, sshAuthMountPath: /home/mpiuser/.ssh, runLauncherAsNode: true}
  podGroupPolicy:
    coscheduling: {scheduleTimeoutSeconds: 120}
  template:
    metadata: {labels: {l: v}}
    spec:
      network: {publishNotReadyAddresses: true}
      successPolicy: {operator: All, targetReplicatedJobs: [launcher]}
      failurePolicy: {maxRestarts: 3, restartStrategy: Recreate}
      replicatedJobs:
        - name: node
          replicas: 1
          template:
            spec:
              template:
                spec:
                  securityContext: {fsGroup: 1000}
                  containers:
                    - name: node
                      image: ghcr.io/kubeflow/trainer/deepspeed-runtime
                      command: [/usr/sbin/sshd, -De, -f, /home/mpiuser/.sshd_config]
                      readinessProbe: {tcpSocket: {port: 2222}, initialDelaySeconds: 5}
                      securityContext: {runAsUser: 1000}
        - name: launcher
          replicas: 1
          dependsOn: [{name: node, status: Ready}]
          template:
            metadata:
              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: ghcr.io/kubeflow/trainer/deepspeed-runtime
                      ports: [{containerPort: 2222, protocol: TCP}]
                      resources: {limits: {cpu: "500m", memory: 1Gi}}
---
# v2.0 torch runtime (string numProcPerNode) with Volcano and envInjection.
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: torch-volcano, namespace: default}
spec:
  mlPolicy:
    numNodes: 2
    torch:
      numProcPerNode: auto
      envInjection:
        targets: [{jobName: node, containerNames: [preflight]}]
  podGroupPolicy:
    volcano: {networkTopology: {mode: soft, highestTierAllowed: 2}}
  template:
    spec:
      volumeClaimPolicies:
        - templates: [{metadata: {name: initializer}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 20Gi}}}}]
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
            spec:
              template:
                spec:
                  initContainers: [{name: preflight, image: busybox}]
                  containers: [{name: node, image: pytorch/pytorch}]
---
# KEP 2605's example (upstream main after v2.3), status included.
apiVersion: trainer.kubeflow.org/v1alpha1
kind: OptimizationJob
metadata: {name: random-tuning-mvp, namespace: default}
spec:
  objectives: [{metric: "eval_loss", direction: "Minimize"}]
  searchAlgorithm: {random: {}}
  parameters:
    - name: "learning_rate"
      searchSpace: {logUniform: {min: "0.0001", max: "0.1"}}
    - name: "batch_size"
      searchSpace: {categorical: {choices: ["16", "32", "64"]}}
  numTrials: 20
  parallelTrials: 4
  trainJobTemplate:
    spec:
      runtimeRef: {name: pytorch-distributed, apiGroup: trainer.kubeflow.org, kind: ClusterTrainingRuntime}
      trainer:
        image: docker.io/my-org/bert-tuner:latest
        command: ["python", "train.py"]
status:
  conditions:
    - {type: Complete, status: "True", reason: MaxTrialsReached, message: "", lastTransitionTime: "2026-01-01T00:00:00Z"}
  result:
    trainJobName: "random-tuning-mvp-trial-ab12c"
    parameters: [{name: learning_rate, value: "0.0021"}, {name: batch_size, value: "32"}]
---
# Every field of trainjob's additions, and placeholders in the template.
apiVersion: trainer.kubeflow.org/v1alpha1
kind: OptimizationJob
metadata: {name: tpe-sweep, namespace: default}
spec:
  objectives: [{metric: accuracy, direction: Maximize}]
  searchAlgorithm: {tpe: {seed: 42}}
  parameters:
    - {name: lr, searchSpace: {logUniform: {min: "1e-5", max: "1e-2"}}}
    - {name: layers, searchSpace: {uniform: {min: "1", max: "8", type: Int}}}
    - {name: dropout, searchSpace: {uniform: {min: "0", max: "0.5"}}}
  numTrials: 10
  parallelTrials: 2
  maxFailedTrials: 3
  earlyStopping: {median: {minTrials: 2, startStep: 5}}
  trainJobTemplate:
    metadata: {labels: {team: a}, annotations: {note: "lr {{.lr}}"}}
    spec:
      runtimeRef: {name: torch-distributed}
      trainer: {args: ["--lr={{.lr}}", "--layers={{.layers}}", "--dropout={{ .dropout }}"]}
status:
  conditions:
    - {type: Created, status: "True", reason: TrialsCreated, message: m, lastTransitionTime: "2026-01-01T00:00:00Z"}
  trials:
    - name: tpe-sweep-0
      parameters: [{name: lr, value: "0.001"}, {name: layers, value: "2"}, {name: dropout, value: "0.1"}]
      phase: Stopped
      objective: "0.5"
      reason: stopped early
"""


def documents() -> list[tuple[str, Obj]]:
    """(id, manifest) for every TrainJob/runtime/OptimizationJob in examples/ and
    manifests/runtimes/, and above."""
    files = sorted((REPO / "examples").glob("*.yaml")) + sorted(
        (REPO / "manifests" / "runtimes").glob("*.yaml")
    )
    docs = [
        (f"{f.relative_to(REPO)}#{i}", doc)
        for f in files
        for i, doc in enumerate(load_documents(f.read_text(), str(f)))
        if isinstance(doc, dict) and doc.get("kind") in PLURAL_OF
    ]
    return docs + [
        (f"upstream-style {d['kind']} {d['metadata']['name']}", d)
        for d in yaml.safe_load_all(UPSTREAM_STYLE_DOCS)
    ]


CEL_CASES: list[Obj] = yaml.safe_load((Path(__file__).parent / "cel_cases.yaml").read_text())


def complete(kind: str, obj: Obj) -> Obj:
    """A case's object as a full manifest (TrainJobs get a runtimeRef unless they name one;
    OptimizationJobs an objective, a parameter and a template)."""
    out = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind, **copy.deepcopy(obj)}
    if kind == "TrainJob":
        out["spec"].setdefault("runtimeRef", {"name": "torch-distributed"})
    if kind == "OptimizationJob":
        spec = out["spec"]
        spec.setdefault("objectives", [{"metric": "loss"}])
        spec.setdefault(
            "parameters",
            [{"name": "lr", "searchSpace": {"logUniform": {"min": "1e-4", "max": "0.1"}}}],
        )
        spec.setdefault("trainJobTemplate", {"spec": {"runtimeRef": {"name": "torch-distributed"}}})
    return out
