"""The job commands with ``--backend kubernetes`` against a real kube-apiserver and the controller.

``trainjob run|get|describe|logs|suspend|resume|delete`` run as a user runs them (a subprocess,
the test control plane's kubeconfig). trainjob's controller turns the TrainJob into a JobSet; no
JobSet controller or kubelet runs, so the test plays them: it creates the pods a JobSet would and
writes their status, as the controller tests do. What the commands print is checked against what
the cluster holds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.integration.controller_harness import Controller, wait_for

from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration
RESOURCE = "trainjob.trainer.kubeflow.org"

JOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {name}
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 2
    command: [torchrun, train.py]
"""


def cli_env(plane: ControlPlane) -> dict[str, str]:
    """This environment without a cluster or backend choice, and a store of the test's own."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "TRAINJOB_BACKEND")}
    env["TRAINJOB_HOME"] = str(Path(plane.kubeconfig).parent / "cli-home")
    return env


def fail_jobset(kube: Client, name: str, namespace: str) -> None:
    """Write the Failed condition the JobSet controller would, once a Job has failed."""
    failed = {
        "type": "Failed",
        "status": "True",
        "reason": "FailedJobs",
        "message": "jobset failed due to one or more job failures",
        "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    kube.patch_status(r.JOBSETS, name, namespace, {"conditions": [failed]})


def cli(
    plane: ControlPlane, *args: str, backend: str = "kubernetes"
) -> subprocess.CompletedProcess[str]:
    env = cli_env(plane)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "trainjob.cli",
            "--backend",
            backend,
            "--kubeconfig",
            str(plane.kubeconfig),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def pod(
    job: str, index: int, phase: str, exit_code: int | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pod a JobSet's Job would create for node ``index`` of ``job``, and its status."""
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job}-node-0-{index}-abcde",
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": job,
                "jobset.sigs.k8s.io/replicatedjob-name": "node",
                "jobset.sigs.k8s.io/job-index": "0",
                "batch.kubernetes.io/job-completion-index": str(index),
            },
        },
        "spec": {"containers": [{"name": "node", "image": "pytorch/pytorch"}]},
    }
    state: dict[str, Any] = {"running": {"startedAt": "2026-11-30T01:00:00Z"}}
    if exit_code is not None:
        state = {
            "terminated": {
                "exitCode": exit_code,
                "reason": "Error" if exit_code else "Completed",
                "finishedAt": "2026-11-30T01:05:00Z",
            }
        }
    status = {
        "phase": phase,
        "startTime": f"2026-11-30T01:00:0{index}Z",
        "conditions": [{"type": "Ready", "status": "True" if phase == "Running" else "False"}],
        "containerStatuses": [
            {
                "name": "node",
                "image": "pytorch/pytorch",
                "imageID": "",
                "ready": phase == "Running",
                "restartCount": 0,
                "state": state,
            }
        ],
    }
    return obj, status


def make_pod(
    kube: Client, ns: str, job: str, index: int, phase: str, exit_code: int | None = None
) -> None:
    obj, status = pod(job, index, phase, exit_code)
    kube.create(r.PODS, obj, ns)
    kube.patch_status(r.PODS, obj["metadata"]["name"], ns, status)


