"""The controller's RBAC is least privilege in the ways that matter most: no wildcards, no verbs
that grant more rights (escalate, bind, impersonate), no RBAC or Pod writes, and on Secrets only
what the controller uses: ``get``/``update`` of its own webhook certificate by name, and cluster-wide
``list``/``watch`` (a metadata-only informer of the Secrets TrainJobs own) and ``create`` (the MPI
SSH Secret) - never ``get``, ``update``, ``patch`` or ``delete``."""

from __future__ import annotations

from typing import Any

import pytest

from trainjob.controller import rbac
from trainjob.controller.manager import Manager, Options
from trainjob.kube import resources as r
from trainjob.kube.client import Client
from trainjob.kube.config import Config

RULES: list[tuple[str, dict[str, Any]]] = [
    ("ClusterRole", r) for r in rbac.cluster_role()["rules"]
] + [("Role", r) for r in rbac.role()["rules"]]


def rule_id(item: tuple[str, dict[str, Any]]) -> str:
    kind, rule = item
    return f"{kind} {','.join(rule['resources'])}"


@pytest.mark.parametrize("item", RULES, ids=[rule_id(i) for i in RULES])
def test_no_rule_uses_wildcards_or_verbs_that_grant_more(item: tuple[str, dict[str, Any]]) -> None:
    _, rule = item
    assert "*" not in rule["verbs"] and "*" not in rule["resources"]
    assert "*" not in rule["apiGroups"]
    assert not {"escalate", "bind", "impersonate", "deletecollection"} & set(rule["verbs"])
    assert "rbac.authorization.k8s.io" not in rule["apiGroups"]
    assert not {"pods/exec", "nodes", "serviceaccounts/token"} & set(rule["resources"])
    if "pods" in rule["resources"]:
        # only reading one pod by name: the status server checks a caller is the TrainJob's pod
        assert (rule["resources"], rule["verbs"]) == (["pods"], ["get"]), rule


def test_secrets_are_got_and_updated_only_by_name_in_the_controllers_namespace() -> None:
    named = [
        (kind, rule)
        for kind, rule in RULES
        if "secrets" in rule["resources"] and {"get", "update"} & set(rule["verbs"])
    ]
    assert named == [
        (
            "Role",
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": ["trainjob-webhook-cert"],
                "verbs": ["get", "update"],
            },
        )
    ]


def test_secrets_cluster_wide_are_listed_watched_and_created_only() -> None:
    cluster = [r for r in rbac.cluster_role()["rules"] if "secrets" in r["resources"]]
    assert [(r["apiGroups"], r["resources"], r["verbs"]) for r in cluster] == [
        ([""], ["secrets"], ["list", "watch", "create"])
    ]
    assert not {"get", "update", "patch", "delete"} & set(cluster[0]["verbs"])
    assert "resourceNames" not in cluster[0]


def test_the_secret_informer_asks_for_metadata_only() -> None:
    client = Client(Config(server="https://127.0.0.1:1"))
    try:
        manager = Manager(client, Options(leader_elect=False, metrics_port=None, health_port=None))
        assert manager.secrets is not None
        assert manager.secrets.resource is r.SECRETS
        assert manager.secrets.metadata_only is True
        assert manager.caches.secrets is manager.secrets
        assert manager.secrets in manager.informers
    finally:
        client.close()
