"""What the cluster tests share: TrainJobs with KWOK outcomes, and the objects the cluster makes
for them (JobSet, Jobs, pods), read through trainjob's kube client."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.integration.controller_harness import wait_for
from trainjob.kube import Client
from trainjob.kube import resources as r

Obj = dict[str, Any]
JOBS = r.Resource("batch", "v1", "jobs", "Job")
API_VERSION = "trainer.kubeflow.org/v1alpha1"
OUTCOME = "trainjob-testenv/outcome"
RUN_FOR = "trainjob-testenv/run-for"
FAIL_ATTEMPTS = "trainjob-testenv/fail-attempts"
# How long a pod is Running before its outcome where a test asserts something while the pods run
# (both Running, the Running condition, suspended mid-run, a second job held while the first
# runs, a page showing Running): the JobSet, Job, TrainJob and Kueue controllers, the scheduler
# and the test's own polls each lag seconds on a loaded CI machine (load 10+), and a few seconds'
# run could end before the test looked.
RUNNING = "25s"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"


def pod_annotations_patch(annotations: dict[str, str], jobs: tuple[str, ...] = ("node",)) -> Obj:
    """A ``runtimePatches`` entry giving the pods of ``jobs`` these annotations (what KWOK reads)."""
    return {
        "manager": "trainjob.tests/kwok",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": job,
                            "template": {
                                "spec": {"template": {"metadata": {"annotations": annotations}}}
                            },
                        }
                        for job in jobs
                    ]
                }
            }
        },
    }


def trainjob(
    name: str,
    runtime: str = "torch-distributed",
    *,
    num_nodes: int | None = 2,
    pods: dict[str, str] | None = None,
    pod_jobs: tuple[str, ...] = ("node",),
    suspend: bool | None = None,
    labels: dict[str, str] | None = None,
    resources: dict[str, Any] | None = None,
) -> Obj:
    spec: Obj = {"runtimeRef": {"name": runtime}}
    trainer: Obj = {}
    if num_nodes is not None:
        trainer["numNodes"] = num_nodes
    if resources:
        trainer["resourcesPerNode"] = {"limits": resources, "requests": resources}
    if trainer:
        spec["trainer"] = trainer
    if pods:
        spec["runtimePatches"] = [pod_annotations_patch(pods, pod_jobs)]
    if suspend is not None:
        spec["suspend"] = suspend
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": API_VERSION, "kind": "TrainJob", "metadata": meta, "spec": spec}


def runtime_from(
    base: Obj, name: str, edit: Callable[[Obj], None], framework: str | None = None
) -> Obj:
    """A ClusterTrainingRuntime ``name``: a copy of ``base`` changed by ``edit``."""
    out = copy.deepcopy(base)
    out["metadata"] = {"name": name, "labels": dict(base["metadata"].get("labels") or {})}
    if framework:
        out["metadata"]["labels"]["trainer.kubeflow.org/framework"] = framework
    edit(out)
    return out


def yaml_docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def replicated_job(runtime: Obj, name: str = "node") -> Obj:
    (rj,) = [j for j in runtime["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == name]
    return dict(rj)


def condition(obj: Obj | None, kind: str) -> Obj | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True":
            return dict(c)
    return None


def get_trainjob(kube: Client, name: str, ns: str) -> Obj:
    return kube.get(r.TRAINJOBS, name, ns)


def jobset(kube: Client, name: str, ns: str) -> Obj | None:
    return kube.get_or_none(r.JOBSETS, name, ns)


def pods(kube: Client, name: str, ns: str) -> list[Obj]:
    items = kube.list(r.PODS, ns, label_selector=f"{JOBSET_NAME_LABEL}={name}").get("items") or []
    return list(items)


def jobs(kube: Client, name: str, ns: str) -> list[Obj]:
    items = kube.list(JOBS, ns, label_selector=f"{JOBSET_NAME_LABEL}={name}").get("items") or []
    return list(items)


def phases(kube: Client, name: str, ns: str) -> list[str]:
    return sorted((p.get("status") or {}).get("phase", "") for p in pods(kube, name, ns))


def wait_condition(kube: Client, name: str, ns: str, kind: str, timeout: float = 120) -> Obj:
    found: Obj = wait_for(
        lambda: condition(get_trainjob(kube, name, ns), kind),
        timeout=timeout,
        interval=0.2,
        what=f"TrainJob {ns}/{name} {kind}",
    )
    return found


class PodWatcher:
    """Every (pod, phase, node) seen while polling, so a test can say what happened in order."""

    def __init__(self, kube: Client, name: str, ns: str) -> None:
        self.kube, self.name, self.ns = kube, name, ns
        self.seen: list[tuple[str, str, str]] = []

    def poll(self) -> list[Obj]:
        current = pods(self.kube, self.name, self.ns)
        for p in current:
            entry = (
                p["metadata"]["name"],
                (p.get("status") or {}).get("phase", ""),
                (p.get("spec") or {}).get("nodeName", ""),
            )
            if entry not in self.seen:
                self.seen.append(entry)
        return current

    def phases_of(self, pod: str) -> list[str]:
        return [phase for name, phase, _ in self.seen if name == pod]

    def until(
        self, done: Callable[[list[Obj]], bool], timeout: float = 120, what: str = ""
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if done(self.poll()):
                return
            time.sleep(0.1)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}; seen: {self.seen}")
