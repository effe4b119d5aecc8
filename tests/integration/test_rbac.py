"""The deployment manifests on the real apiserver, and the controller running with nothing but
their RBAC: it impersonates its ServiceAccount (``system:serviceaccount:trainjob-system:
trainjob-controller``) through a life cycle that makes every kind of call it can make (informers,
snapshots, JobSet apply and delete, MPI Secret and hostfile, status, events and their series,
leader election, the webhook certificate Secret and caBundle injection). Any verb missing from
the ClusterRole or Role shows up as a 403 in its log."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from tests.integration.controller_harness import (
    REPO,
    builtin_runtime,
    conditions,
    start_controller,
    trainjob,
    wait_for,
)

from trainjob.kube import Client
from trainjob.kube import resources as r

if TYPE_CHECKING:
    from tests.integration.conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration
Obj = dict[str, Any]

SA = "system:serviceaccount:trainjob-system:trainjob-controller"
NEVER = {"matchLabels": {"trainjob.dev/never": "true"}}


def kustomize(path: str) -> list[Obj]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (with its built-in kustomize) is not on PATH")
    out = subprocess.run(
        [kubectl, "kustomize", str(REPO / path)], check=True, capture_output=True, text=True
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def _sweep(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "OptimizationJob",
        "metadata": {"name": "sweep", "namespace": namespace},
        "spec": {
            "objectives": [{"metric": "loss"}],
            "parameters": [{"name": "lr", "searchSpace": {"uniform": {"min": "0.1", "max": "1"}}}],
            "trainJobTemplate": {
                "spec": {
                    "runtimeRef": {"name": "torch-distributed"},
                    "trainer": {"args": ["{{.lr}}"]},
                }
            },
        },
    }


def test_the_controller_needs_no_more_than_its_rbac(
    control_plane: ControlPlane, kube: Client, torch_runtime: str, namespace: str, tmp_path: Path
) -> None:
    docs = kustomize("manifests/controller/base")
    by_kind: dict[str, list[Obj]] = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    for kind in (
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
    ):
        for d in by_kind[kind]:
            kube.apply(d, field_manager="trainjob-tests")
    # The webhook configurations, made to match nothing here: the apiserver cannot reach a
    # Service without a cluster network, but the controller still injects their caBundle.
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for d in by_kind[kind]:
            cfg = copy.deepcopy(d)
            for hook in cfg["webhooks"]:
                hook["namespaceSelector"] = NEVER
                hook["objectSelector"] = NEVER
            kube.apply(cfg, field_manager="trainjob-tests")
    # The rest must be valid for this apiserver (schema, defaults): a server-side dry run.
    for kind in ("Deployment", "Service"):
        for d in by_kind[kind]:
            kube.apply(d, field_manager="trainjob-tests", dry_run=True)
    kube.apply(builtin_runtime("mpi-distributed"), field_manager="trainjob-tests")

    kc = yaml.safe_load(Path(control_plane.kubeconfig).read_text())
    for user in kc["users"]:
        user["user"]["as"] = SA
        user["user"]["as-groups"] = [
            "system:serviceaccounts",
            "system:serviceaccounts:trainjob-system",
            "system:authenticated",
        ]
    sa_kubeconfig = tmp_path / "sa.kubeconfig"
    sa_kubeconfig.write_text(yaml.safe_dump(kc))

    ctl = start_controller(
        control_plane,
        "--cert-management", "secret",
        "--webhook-host", "127.0.0.1",
        "--webhook-port", "0",
        "--leader-election-namespace", "trainjob-system",
        "--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "0.5",
        leader_elect=True,
        webhooks=False,
        kubeconfig=sa_kubeconfig,
        env={"POD_NAMESPACE": "trainjob-system"},
    )  # fmt: skip
    try:
        # MPI: SSH Secret (create), hostfile ConfigMap (apply), snapshot, JobSet.
        kube.create(r.TRAINJOBS, trainjob("mpi", namespace, runtime="mpi-distributed"))
        # Suspend then resume: status patches and a JobSet re-apply.
        kube.create(r.TRAINJOBS, trainjob("sus", namespace, suspend=True))
        # A deadline: the JobSet is deleted.
        kube.create(r.TRAINJOBS, trainjob("late", namespace, activeDeadlineSeconds=2))
        # A missing runtime: an event, then its series count.
        kube.create(
            r.TRAINJOBS,
            trainjob("early", namespace, runtimeRef={"name": "absent", "kind": "TrainingRuntime"}),
        )
        # A sweep: an OptimizationJob's trial created (blockOwnerDeletion on its job: the
        # finalizers rule) and its status written.
        kube.create(r.OPTIMIZATION_JOBS, _sweep(namespace), namespace)
        wait_for(lambda: kube.get_or_none(r.JOBSETS, "mpi", namespace), what="MPI JobSet")
        secret = kube.get(r.SECRETS, "mpi-mpi-ssh-auth", namespace)
        assert set(secret["data"]) == {"ssh-privatekey", "ssh-publickey"}
        assert kube.get(r.CONFIGMAPS, "mpi-mpi-hostfile", namespace)["data"]["hostfile"]
        wait_for(lambda: conditions(kube, "sus", namespace).get("Suspended"), what="Suspended")
        kube.patch(r.TRAINJOBS, "sus", {"spec": {"suspend": False}}, namespace)
        wait_for(
            lambda: kube.get(r.JOBSETS, "sus", namespace)["spec"]["suspend"] is False,
            what="resumed JobSet",
        )
        wait_for(
            lambda: conditions(kube, "late", namespace).get("Failed"), timeout=20, what="deadline"
        )
        wait_for(lambda: kube.get_or_none(r.JOBSETS, "late", namespace) is None, what="deleted")

        def series() -> int:
            items, _ = kube.list_all(r.EVENTS, namespace)
            counts = [
                (e.get("series") or {}).get("count", 1)
                for e in items
                if e["reason"] == "TrainJobResourcesCreationFailed"
            ]
            return max(counts, default=0)

        wait_for(lambda: series() >= 2, timeout=30, what="an event series")
        trial = wait_for(lambda: kube.get_or_none(r.TRAINJOBS, "sweep-0", namespace), what="trial")
        assert trial["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is True
        wait_for(
            lambda: (kube.get(r.OPTIMIZATION_JOBS, "sweep", namespace).get("status") or {}).get(
                "trials"
            ),
            what="the sweep's status",
        )
        lease = kube.get(r.LEASES, "trainjob-controller.trainer.kubeflow.org", "trainjob-system")
        assert lease["spec"]["holderIdentity"]
        cert = kube.get(r.SECRETS, "trainjob-webhook-cert", "trainjob-system")
        assert set(cert["data"]) == {"tls.crt", "tls.key", "ca.crt"}
        for res, name in (
            (r.MUTATING_WEBHOOK_CONFIGURATIONS, "trainjob-mutating-webhook-configuration"),
            (r.VALIDATING_WEBHOOK_CONFIGURATIONS, "trainjob-validating-webhook-configuration"),
        ):
            hooks = kube.get(res, name)["webhooks"]
            assert all(h["clientConfig"]["caBundle"] == cert["data"]["ca.crt"] for h in hooks)
        # An RBAC denial reads 'is forbidden: User "..." cannot <verb> resource ...' (other 403s,
        # e.g. writes into namespaces other tests left terminating, are not about RBAC).
        denials = [
            ln for ln in ctl.log().splitlines() if re.search(r'forbidden: User ".*" cannot', ln)
        ]
        assert denials == []
    finally:
        assert ctl.stop() == 0, ctl.log()[-4000:]
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            for d in by_kind[kind]:
                res = (
                    r.MUTATING_WEBHOOK_CONFIGURATIONS
                    if kind.startswith("Mutating")
                    else r.VALIDATING_WEBHOOK_CONFIGURATIONS
                )
                kube.delete(res, d["metadata"]["name"], ignore_not_found=True)