def test_run_get_describe_suspend_resume_delete_on_the_cluster(
    control_plane: ControlPlane,
    kube: Client,
    controller: Controller,
    namespace: str,
    tmp_path: Path,
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(name="ddp"))

    ran = cli(control_plane, "run", "-f", str(job), "-n", namespace)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["trainjob.trainer.kubeflow.org/ddp created"]
    stored = kube.get(r.TRAINJOBS, "ddp", namespace)
    assert stored["spec"]["trainer"]["numNodes"] == 2
    wait_for(lambda: kube.get_or_none(r.JOBSETS, "ddp", namespace), timeout=90, what="JobSet")

    again = cli(control_plane, "run", "-f", str(job), "-n", namespace)
    assert again.returncode == 1
    assert "already exists" in again.stderr and "--replace" in again.stderr
    assert "Traceback" not in again.stderr

    got = cli(control_plane, "get", "jobs", "-n", namespace)
    assert got.returncode == 0, got.stderr
    header, row = got.stdout.splitlines()
    assert header.split() == [
        "NAME",
        "STATUS",
        "RUNTIME",
        "NODES",
        "RESTARTS",
        "PROGRESS",
        "ETA",
        "AGE",
    ]
    assert row.split()[:5] == ["ddp", "Created", "torch-distributed", "2", "0"]

    make_pod(kube, namespace, "ddp", 0, "Running")
    make_pod(kube, namespace, "ddp", 1, "Failed", exit_code=3)
    got = cli(control_plane, "get", "jobs", "-n", namespace, "-o", "wide")
    cells = got.stdout.splitlines()[1].split()
    assert cells[:2] == ["ddp", "Running"] and cells[8] == "2026-11-30T01:00:00Z", got.stdout

    everywhere = cli(control_plane, "get", "jobs", "-A").stdout.splitlines()
    assert everywhere[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert [namespace, "ddp", "Running"] in [line.split()[:3] for line in everywhere[1:]]

    described = cli(control_plane, "describe", "job", "ddp", "-n", namespace)
    assert described.returncode == 0, described.stderr
    text = described.stdout
    assert "Runtime:    ClusterTrainingRuntime/torch-distributed" in text
    assert "Status:     Running" in text
    steps = [ln.split() for ln in text.splitlines() if ln.strip().startswith("node-")]
    assert steps[0][:5] == ["node-0", "ddp-node-0-0-abcde", "Running", "True", "<none>"]
    assert steps[1][:5] == ["node-1", "ddp-node-0-1-abcde", "Failed", "False", "3"]
    assert "Logs:" not in text  # no local log folder on a cluster

    # no kubelet here, so the apiserver serves an empty log for a pod on no node; the step's pod
    # is found (an unknown step is an error naming the known ones)
    logs = cli(control_plane, "logs", "ddp", "--step", "node-1", "-n", namespace)
    assert (logs.returncode, logs.stderr) == (0, ""), logs.stderr
    missing = cli(control_plane, "logs", "ddp", "--step", "node-7", "-n", namespace)
    assert missing.stderr.strip() == (
        'error: pod node-7 of TrainJob "ddp" not found (pods: node-0, node-1)'
    )

    assert cli(control_plane, "suspend", "ddp", "-n", namespace).stdout.strip() == (
        "trainjob.trainer.kubeflow.org/ddp suspended"
    )
    assert kube.get(r.TRAINJOBS, "ddp", namespace)["spec"]["suspend"] is True
    assert cli(control_plane, "resume", "ddp", "-n", namespace).returncode == 0
    assert kube.get(r.TRAINJOBS, "ddp", namespace)["spec"]["suspend"] is False

    as_json = cli(control_plane, "get", "jobs", "ddp", "-n", namespace, "-o", "json")
    assert json.loads(as_json.stdout)["metadata"]["uid"] == stored["metadata"]["uid"]

    deleted = cli(control_plane, "delete", "ddp", "-n", namespace)
    assert deleted.stdout.strip() == "trainjob.trainer.kubeflow.org/ddp deleted"
    wait_for(
        lambda: kube.get_or_none(r.TRAINJOBS, "ddp", namespace) is None or None,
        timeout=90,
        what="deletion",
    )


def test_a_trainjob_the_cluster_refuses_is_one_kubectl_style_error(
    control_plane: ControlPlane, controller: Controller, namespace: str, tmp_path: Path
) -> None:
    # valid as a document, refused by the cluster: its runtime is a TrainingRuntime that the
    # namespace does not have (trainjob's admission webhook checks the reference)
    job = tmp_path / "bad.yaml"
    job.write_text(
        JOB.format(name="bad").replace(
            "    name: torch-distributed", "    name: nowhere\n    kind: TrainingRuntime"
        )
    )
    ran = cli(control_plane, "run", "-f", str(job), "-n", namespace)
    assert ran.returncode == 1, ran.stdout
    assert ran.stderr.startswith("error: ") or ran.stderr.startswith("The TrainJob"), ran.stderr
    assert "nowhere" in ran.stderr and "Traceback" not in ran.stderr
    assert len(ran.stderr.strip().splitlines()) <= 2, ran.stderr


def test_the_same_commands_stay_on_this_machine_without_the_flag(
    control_plane: ControlPlane, namespace: str
) -> None:
    local = cli(control_plane, "get", "jobs", "-n", namespace, backend="local")
    assert local.returncode == 0
    assert local.stderr.strip() == f"No resources found in {namespace} namespace."


def test_run_wait_ends_with_the_cluster_s_verdict(
    control_plane: ControlPlane,
    kube: Client,
    controller: Controller,
    namespace: str,
    tmp_path: Path,
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(name="waited"))
    env = cli_env(control_plane)
    env["TRAINJOB_BACKEND"] = "kubernetes"  # the env var selects the backend as --backend does
    env["KUBECONFIG"] = str(control_plane.kubeconfig)
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainjob.cli", "run", "-f", str(job), "-n", namespace, "--wait"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        wait_for(lambda: kube.get_or_none(r.JOBSETS, "waited", namespace), 90, what="JobSet")
        make_pod(kube, namespace, "waited", 0, "Failed", exit_code=2)
        fail_jobset(kube, "waited", namespace)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1, stdout + stderr
    assert stdout == "trainjob.trainer.kubeflow.org/waited created\n"
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: trainjob.trainer.kubeflow.org/waited Failed")
    # the JobSet's reason, then the failure triage's step, rank and exit code (executor/triage)
    assert (
        "FailedJobs: jobset failed due to one or more job failures; step node-0 (rank 0) failed "
        "first: exit code 2"
    ) in last

    # a pod that never left Pending, of a job that has ended: logs -f returns instead of waiting
    kube.create(r.PODS, pod("waited", 1, "Pending")[0], namespace)
    followed = cli(control_plane, "logs", "waited", "--step", "node-1", "-f", "-n", namespace)
    assert followed.returncode == 0 and "Traceback" not in followed.stderr, followed.stderr


def test_field_errors_are_found_before_anything_is_sent(
    control_plane: ControlPlane, kube: Client, torch_runtime: str, namespace: str, tmp_path: Path
) -> None:
    # the torch runtime reserves PET_* envs: the runtime is read from the cluster and the
    # TrainJob checked against it here, so even a cluster without trainjob's webhook is spared it
    job = tmp_path / "reserved.yaml"
    job.write_text(
        JOB.format(name="reserved") + "    env:\n      - name: PET_NNODES\n        value: '3'\n"
    )
    ran = cli(control_plane, "run", "-f", str(job), "-n", namespace)
    assert ran.returncode == 1
    assert ran.stderr.startswith('The TrainJob "reserved" is invalid: spec.trainer.env'), ran.stderr
    assert "PET_NNODES" in ran.stderr and "Traceback" not in ran.stderr
    assert kube.get_or_none(r.TRAINJOBS, "reserved", namespace) is None


def test_run_follow_of_a_job_that_fails_before_any_pod_ends_with_the_reason(
    control_plane: ControlPlane,
    kube: Client,
    controller: Controller,
    namespace: str,
    tmp_path: Path,
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(name="nopods"))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainjob.cli",
            "--backend",
            "kubernetes",
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "run",
            "-f",
            str(job),
            "-n",
            namespace,
            "--follow",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(control_plane),
    )
    said: list[str] = []
    assert proc.stderr is not None
    reader = threading.Thread(target=lambda: said.extend(proc.stderr or ()), daemon=True)
    reader.start()
    try:
        wait_for(lambda: kube.get_or_none(r.JOBSETS, "nopods", namespace), 90, what="JobSet")
        # the JobSet fails once the CLI has shown the job's progress while no pod exists (else
        # its first look may already see Failed)
        wait_for(lambda: any("nopods: Created" in line for line in said), 90, what="progress")
        fail_jobset(kube, "nopods", namespace)
        stdout = proc.stdout.read() if proc.stdout else ""
        proc.wait(timeout=60)
        reader.join(timeout=10)
    finally:
        proc.kill()
    stderr = "".join(said)
    assert proc.returncode == 1, stdout + stderr
    assert (
        stderr.strip()
        .splitlines()[-1]
        .startswith("error: trainjob.trainer.kubeflow.org/nopods Failed")
    ), stderr
    assert "nopods: Created" in stderr  # progress while no pod exists


