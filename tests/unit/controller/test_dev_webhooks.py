"""The dev webhook mode (``--self-signed-webhooks``) registering its own webhook configurations:

* under the names it is given (``--mutating-webhook-configuration``/``--validating-...``: a test
  harness gives each controller its own, so two on one apiserver do not overwrite each other's),
  ``trainjob-dev-...`` by default; the manifests' names stay the other modes' default;
* each deleted at a clean stop, as the kind it was registered as, with the resourceVersion the
  controller wrote (another controller that registered the same name since keeps it).

A fake client records the writes; the webhook server itself binds a loopback port.
"""

from __future__ import annotations

from typing import Any

import pytest

from trainjob.api import constants as c
from trainjob.controller.webhooks.serving import DEV_MUTATING, DEV_VALIDATING, Options
from trainjob.controller.webhooks.serving import WebhookServer as Server
from trainjob.kube import resources as r
from trainjob.kube.errors import Conflict


class Client:
    def __init__(self, conflict_on: str = "") -> None:
        self.applied: list[dict[str, Any]] = []
        self.deleted: list[tuple[str, str, dict[str, str] | None]] = []
        self.conflict_on = conflict_on

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.applied.append(obj)
        return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(len(self.applied))}}

    def delete(
        self,
        resource: r.Resource,
        name: str,
        preconditions: dict[str, str] | None = None,
        ignore_not_found: bool = False,
    ) -> None:
        if name == self.conflict_on:
            raise Conflict("re-registered", status=409, reason="Conflict")
        self.deleted.append((resource.kind, name, preconditions))


def run(options: Options, client: Client) -> Server:
    server = Server(client, options)  # type: ignore[arg-type]
    server.start()
    server.stop()
    return server


@pytest.mark.parametrize(
    ("given", "want"),
    [
        ({}, (DEV_MUTATING, DEV_VALIDATING)),
        (
            {"mutating_config": "trainjob-dev-m-1", "validating_config": "trainjob-dev-v-1"},
            ("trainjob-dev-m-1", "trainjob-dev-v-1"),
        ),
    ],
)
def test_dev_mode_registers_the_names_it_is_given_and_deletes_them_at_its_stop(
    given: dict[str, str], want: tuple[str, str]
) -> None:
    client = Client()
    run(Options(mode="dev", host="127.0.0.1", port=0, **given), client)
    assert [(o["kind"], o["metadata"]["name"]) for o in client.applied] == [
        ("MutatingWebhookConfiguration", want[0]),
        ("ValidatingWebhookConfiguration", want[1]),
    ]
    assert all(h["clientConfig"]["url"].startswith("https://127.0.0.1:") for h in hooks(client))
    assert client.deleted == [
        ("MutatingWebhookConfiguration", want[0], {"resourceVersion": "1"}),
        ("ValidatingWebhookConfiguration", want[1], {"resourceVersion": "2"}),
    ]


def test_a_configuration_another_controller_registered_since_is_left_to_it() -> None:
    client = Client(conflict_on=DEV_MUTATING)
    run(Options(mode="dev", host="127.0.0.1", port=0), client)
    assert client.deleted == [
        ("ValidatingWebhookConfiguration", DEV_VALIDATING, {"resourceVersion": "2"})
    ]


def test_the_other_modes_keep_the_manifests_names() -> None:
    for mode in ("secret", "certdir"):
        o = Options(mode=mode)
        assert (o.mutating_name, o.validating_name) == (
            c.MUTATING_WEBHOOK_CONFIGURATION,
            c.VALIDATING_WEBHOOK_CONFIGURATION,
        )
    named = Options(mode="secret", mutating_config="m", validating_config="v")
    assert (named.mutating_name, named.validating_name) == ("m", "v")


def hooks(client: Client) -> list[dict[str, Any]]:
    return [h for o in client.applied for h in o["webhooks"]]
