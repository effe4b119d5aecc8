"""A sweep on the whole simulated cluster: trainjob's controller runs a 4-trial grid, 2 at a time,
through the real JobSet controller, scheduler, KWOK nodes and garbage collector.

KWOK pods run no code, so the test is the trainer: each trial's pod is held Running (the KWOK
outcome ``Running``), the test posts the trial's loss to the controller's status endpoint with a
token bound to that pod for the trial's audience (what the kubelet projects; the status server
checks it as for a real pod), then turns the pod's outcome to ``Succeeded``, which KWOK plays:
Job, JobSet and TrainJob complete as they would. Asserted: never more than ``parallelTrials``
unfinished trials, the best trial in ``status.result``, and deleting the OptimizationJob
collects every trial (the garbage collector, by their owner references).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import pytest

from tests.cluster import kit
from tests.integration.controller_harness import Controller, wait_for
from tests.integration.test_status_server import Endpoint, _ca, _token
from trainjob.core import times
from trainjob.core import trainerstatus as ts
from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.cluster.conftest import Cluster

Obj = dict[str, Any]
LABEL = "trainer.kubeflow.org/optimization-job"
LOSS = {"a": "0.9", "b": "0.2", "c": "0.5", "d": "0.7"}


def sweep(name: str) -> Obj:
    template = kit.trainjob("unused", num_nodes=1, pods={kit.OUTCOME: "Running"})["spec"]
    template["trainer"]["args"] = ["--opt={{.opt}}"]
    return {
        "apiVersion": kit.API_VERSION,
        "kind": "OptimizationJob",
        "metadata": {"name": name},
        "spec": {
            "objectives": [{"metric": "loss", "direction": "Minimize"}],
            "searchAlgorithm": {"grid": {}},
            "parameters": [
                {"name": "opt", "searchSpace": {"categorical": {"choices": sorted(LOSS)}}}
            ],
            "numTrials": 4,
            "parallelTrials": 2,
            "trainJobTemplate": {"spec": template},
        },
    }


def trials(kube: Client, name: str, ns: str) -> list[Obj]:
    items, _ = kube.list_all(r.TRAINJOBS, ns, label_selector=f"{LABEL}={name}")
    return sorted(items, key=lambda t: str(t["metadata"]["name"]))


def finished(tj: Obj) -> bool:
    return bool(kit.condition(tj, "Complete") or kit.condition(tj, "Failed"))


def play_trainer(kube: Client, endpoint_port: int, trial: Obj) -> None:
    """Report the trial's loss from its running pod, then let the pod succeed."""
    name, ns = trial["metadata"]["name"], trial["metadata"]["namespace"]
    opt = trial["spec"]["trainer"]["args"][0].removeprefix("--opt=")
    pod = wait_for(
        lambda: next(
            (
                p
                for p in kit.pods(kube, name, ns)
                if (p.get("status") or {}).get("phase") == "Running"
            ),
            None,
        ),
        timeout=120,
        what=f"trial {name}'s pod Running",
    )
    jobset = kit.jobset(kube, name, ns)
    assert jobset is not None
    endpoint = Endpoint(endpoint_port, _ca(jobset))
    token = _token(kube, ns, pod, ts.audience(ns, name))
    code, body = endpoint.post(
        ns,
        name,
        token,
        {
            "trainerStatus": {
                "progressPercentage": 100,
                "metrics": [{"name": "loss", "value": LOSS[opt]}],
                "lastUpdatedTime": times.now(),
            }
        },
    )
    assert code == 200, body
    kube.patch(
        r.PODS,
        pod["metadata"]["name"],
        {"metadata": {"annotations": {kit.OUTCOME: "Succeeded"}}},
        ns,
    )


@pytest.mark.cluster
def test_a_grid_sweep_on_the_cluster_two_at_a_time_best_in_status_deleted_with_its_trials(
    cluster: Cluster, controller: Controller, ns: str
) -> None:
    kube = cluster.kube
    port = controller.port("status")
    kube.create(r.OPTIMIZATION_JOBS, sweep("grid"), ns)
    most, stop = [0], threading.Event()

    def sample() -> None:
        while not stop.wait(0.1):
            most[0] = max(most[0], sum(not finished(t) for t in trials(kube, "grid", ns)))

    sampler = threading.Thread(target=sample)
    sampler.start()
    played: set[str] = set()
    try:
        while len(played) < 4:
            todo = wait_for(
                lambda: [
                    t for t in trials(kube, "grid", ns) if t["metadata"]["name"] not in played
                ],
                timeout=120,
                what="a trial to play",
            )
            for t in todo:
                play_trainer(kube, port, t)
                played.add(t["metadata"]["name"])
        done = wait_for(
            lambda: kit.condition(kube.get(r.OPTIMIZATION_JOBS, "grid", ns), "Complete"),
            timeout=180,
            what="the sweep Complete",
        )
    finally:
        stop.set()
        sampler.join()
    assert most[0] <= 2
    assert done["reason"] == "AllTrialsFinished"
    status = kube.get(r.OPTIMIZATION_JOBS, "grid", ns)["status"]
    best = next(t for t in trials(kube, "grid", ns) if t["spec"]["trainer"]["args"] == ["--opt=b"])
    assert status["result"] == {
        "trainJobName": best["metadata"]["name"],
        "parameters": [{"name": "opt", "value": "b"}],
    }
    assert sorted(t["objective"] for t in status["trials"]) == sorted(LOSS.values())

    # Deleted: the garbage collector takes every trial (and their JobSets) by owner reference.
    kube.delete(r.OPTIMIZATION_JOBS, "grid", ns)
    wait_for(lambda: not trials(kube, "grid", ns), timeout=120, what="every trial collected")
    wait_for(
        lambda: not kube.list_all(r.JOBSETS, ns)[0], timeout=120, what="their JobSets collected"
    )
