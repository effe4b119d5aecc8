"""The controller's RBAC is least privilege in the ways that matter most: no wildcards, no verbs
that grant more rights (escalate, bind, impersonate), no RBAC or Pod writes, and no right to read
any Secret but its own webhook certificate (the MPI SSH Secret is only ever created)."""

from __future__ import annotations

from typing import Any

import pytest

from trainjob.controller import rbac

READ = {"get", "list", "watch"}
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
    assert not {"pods", "pods/exec", "nodes", "serviceaccounts/token"} & set(rule["resources"])


def test_secrets_can_be_read_only_by_name_in_the_controllers_namespace() -> None:
    readers = [
        (kind, rule)
        for kind, rule in RULES
        if "secrets" in rule["resources"] and READ & set(rule["verbs"])
    ]
    assert readers == [
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
    cluster = [r for r in rbac.cluster_role()["rules"] if "secrets" in r["resources"]]
    assert [r["verbs"] for r in cluster] == [["create"]]
