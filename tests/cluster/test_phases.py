"""trainjob's phase conditions and the resume env on the whole simulated cluster: the real JobSet
controller, Job controller, scheduler and KWOK pods move the TrainJob through suspend, resume,
a JobSet restart and a failure, and the controller's conditions follow (``trainjob.api.phases``);
a restarted pod carries ``$TRAINJOB_RESTART_ATTEMPT`` from its restart-attempt annotation."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest

from tests.cluster import kit
from tests.integration.controller_harness import builtin_runtime, wait_for
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.cluster.conftest import Cluster

pytestmark = pytest.mark.usefixtures("controller")
PHASES = ("Queued", "Initializing", "Running", "Restarting")
Obj = dict[str, Any]


def _conditions(cluster: Cluster, name: str, ns: str) -> list[Obj]:
    tj = kit.get_trainjob(cluster.kube, name, ns)
    return list((tj.get("status") or {}).get("conditions") or [])


def _watch(cluster: Cluster, name: str, ns: str, until: str, timeout: float = 150) -> list[str]:
    """Each phase condition the TrainJob carried ("type/reason", "-" for none), in order, until
    its ``until`` condition is True; returns them."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conds = _conditions(cluster, name, ns)
        now = [f"{c['type']}/{c['reason']}" for c in conds if c["type"] in PHASES]
        assert len(now) <= 1, conds
        entry = now[0] if now else "-"
        if not seen or seen[-1] != entry:
            seen.append(entry)
        if any(c["type"] == until and c["status"] == "True" for c in conds):
            return seen
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {until}; seen {seen}")


def test_queued_then_running_after_the_resume_then_upstreams_conditions(
    cluster: Cluster, ns: str
) -> None:
    kube = cluster.kube
    kube.create(
        r.TRAINJOBS,
        kit.trainjob("life", num_nodes=2, suspend=True, pods={kit.RUN_FOR: kit.RUNNING}),
        ns,
    )
    wait_for(
        lambda: [c["type"] for c in _conditions(cluster, "life", ns)] == ["Suspended", "Queued"],
        timeout=60,
        what="Suspended and Queued",
    )
    kube.patch(r.TRAINJOBS, "life", {"spec": {"suspend": False}}, ns)
    seen = _watch(cluster, "life", ns, "Complete")
    # the pods ran (KWOK: Running, then Succeeded kit.RUNNING later): Running while both ran, written
    # because the resumed TrainJob has Suspended=False (upstream shows only that meanwhile)
    assert "Running/AllTrainerPodsRunning" in seen, seen
    assert seen[0] in ("Queued/Suspended", "-") and seen[-1] == "-", seen
    final = [(c["type"], c["status"]) for c in _conditions(cluster, "life", ns)]
    assert final == [("Suspended", "False"), ("Complete", "True")], "upstream's, exactly"


def warmup_runtime() -> Obj:
    """torch-distributed with a ``warmup`` job the trainer depends on, so the trainer's pods wait
    for it after a JobSet restart; restarted once; each Job fails at its first failed pod."""

    def edit(rt: Obj) -> None:
        spec = rt["spec"]["template"]["spec"]
        spec["failurePolicy"] = {"maxRestarts": 1}
        (node,) = spec["replicatedJobs"]
        node["template"]["spec"]["backoffLimit"] = 0
        warmup = kit.replicated_job(rt)
        warmup = {**warmup, "name": "warmup"}
        warmup["template"] = {
            **warmup["template"],
            "metadata": {},
            "spec": {**warmup["template"]["spec"], "backoffLimit": 0},
        }
        node["dependsOn"] = [{"name": "warmup", "status": "Complete"}]
        spec["replicatedJobs"] = [warmup, node]

    return kit.runtime_from(builtin_runtime("torch-distributed"), "test-warmup", edit)


def _annotations_patch(per_job: dict[str, dict[str, str]]) -> Obj:
    rjs = [
        {"name": job, "template": {"spec": {"template": {"metadata": {"annotations": a}}}}}
        for job, a in per_job.items()
    ]
    return {
        "manager": "trainjob.tests/kwok",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": rjs}}},
    }


def test_restarting_after_a_jobset_restart_with_the_attempt_in_the_env_then_failed(
    cluster: Cluster, ns: str
) -> None:
    kube = cluster.kube
    kube.apply(warmup_runtime(), field_manager="trainjob-tests")
    job = kit.trainjob("flaky", "test-warmup", num_nodes=1)
    # warmup runs 8 s (Restarting holds meanwhile, for the poll to see) and succeeds; the trainer
    # fails on attempts 0 and 1: one restart, then the budget is spent
    job["spec"]["runtimePatches"] = [
        _annotations_patch(
            {"warmup": {kit.RUN_FOR: "8s"}, "node": {kit.FAIL_ATTEMPTS: "2", kit.RUN_FOR: "1s"}}
        )
    ]
    kube.create(r.TRAINJOBS, job, ns)
    restarted: list[Obj] = []

    def trainer_of_attempt_1() -> bool:
        for p in kit.pods(kube, "flaky", ns):
            labels = p["metadata"].get("labels") or {}
            if (
                labels.get("jobset.sigs.k8s.io/replicatedjob-name") == "node"
                and labels.get("jobset.sigs.k8s.io/restart-attempt") == "1"
            ):
                restarted.append(p)
                return True
        return False

    seen = _watch(cluster, "flaky", ns, "Failed", timeout=180)
    assert "Restarting/JobSetRestarting" in seen, seen
    assert not any(s.startswith("Running") for s in seen), "never suspended: no Running condition"
    assert seen[-1] == "-", seen
    failed = kit.condition(kit.get_trainjob(kube, "flaky", ns), "Failed")
    assert failed is not None and failed["reason"] == "ReachedMaxRestarts", failed
    assert [c["type"] for c in _conditions(cluster, "flaky", ns)] == ["Failed"]

    # the restarted trainer pod's env: the attempt from its own annotation (downward API)
    wait_for(trainer_of_attempt_1, timeout=10, what="the trainer pod of attempt 1")
    pod = restarted[-1]
    assert pod["metadata"]["annotations"]["jobset.sigs.k8s.io/restart-attempt"] == "1"
    (ctr,) = [c for c in pod["spec"]["containers"] if c["name"] == "node"]
    env = {e["name"]: e for e in ctr.get("env") or ()}
    assert env["TRAINJOB_RESTART_ATTEMPT"]["valueFrom"] == {
        "fieldRef": {
            "apiVersion": "v1",
            "fieldPath": "metadata.annotations['jobset.sigs.k8s.io/restart-attempt']",
        }
    }
    assert "TRAINJOB_CHECKPOINT_DIR" not in env, "no volume that outlives the pod"
