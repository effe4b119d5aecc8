"""Small builders for unit tests: TrainJobs and runtimes from a few keywords, and Plan readers.

Builders return validated API models (through :func:`trainjob.api.load.parse`, as a user's YAML
would be), so a test states only what it is about::

    tj = trainjob("torch-distributed", trainer={"numNodes": 2})
    rt = runtime(ml_policy={"torch": {}}, replicated_jobs=[node_job(container(resources=...))])
    plan = compile(tj, rt)
    env_of(container_of(plan, "node", "node"))["PET_NNODES"] == "2"
"""

from __future__ import annotations

from typing import Any

from trainjob.api import constants as c
from trainjob.api.load import parse
from trainjob.api.trainer import ClusterTrainingRuntime, TrainJob
from trainjob.executor import catalog
from trainjob.runtime.plan import Plan

Obj = dict[str, Any]


def trainjob(
    runtime: str = "torch-distributed",
    *,
    name: str = "job",
    namespace: str = "default",
    trainer: Obj | None = None,
    **spec: Any,
) -> TrainJob:
    """A TrainJob on ``runtime`` (a ClusterTrainingRuntime name); extra keywords go in ``spec``."""
    body: Obj = {"runtimeRef": {"name": runtime}, **spec}
    if trainer is not None:
        body["trainer"] = trainer
    tj = parse(
        {
            "apiVersion": c.API_VERSION,
            "kind": c.TRAINJOB_KIND,
            "metadata": {"name": name, "namespace": namespace},
            "spec": body,
        }
    )
    assert isinstance(tj, TrainJob)
    return tj


def container(name: str = "node", image: str = "trainer:test", **fields: Any) -> Obj:
    """A container dict; ``fields`` are container fields in camelCase (``resources=...``)."""
    return {"name": name, "image": image, **fields}


def node_job(
    *containers: Obj,
    name: str = c.JOB_NODE,
    ancestor: str | None = c.ANCESTOR_TRAINER,
    init_containers: list[Obj] | None = None,
) -> Obj:
    """A replicatedJob with these containers (default: one ``node`` container)."""
    pod_spec: Obj = {"containers": list(containers) or [container()]}
    if init_containers:
        pod_spec["initContainers"] = init_containers
    rjob: Obj = {"name": name, "template": {"spec": {"template": {"spec": pod_spec}}}}
    if ancestor is not None:
        rjob["template"]["metadata"] = {"labels": {c.LABEL_ANCESTOR: ancestor}}
    return rjob


def runtime(
    name: str = "torch-distributed",
    *,
    ml_policy: Obj | None = None,
    replicated_jobs: list[Obj] | None = None,
    pod_group_policy: Obj | None = None,
    annotations: dict[str, str] | None = None,
) -> ClusterTrainingRuntime:
    """A ClusterTrainingRuntime (default: torch policy, one ``node`` job).

    ``annotations`` go on the template's metadata (the JobSet's annotations).
    """
    spec: Obj = {
        "mlPolicy": ml_policy if ml_policy is not None else {"numNodes": 1, "torch": {}},
        "template": {"spec": {"replicatedJobs": replicated_jobs or [node_job()]}},
    }
    if pod_group_policy is not None:
        spec["podGroupPolicy"] = pod_group_policy
    if annotations is not None:
        spec["template"]["metadata"] = {"annotations": annotations}
    rt = parse(
        {
            "apiVersion": c.API_VERSION,
            "kind": c.CLUSTER_TRAINING_RUNTIME_KIND,
            "metadata": {"name": name},
            "spec": spec,
        }
    )
    assert isinstance(rt, ClusterTrainingRuntime)
    return rt


def builtin(name: str) -> ClusterTrainingRuntime:
    """A built-in runtime from manifests/runtimes/."""
    return catalog.builtin_runtimes()[name]


def renamed(rt: ClusterTrainingRuntime, name: str) -> ClusterTrainingRuntime:
    """A copy of ``rt`` under another name (the torchtune model comes from the runtime's name)."""
    doc = rt.to_dict()
    doc["metadata"]["name"] = name
    out = parse(doc)
    assert isinstance(out, ClusterTrainingRuntime)
    return out


def replicated_job(plan: Plan, name: str) -> Obj:
    for rjob in plan.jobset["spec"]["replicatedJobs"]:
        if rjob["name"] == name:
            return rjob  # type: ignore[no-any-return]
    raise AssertionError(f"no replicatedJob {name!r} in the plan")


def pod_spec_of(plan: Plan, job: str) -> Obj:
    return replicated_job(plan, job)["template"]["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def container_of(plan: Plan, job: str, name: str) -> Obj:
    """A container or init container of a replicatedJob in the plan."""
    spec = pod_spec_of(plan, job)
    for ctr in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if ctr["name"] == name:
            return ctr  # type: ignore[no-any-return]
    raise AssertionError(f"no container {name!r} in job {job!r}")


def env_of(ctr: Obj) -> dict[str, Any]:
    """Env name -> value (or the valueFrom dict), in order."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in ctr.get("env") or ()}
