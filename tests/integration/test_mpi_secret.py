"""The MPI SSH Secret: made once, kept through re-reconciles, resume and a controller restart
(the controller never reads Secrets: a second key pair is refused with AlreadyExists), made
again when deleted while the TrainJob is suspended; and the private key appears in no log line
(at DEBUG), no Event and no status, also when creating the Secret is refused (by a
ValidatingAdmissionPolicy)."""

from __future__ import annotations

import base64
import time
from typing import TYPE_CHECKING, Any

import pytest
from tests.integration.controller_harness import (
    Controller,
    builtin_runtime,
    conditions,
    start_controller,
    trainjob,
    wait_for,
)

from trainjob.kube import Client
from trainjob.kube import resources as r
from trainjob.kube.errors import ApiError
from trainjob.kube.resources import Resource

if TYPE_CHECKING:
    from conftest import ControlPlane

pytest_plugins = ["tests.integration.controller_fixtures"]
pytestmark = pytest.mark.integration
Obj = dict[str, Any]
SECRET = "{}-mpi-ssh-auth"
POLICIES = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicies",
    "ValidatingAdmissionPolicy",
    namespaced=False,
)
BINDINGS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicybindings",
    "ValidatingAdmissionPolicyBinding",
    namespaced=False,
)


def key_material(secret: Obj) -> list[str]:
    """Strings that would betray the private key: its base64 data and each PEM body line."""
    data = secret["data"]["ssh-privatekey"]
    pem = base64.b64decode(data).decode()
    lines = [ln for ln in pem.splitlines() if ln and not ln.startswith("-----")]
    return [data, data[:40], *lines]


def leaks(ctl: Controller, kube: Client, namespace: str, material: list[str]) -> list[str]:
    where = {"controller log": ctl.log()}
    events, _ = kube.list_all(r.EVENTS, namespace)
    where["events"] = "\n".join(str(e.get("note")) for e in events)
    trainjobs, _ = kube.list_all(r.TRAINJOBS, namespace)
    where["status"] = "\n".join(str(t.get("status")) for t in trainjobs)
    return [
        f"{m[:16]}... in the {name}"
        for name, text in where.items()
        for m in [*material, "PRIVATE KEY"]
        if m in text
    ]


def refuse_secrets(kube: Client, namespace: str) -> None:
    """A ValidatingAdmissionPolicy (CEL, in the apiserver) refusing new Secrets in ``namespace``."""
    name = f"no-secrets-{namespace}"[:63]
    kube.apply(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["secrets"],
                        }
                    ]
                },
                "validations": [{"expression": "false", "message": "no new secrets here"}],
            },
        },
        resource=POLICIES,
        field_manager="trainjob-tests",
    )
    kube.apply(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
                },
            },
        },
        resource=BINDINGS,
        field_manager="trainjob-tests",
    )

    def refused() -> bool:
        probe = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "probe"}}
        try:
            kube.create(r.SECRETS, probe, namespace, dry_run=True)
        except ApiError as e:
            return "no new secrets here" in str(e)
        return False

    wait_for(refused, what="the policy in force")


def drop_policy(kube: Client, namespace: str) -> None:
    name = f"no-secrets-{namespace}"[:63]
    kube.delete(BINDINGS, name, ignore_not_found=True)
    kube.delete(POLICIES, name, ignore_not_found=True)


def poke(kube: Client, name: str, namespace: str, n: int) -> None:
    kube.patch(r.TRAINJOBS, name, {"metadata": {"labels": {"poke": str(n)}}}, namespace)


def test_the_ssh_key_is_made_once_and_never_shown(
    control_plane: ControlPlane, kube: Client, namespace: str
) -> None:
    kube.apply(builtin_runtime("mpi-distributed"), field_manager="trainjob-tests")
    ctl = start_controller(control_plane, "--log-level", "DEBUG")
    try:
        kube.create(
            r.TRAINJOBS, trainjob("mpi", namespace, runtime="mpi-distributed", suspend=True)
        )
        wait_for(lambda: kube.get_or_none(r.JOBSETS, "mpi", namespace), what="JobSet")
        first = kube.get(r.SECRETS, SECRET.format("mpi"), namespace)
        material = key_material(first)
        for i in range(3):  # suspended: every reconcile re-applies
            poke(kube, "mpi", namespace, i)
        time.sleep(1)
        kube.patch(r.TRAINJOBS, "mpi", {"spec": {"suspend": False}}, namespace)
        wait_for(
            lambda: kube.get(r.JOBSETS, "mpi", namespace)["spec"]["suspend"] is False,
            what="resumed",
        )
        assert kube.get(r.SECRETS, SECRET.format("mpi"), namespace)["data"] == first["data"]
        assert leaks(ctl, kube, namespace, material) == []
    finally:
        ctl.stop()

    # A fresh controller remembers nothing: its new key pair meets AlreadyExists.
    ctl = start_controller(control_plane, "--log-level", "DEBUG")
    try:
        kube.patch(r.TRAINJOBS, "mpi", {"spec": {"suspend": True}}, namespace)
        wait_for(lambda: conditions(kube, "mpi", namespace).get("Suspended"), what="Suspended")
        wait_for(
            lambda: conditions(kube, "mpi", namespace)["Suspended"]["status"] == "True",
            what="Suspended=True",
        )
        poke(kube, "mpi", namespace, 9)
        time.sleep(1)
        assert kube.get(r.SECRETS, SECRET.format("mpi"), namespace)["data"] == first["data"]

        # Deleted while suspended, it is made again (a new key) by the next reconcile.
        kube.delete(r.SECRETS, SECRET.format("mpi"), namespace)
        poke(kube, "mpi", namespace, 10)
        again = wait_for(
            lambda: kube.get_or_none(r.SECRETS, SECRET.format("mpi"), namespace), what="remade"
        )
        assert again["data"]["ssh-privatekey"] != first["data"]["ssh-privatekey"]
        material += key_material(again)

        # Creating the Secret fails: the error is told without the key.
        refuse_secrets(kube, namespace)
        kube.create(r.TRAINJOBS, trainjob("refused", namespace, runtime="mpi-distributed"))

        def warning() -> Obj | None:
            items, _ = kube.list_all(r.EVENTS, namespace)
            return next(
                (e for e in items if e["regarding"]["name"] == "refused"),
                None,
            )

        event = wait_for(warning, what="TrainJobResourcesCreationFailed")
        assert event["reason"] == "TrainJobResourcesCreationFailed"
        assert "no new secrets here" in event["note"], event["note"]
        assert kube.get_or_none(r.SECRETS, SECRET.format("refused"), namespace) is None
        assert leaks(ctl, kube, namespace, material) == []
        assert "PRIVATE KEY" not in ctl.log()
    finally:
        ctl.stop()
        drop_policy(kube, namespace)