LABELLED = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: {name}
  labels:
    team: {team}
spec:
  runtimeRef:
    name: torch-distributed
  suspend: {suspend}
  trainer:
    numNodes: 1
    command: [torchrun, train.py]
"""


def test_kubectl_habits_on_the_cluster(
    control_plane: ControlPlane,
    kube: Client,
    controller: Controller,
    namespace: str,
    tmp_path: Path,
) -> None:
    """``apply -f`` (created, unchanged, configured, refused), ``get -l``, ``--sort-by``,
    ``--no-headers``, ``-o jsonpath=``, ``get TYPE/NAME``, ``describe runtime`` and ``delete
    -l|-f|--all`` against a real apiserver: the objects it holds, the server's defaults and
    all."""

    def ok(*args: str) -> str:
        out = cli(control_plane, *args, "-n", namespace)
        assert out.returncode == 0, f"{args}: {out.stderr}"
        return out.stdout

    files = {}
    for name, team in (("b", "ml"), ("a", "infra"), ("c", "ml")):
        files[name] = tmp_path / f"{name}.yaml"
        files[name].write_text(LABELLED.format(name=name, team=team, suspend="true"))
        assert ok("apply", "-f", str(files[name])) == f"{RESOURCE}/{name} created\n"
    assert ok("apply", "-f", str(files["a"])) == f"{RESOURCE}/a unchanged\n"
    wait_for(lambda: kube.get_or_none(r.JOBSETS, "a", namespace), timeout=90, what="JobSet")
    files["a"].write_text(LABELLED.format(name="a", team="infra", suspend="false"))
    assert ok("apply", "-f", str(files["a"])) == f"{RESOURCE}/a configured\n"
    assert kube.get(r.TRAINJOBS, "a", namespace)["spec"]["suspend"] is False
    files["a"].write_text(LABELLED.format(name="a", team="infra", suspend="false").replace(
        "numNodes: 1", "numNodes: 3"))  # fmt: skip
    refused = cli(control_plane, "apply", "-f", str(files["a"]), "-n", namespace)
    assert refused.returncode == 1 and "spec.trainer.numNodes: Forbidden" in refused.stderr

    assert ok("get", "jobs", "-l", "team=ml", "-o", "name").split() == [
        f"{RESOURCE}/b",
        f"{RESOURCE}/c",
    ]
    rows = ok("get", "jobs", "--sort-by", ".metadata.name", "--no-headers").splitlines()
    assert [row.split()[0] for row in rows] == ["a", "b", "c"]
    # the listing's order: creation time (whole seconds, RFC 3339), then name; b, a and c were
    # created in that order, in one second or several (a fast CLI makes ties the common case)
    listed = sorted(
        kube.list(r.TRAINJOBS, namespace)["items"],
        key=lambda o: (o["metadata"]["creationTimestamp"], o["metadata"]["name"]),
    )
    teams = " ".join(o["metadata"]["labels"]["team"] for o in listed)
    assert sorted(teams.split()) == ["infra", "ml", "ml"]
    assert ok("get", "jobs", "-o", "jsonpath={.items[*].metadata.labels.team}") == teams
    assert ok("get", "trainjob/a", "-o", "jsonpath={.spec.suspend}") == "false"
    one = json.loads(ok("get", "jobs", "-l", "team=infra", "-o", "json"))
    assert one["kind"] == "List" and [i["metadata"]["name"] for i in one["items"]] == ["a"]
    assert "MLPolicy:" in ok("describe", "runtime", "torch-distributed")

    assert ok("delete", "-l", "team=infra") == f"{RESOURCE}/a deleted\n"
    assert ok("delete", "-f", str(files["b"])) == f"{RESOURCE}/b deleted\n"
    assert ok("delete", "--all") == f"{RESOURCE}/c deleted\n"
    wait_for(
        lambda: not kube.list(r.TRAINJOBS, namespace)["items"], timeout=90, what="no TrainJobs"
    )
