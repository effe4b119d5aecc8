"""A TrainJob's whole life on a real (simulated) cluster, with nothing played by the test:
trainjob's controller makes the JobSet, the JobSet controller its Jobs, kube-controller-manager's
Job controller the pods, kube-scheduler binds them to KWOK nodes, KWOK runs them, and the status
flows back up to the TrainJob. Pods are made to fail or to keep running with the pod annotations
of ``hack/kwok/pod-stages.yaml``, set through the TrainJob's ``runtimePatches``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.cluster import kit
from tests.integration.controller_harness import Controller, builtin_runtime, wait_for
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.cluster.conftest import Cluster

pytestmark = pytest.mark.usefixtures("controller")


def restarting_runtime() -> kit.Obj:
    """torch-distributed whose Jobs fail at their first failed pod, restarted twice by JobSet."""

    def edit(rt: kit.Obj) -> None:
        rt["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 2}
        for rj in rt["spec"]["template"]["spec"]["replicatedJobs"]:
            rj["template"]["spec"]["backoffLimit"] = 0

    return kit.runtime_from(builtin_runtime("torch-distributed"), "test-restarts", edit)


@pytest.fixture(scope="module")
def restarts(cluster: Cluster) -> str:
    cluster.kube.apply(restarting_runtime(), field_manager="trainjob-tests")
    return "test-restarts"


def test_a_trainjob_runs_to_complete_through_jobset_jobs_and_pods(
    cluster: Cluster, ns: str
) -> None:
    kube = cluster.kube
    kube.create(r.TRAINJOBS, kit.trainjob("ddp", num_nodes=2, pods={kit.RUN_FOR: kit.RUNNING}), ns)
    watch = kit.PodWatcher(kube, "ddp", ns)
    watch.until(
        lambda ps: len(ps) == 2 and all(p["status"].get("phase") == "Running" for p in ps),
        what="both pods Running",
    )
    running = kit.get_trainjob(kube, "ddp", ns)
    assert kit.condition(running, "Complete") is None
    js = kit.jobset(kube, "ddp", ns)
    assert js is not None
    owner = js["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("TrainJob", "ddp", True)
    (job,) = kit.jobs(kube, "ddp", ns)  # one replicated job, parallelism 2
    assert job["spec"]["parallelism"] == 2 and job["spec"]["completionMode"] == "Indexed"
    nodes = {p["spec"]["nodeName"] for p in watch.poll()}
    assert nodes <= set(cluster.nodes), nodes  # bound by kube-scheduler to KWOK's nodes

    done = kit.wait_condition(kube, "ddp", ns, "Complete")
    assert done["reason"] == "AllJobsCompleted", done
    final = watch.poll()
    assert sorted(p["status"]["phase"] for p in final) == ["Succeeded", "Succeeded"]
    for pod in final:  # each pod went Running, then Succeeded (KWOK's stages, kit.RUNNING apart)
        seen = watch.phases_of(pod["metadata"]["name"])
        assert "Running" in seen and seen[-1] == "Succeeded", watch.seen
    tj = kit.get_trainjob(kube, "ddp", ns)
    assert tj["status"]["jobsStatus"] == [
        {"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}
    ]
    assert kit.condition(tj, "Failed") is None


def test_a_failing_pod_restarts_the_jobset_until_the_budget_is_spent_then_fails(
    cluster: Cluster, ns: str, restarts: str
) -> None:
    kube = cluster.kube
    kube.create(
        r.TRAINJOBS,
        kit.trainjob("flaky", restarts, num_nodes=2, pods={kit.OUTCOME: "Failed"}),
        ns,
    )
    failed = kit.wait_condition(kube, "flaky", ns, "Failed", timeout=180)
    js = kit.jobset(kube, "flaky", ns)
    assert js is not None
    assert js["status"].get("restarts") == 2, js["status"]
    # the JobSet controller's verdict, copied as it is
    assert failed["reason"] == "ReachedMaxRestarts", failed
    assert "max number of restarts" in failed["message"], failed
    assert kit.condition(kit.get_trainjob(kube, "flaky", ns), "Complete") is None


def test_a_pod_that_fails_once_is_restarted_and_the_job_completes(
    cluster: Cluster, ns: str, restarts: str
) -> None:
    kube = cluster.kube
    # attempt 0 fails; the JobSet restarts it (restart-attempt 1), which succeeds
    kube.create(
        r.TRAINJOBS, kit.trainjob("once", restarts, num_nodes=2, pods={kit.FAIL_ATTEMPTS: "1"}), ns
    )
    done = kit.wait_condition(kube, "once", ns, "Complete", timeout=180)
    assert done["reason"] == "AllJobsCompleted"
    js = kit.jobset(kube, "once", ns)
    assert js is not None and js["status"].get("restarts") == 1, js and js["status"]
    attempts = {
        p["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"]
        for p in kit.pods(kube, "once", ns)
    }
    assert attempts == {"1"}  # the failed attempt's pods are gone


def test_suspend_stops_the_pods_and_resume_runs_the_job_to_complete(
    cluster: Cluster, ns: str
) -> None:
    kube = cluster.kube
    kube.create(r.TRAINJOBS, kit.trainjob("pause", num_nodes=2, suspend=True), ns)
    wait_for(
        lambda: kit.condition(kit.get_trainjob(kube, "pause", ns), "Suspended"), what="Suspended"
    )
    js = wait_for(lambda: kit.jobset(kube, "pause", ns), what="the JobSet")
    assert js["spec"]["suspend"] is True
    wait_for(lambda: kit.jobs(kube, "pause", ns), what="the suspended Jobs")
    assert all(j["spec"]["suspend"] for j in kit.jobs(kube, "pause", ns))
    assert kit.pods(kube, "pause", ns) == []  # a suspended Job makes no pods

    # resume: pods that keep running for a while, so they can be suspended again mid-run
    kube.patch(
        r.TRAINJOBS,
        "pause",
        {
            "spec": {
                "suspend": False,
                "runtimePatches": [kit.pod_annotations_patch({kit.RUN_FOR: kit.RUNNING})],
            }
        },
        ns,
    )
    wait_for(lambda: kit.phases(kube, "pause", ns) == ["Running", "Running"], what="pods Running")
    resumed = kit.get_trainjob(kube, "pause", ns)
    (cond,) = [c for c in resumed["status"]["conditions"] if c["type"] == "Suspended"]
    assert (cond["status"], cond["reason"]) == ("False", "Resumed")

    # suspend while running: the Job controller deletes the pods
    kube.patch(r.TRAINJOBS, "pause", {"spec": {"suspend": True}}, ns)
    wait_for(
        lambda: kit.pods(kube, "pause", ns) == [], timeout=60, what="pods deleted by suspension"
    )
    assert kit.condition(kit.get_trainjob(kube, "pause", ns), "Complete") is None
    kube.patch(r.TRAINJOBS, "pause", {"spec": {"suspend": False}}, ns)
    done = kit.wait_condition(kube, "pause", ns, "Complete", timeout=120)
    assert done["reason"] == "AllJobsCompleted"


def test_deleting_a_trainjob_garbage_collects_everything_it_owns(
    cluster: Cluster, ns: str, controller: Controller
) -> None:
    kube = cluster.kube
    # MPI: a JobSet plus the SSH key Secret and the hostfile ConfigMap; pods that keep running
    # (mpi-distributed runs the launcher as a node: 2 nodes are the launcher and one worker)
    kube.create(
        r.TRAINJOBS,
        kit.trainjob(
            "mpi",
            "mpi-distributed",
            num_nodes=2,
            pods={kit.OUTCOME: "Running"},
            pod_jobs=("launcher", "node"),
        ),
        ns,
    )
    wait_for(
        lambda: (
            len([p for p in kit.pods(kube, "mpi", ns) if p["status"].get("phase") == "Running"])
            == 2
        ),
        timeout=120,
        what="the launcher and the worker Running",
    )
    tj = kit.get_trainjob(kube, "mpi", ns)
    uid = tj["metadata"]["uid"]

    def owned() -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for res in (r.JOBSETS, kit.JOBS, r.PODS, r.CONFIGMAPS, r.SECRETS):
            for item in kube.list(res, ns).get("items") or []:
                refs = item["metadata"].get("ownerReferences") or []
                chain = {ref["uid"] for ref in refs}
                if uid in chain or any(ref["kind"] in ("JobSet", "Job") for ref in refs):
                    out.setdefault(res.kind, []).append(item["metadata"]["name"])
        return out

    before = owned()
    assert set(before) == {"JobSet", "Job", "Pod", "ConfigMap", "Secret"}, before
    assert len(before["Pod"]) == 2 and len(before["Job"]) == 2
    assert "mpi-mpi-hostfile" in before["ConfigMap"] and before["Secret"] == ["mpi-mpi-ssh-auth"]
    kube.delete(r.TRAINJOBS, "mpi", ns)  # background propagation, as kubectl delete
    wait_for(lambda: owned() == {}, timeout=120, what="everything the TrainJob owned collected")
    assert kube.get_or_none(r.TRAINJOBS, "mpi", ns) is None
