"""The OptimizationJob reconciler against the real apiserver: the controller makes at most
``parallelTrials`` trial TrainJobs, each owned by the job; a trial that reports its objective and
completes makes room for the next; the best trial ends in ``status.result``; failed trials count
against ``maxFailedTrials``; the median rule stops a trial from the reports the controller's
informer saw; a trial the TrainJob webhook refuses fails the job; the validating webhook refuses a
bad OptimizationJob with the field message the SDK and CLI print; the cluster SweepExecutor (the
SDK's and the CLI's ``--backend kubernetes``) creates, lists, reads events and deletes.

The tests play the trainer and JobSet: they write a trial's ``status.trainerStatus`` (what the
status server writes for a reporting pod) and its JobSet's Completed or Failed condition (what
JobSet's controller writes), as the TrainJob controller's tests do. There is no
kube-controller-manager here, so no garbage collection: deletion is checked by the owner
references that let a cluster's collector take every trial (tests/cluster proves it does).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests.integration.controller_harness import Controller, wait_for

from trainjob.kube import Client
from trainjob.kube import resources as r
from trainjob.kube.errors import ApiError

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration
Obj = dict[str, Any]

LABEL = "trainer.kubeflow.org/optimization-job"
CHOICES = ["a", "b", "c", "d"]
LOSS = {"a": "0.9", "b": "0.2", "c": "0.5", "d": "0.7"}


def sweep(name: str, namespace: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "OptimizationJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "objectives": [{"metric": "loss", "direction": "Minimize"}],
            "searchAlgorithm": {"grid": {}},
            "parameters": [{"name": "opt", "searchSpace": {"categorical": {"choices": CHOICES}}}],
            "numTrials": 4,
            "parallelTrials": 2,
            "trainJobTemplate": {
                "spec": {
                    "runtimeRef": {"name": "torch-distributed"},
                    "trainer": {"args": ["--opt={{.opt}}"]},
                }
            },
            **spec,
        },
    }


def trials(kube: Client, name: str, namespace: str) -> list[Obj]:
    items, _ = kube.list_all(r.TRAINJOBS, namespace, label_selector=f"{LABEL}={name}")
    return sorted(items, key=lambda t: str(t["metadata"]["name"]))


def opt_of(trial: Obj) -> str:
    return str(trial["spec"]["trainer"]["args"][0].removeprefix("--opt="))


def finish(kube: Client, trial: Obj, *, loss: str | None, ok: bool = True) -> None:
    """What a trainer and JobSet would write: a last report, then Completed (or Failed)."""
    name, ns = trial["metadata"]["name"], trial["metadata"]["namespace"]
    if loss is not None:
        kube.patch_status(
            r.TRAINJOBS,
            name,
            ns,
            {
                "trainerStatus": {
                    "progressPercentage": 100,
                    "metrics": [{"name": "loss", "value": loss}],
                    "lastUpdatedTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
            },
        )
    wait_for(lambda: kube.get_or_none(r.JOBSETS, name, ns), what=f"JobSet {name}")
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    condition = (
        {"type": "Completed", "reason": "AllJobsCompleted", "message": "jobset completed"}
        if ok
        else {"type": "Failed", "reason": "FailedJobs", "message": "a job failed"}
    )
    kube.patch_status(
        r.JOBSETS,
        name,
        ns,
        {"conditions": [{**condition, "status": "True", "lastTransitionTime": now}]},
    )
    want = "Complete" if ok else "Failed"
    wait_for(
        lambda: any(
            k["type"] == want and k["status"] == "True"
            for k in (kube.get(r.TRAINJOBS, name, ns).get("status") or {}).get("conditions") or ()
        ),
        what=f"trial {name} {want}",
    )


def condition(kube: Client, name: str, namespace: str, type_: str) -> Obj | None:
    job = kube.get(r.OPTIMIZATION_JOBS, name, namespace)
    for k in (job.get("status") or {}).get("conditions") or ():
        if k["type"] == type_ and k["status"] == "True":
            return dict(k)
    return None


class MostAtOnce:
    """The most unfinished trials seen at once, sampled in the background."""

    def __init__(self, kube: Client, name: str, namespace: str) -> None:
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(kube, name, namespace))
        self._thread.start()

    def _run(self, kube: Client, name: str, namespace: str) -> None:
        while not self._stop.wait(0.05):
            live = [
                t
                for t in trials(kube, name, namespace)
                if not any(
                    k["type"] in ("Complete", "Failed") and k["status"] == "True"
                    for k in (t.get("status") or {}).get("conditions") or ()
                )
            ]
            self.most = max(self.most, len(live))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.most


def test_a_grid_sweep_runs_two_at_a_time_and_ends_with_the_best_trial(
    kube: Client, controller: Controller, namespace: str
) -> None:
    created = kube.create(r.OPTIMIZATION_JOBS, sweep("grid", namespace), namespace)
    at_once = MostAtOnce(kube, "grid", namespace)
    try:
        first = wait_for(
            lambda: len(trials(kube, "grid", namespace)) == 2 and trials(kube, "grid", namespace),
            what="two trials",
        )
        time.sleep(1)  # the controller makes no third while both run
        assert len(trials(kube, "grid", namespace)) == 2
        for t in first:
            owners = t["metadata"]["ownerReferences"]
            assert owners == [
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "OptimizationJob",
                    "name": "grid",
                    "uid": created["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        finish(kube, first[0], loss=LOSS[opt_of(first[0])])
        wait_for(lambda: len(trials(kube, "grid", namespace)) == 3, what="the third trial")
        for t in trials(kube, "grid", namespace)[1:]:
            finish(kube, t, loss=LOSS[opt_of(t)])
        wait_for(lambda: len(trials(kube, "grid", namespace)) == 4, what="the fourth trial")
        finish(
            kube,
            trials(kube, "grid", namespace)[3],
            loss=LOSS[opt_of(trials(kube, "grid", namespace)[3])],
        )
        done = wait_for(lambda: condition(kube, "grid", namespace, "Complete"), what="Complete")
    finally:
        most = at_once.stop()
    assert most <= 2
    assert done["reason"] == "AllTrialsFinished"
    status = kube.get(r.OPTIMIZATION_JOBS, "grid", namespace)["status"]
    best = next(t for t in trials(kube, "grid", namespace) if opt_of(t) == "b")
    assert status["result"] == {
        "trainJobName": best["metadata"]["name"],
        "parameters": [{"name": "opt", "value": "b"}],
    }
    assert sorted(t["parameters"][0]["value"] for t in status["trials"]) == CHOICES
    assert {t["phase"] for t in status["trials"]} == {"Succeeded"}
    assert {t["objective"] for t in status["trials"]} == {"0.9", "0.2", "0.5", "0.7"}

    # Deleted: its trials carry the owner reference a cluster's garbage collector follows, and
    # the controller makes no more of them.
    kube.delete(r.OPTIMIZATION_JOBS, "grid", namespace)
    wait_for(lambda: kube.get_or_none(r.OPTIMIZATION_JOBS, "grid", namespace) is None, what="gone")
    time.sleep(1)
    assert len(trials(kube, "grid", namespace)) == 4


def test_failed_trials_count_against_max_failed_trials(
    kube: Client, controller: Controller, namespace: str
) -> None:
    kube.create(
        r.OPTIMIZATION_JOBS,
        sweep("flaky", namespace, parallelTrials=1, maxFailedTrials=1),
        namespace,
    )
    t0 = wait_for(lambda: trials(kube, "flaky", namespace), what="the first trial")[0]
    finish(kube, t0, loss=None, ok=False)
    t1 = wait_for(
        lambda: len(trials(kube, "flaky", namespace)) == 2 and trials(kube, "flaky", namespace)[1],
        what="a second trial after one failure (the limit is 1)",
    )
    assert condition(kube, "flaky", namespace, "Failed") is None
    finish(kube, t1, loss=None, ok=True)  # completed without the objective: a failure too
    failed = wait_for(lambda: condition(kube, "flaky", namespace, "Failed"), what="Failed")
    assert failed["reason"] == "MaxFailedTrialsExceeded"
    time.sleep(1)
    assert len(trials(kube, "flaky", namespace)) == 2
    status = kube.get(r.OPTIMIZATION_JOBS, "flaky", namespace)["status"]
    assert [t["phase"] for t in status["trials"]] == ["Failed", "Failed"]
    assert "MetricsUnavailable" in status["trials"][1]["reason"]


def test_the_webhook_refuses_a_bad_optimizationjob_with_the_field_message(
    kube: Client, controller: Controller, namespace: str
) -> None:
    bad = sweep("bad", namespace)
    bad["spec"]["trainJobTemplate"]["spec"]["trainer"]["args"] = ["--opt={{.nope}}"]
    with pytest.raises(ApiError) as info:
        kube.create(r.OPTIMIZATION_JOBS, bad, namespace)
    assert str(info.value.message).startswith(
        'admission webhook "validator.optimizationjob.trainer.kubeflow.org" denied the request: '
    )
    assert (
        'spec.trainJobTemplate: Invalid value: "{{.nope}}": names no parameter; '
        "spec.parameters has: opt"
    ) in info.value.message
    assert kube.get_or_none(r.OPTIMIZATION_JOBS, "bad", namespace) is None


def test_the_cluster_sweep_executor_creates_lists_reads_events_and_deletes_with_its_trials(
    kube: Client, controller: Controller, namespace: str
) -> None:
    from trainjob.api.optimization import parse_optimization_job
    from trainjob.cluster.executor import KubernetesExecutor
    from trainjob.cluster.sweeps import KubernetesSweepExecutor
    from trainjob.errors import NotFoundError

    ex = KubernetesSweepExecutor(KubernetesExecutor(kube=kube))
    bad = sweep("sdk", namespace)
    bad["spec"]["trainJobTemplate"]["spec"]["runtimeRef"]["name"] = "no-such-runtime"
    with pytest.raises(NotFoundError, match='"no-such-runtime" not found: the trials'):
        ex.create(parse_optimization_job(bad))  # before anything is made
    job = ex.create(parse_optimization_job(sweep("sdk", namespace)))
    assert job.metadata.uid
    assert [j.metadata.name for j in ex.list(namespace)] == ["sdk"]
    wait_for(lambda: len(trials(kube, "sdk", namespace)) == 2, what="two trials")
    events = wait_for(
        lambda: [e for e in ex.events("sdk", namespace) if e.reason == "TrialCreated"],
        what="TrialCreated events",
    )
    assert events[0].involved_kind == "OptimizationJob"
    assert ex.get("sdk", namespace).status is not None
    ex.delete("sdk", namespace)
    wait_for(lambda: not trials(kube, "sdk", namespace), what="the trials deleted")
    wait_for(lambda: not ex.exists("sdk", namespace), what="the job deleted")


def test_a_trial_the_trainjob_webhook_refuses_fails_the_job_with_its_message(
    kube: Client, controller: Controller, namespace: str
) -> None:
    body = sweep("norun", namespace)
    body["spec"]["trainJobTemplate"]["spec"]["runtimeRef"]["name"] = "no-such-runtime"
    kube.create(r.OPTIMIZATION_JOBS, body, namespace)
    failed = wait_for(lambda: condition(kube, "norun", namespace, "Failed"), what="Failed")
    assert failed["reason"] == "InvalidTrialTemplate"
    assert (
        'ClusterTrainingRuntime.trainer.kubeflow.org "no-such-runtime" not found'
        in (failed["message"])
    )
    assert not trials(kube, "norun", namespace)


def test_the_cli_runs_lists_describes_and_deletes_a_sweep_on_the_cluster(
    kube: Client,
    controller: Controller,
    control_plane: ControlPlane,
    namespace: str,
    tmp_path: Path,
) -> None:
    from tests.integration.test_cli_kubernetes import cli

    manifest = tmp_path / "sweep.yaml"
    manifest.write_text(yaml.safe_dump(sweep("cli", namespace)))
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text("print('loss=0.1')\n")
    # A folder snapshot: the trials find it in S3 only (a ConfigMap is one TrainJob's), so
    # without an s3:// place it is refused before anything is created, with the fix.
    refused = cli(control_plane, "run", "-f", str(manifest), "-n", namespace, "--workdir", str(src))
    assert refused.returncode != 0
    assert "give it an s3:// place (--workdir-uri s3://bucket/prefix" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert kube.get_or_none(r.OPTIMIZATION_JOBS, "cli", namespace) is None
    made = cli(control_plane, "run", "-f", str(manifest), "-n", namespace)
    assert made.returncode == 0, made.stderr
    wait_for(lambda: len(trials(kube, "cli", namespace)) == 2, what="two trials")
    listed = cli(control_plane, "get", "optimizationjobs", "-n", namespace)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split()[0] == "cli"
    described = cli(control_plane, "describe", "optimizationjob", "cli", "-n", namespace)
    assert described.returncode == 0, described.stderr
    assert "cli-0" in described.stdout and "cli-1" in described.stdout
    gone = cli(control_plane, "delete", "optimizationjob", "cli", "-n", namespace)
    assert gone.returncode == 0, gone.stderr
    wait_for(lambda: not trials(kube, "cli", namespace), what="its trials deleted")
    assert kube.get_or_none(r.OPTIMIZATION_JOBS, "cli", namespace) is None


def report(kube: Client, trial: str, namespace: str, step: int, loss: float) -> None:
    """One progress report, as the status server writes it (a new lastUpdatedTime each)."""
    kube.patch_status(
        r.TRAINJOBS,
        trial,
        namespace,
        {
            "trainerStatus": {
                "metrics": [
                    {"name": "loss", "value": str(loss)},
                    {"name": "step", "value": str(step)},
                ],
                "lastUpdatedTime": f"2026-12-04T00:00:{step:02d}.{time.time_ns() % 10**6:06d}Z",
            }
        },
    )
    time.sleep(0.2)  # each its own watch event, as a trainer's reports seconds apart


def test_the_median_rule_stops_a_trial_from_the_reports_the_controller_saw(
    kube: Client, controller: Controller, namespace: str
) -> None:
    kube.create(
        r.OPTIMIZATION_JOBS,
        sweep("es", namespace, numTrials=3, earlyStopping={"median": {"minTrials": 1}}),
        namespace,
    )
    t0, _ = wait_for(
        lambda: (ts := trials(kube, "es", namespace)) and len(ts) == 2 and ts, what="two trials"
    )
    wait_for(lambda: kube.get_or_none(r.JOBSETS, "es-1", namespace), what="trial 1 running")
    for step, loss in ((1, 0.5), (2, 0.4), (3, 0.3)):
        report(kube, "es-0", namespace, step, loss)
    finish(kube, t0, loss=None)  # its last report (0.3) is its objective
    for step in (1, 2, 3):
        report(kube, "es-1", namespace, step, 5.0)
    stopped = wait_for(
        lambda: (tj := kube.get(r.TRAINJOBS, "es-1", namespace))["spec"].get("suspend") and tj,
        what="trial 1 stopped",
    )
    message = stopped["metadata"]["annotations"]["trainer.kubeflow.org/trial-stopped"]
    assert message.startswith("stopped early: its best loss by step")
    status = wait_for(
        lambda: next(
            (
                t
                for t in (kube.get(r.OPTIMIZATION_JOBS, "es", namespace).get("status") or {}).get(
                    "trials"
                )
                or ()
                if t["name"] == "es-1" and t["phase"] == "Stopped"
            ),
            None,
        ),
        what="trial 1 Stopped in the job's status",
    )
    assert status["reason"] == message
