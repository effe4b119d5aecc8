"""The local backend's side of elastic jobs (KEP-2903): the node range read back from a Plan, node
0 as the c10d store's host, and the endpoints of added nodes."""

from __future__ import annotations

from tests.unit.helpers import builtin, trainjob
from trainjob.local.job import elastic, network
from trainjob.local.job.templates import pod_templates
from trainjob.runtime import compile
from trainjob.runtime.plan import Plan


def _plan(**trainer: object) -> Plan:
    return compile(trainjob(name="el", trainer=dict(trainer)), builtin("torch-distributed"))


def test_bounds_come_from_an_elastic_plan() -> None:
    plan = _plan(elasticPolicy={"minNodes": 2, "maxNodes": 3})
    assert elastic.bounds(plan) == elastic.Bounds(2, 3)


def test_a_plan_without_elastic_policy_has_no_bounds() -> None:
    assert elastic.bounds(_plan(numNodes=2)) is None


def test_node_0_hosts_the_rendezvous_store() -> None:
    env = {"PET_RDZV_BACKEND": "c10d", "PET_RDZV_CONF": "join_timeout=5"}
    elastic.rendezvous_env(env, 0)
    assert env["PET_RDZV_CONF"] == "join_timeout=5,is_host=true"
    other = {"PET_RDZV_BACKEND": "c10d"}
    elastic.rendezvous_env(other, 2)
    assert other["PET_RDZV_CONF"] == "is_host=false"


def test_a_users_is_host_and_a_static_job_are_left_alone() -> None:
    env = {"PET_RDZV_BACKEND": "c10d", "PET_RDZV_CONF": "is_host=false"}
    elastic.rendezvous_env(env, 0)
    assert env["PET_RDZV_CONF"] == "is_host=false"
    static: dict[str, str] = {"PET_NNODES": "2"}
    elastic.rendezvous_env(static, 0)
    assert static == {"PET_NNODES": "2"}


def test_added_nodes_get_ports_and_the_others_keep_theirs() -> None:
    plan = _plan(numNodes=2, elasticPolicy={"minNodes": 1, "maxNodes": 3})
    first = pod_templates(plan, "uid")
    ports = iter(range(40000, 40100))
    net = network.network_for(plan, first, lambda: next(ports))
    bigger = elastic.scaled_plan(plan, 3)
    added = [t for t in pod_templates(bigger, "uid") if t.index == 2]
    grown = network.extended(net, added, lambda: next(ports))
    assert {k: v for k, v in grown.ports.items() if k in net.ports} == dict(net.ports)
    assert grown.hosts[-1] == added[0].hostname
    endpoint = "el-node-0-0.el:29500"
    assert grown.rewrite_env(endpoint, added[0].hostname) == net.rewrite_env(endpoint, "")
    spec = bigger.jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert (spec["parallelism"], spec["completions"]) == (3, 3)
