"""Elastic TrainJobs (KEP-2903) on this host: a lost node shrinks the job instead of failing it.

Each node runs a torchrun elastic agent (c10d rendezvous, from ``trainjob.runtime.plugins.torch_elastic``);
when one node's process exits with an error, the other agents re-rendezvous by themselves and go
on with one node less. So the supervisor (:class:`trainjob.local.job.attempt.Attempt`) does not
count that exit against the Job's ``backoffLimit`` nor restart the JobSet: the node leaves the
node job (as a scale down would), a ``NodeLost`` Event says so, and the job fails only once fewer
than ``minNodes`` nodes are left. Node 0 hosts the rendezvous store (``is_host`` in
``PET_RDZV_CONF``), as its stable DNS name does on a cluster.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from trainjob.api import constants as c
from trainjob.runtime.plan import Plan

REASON_NODE_LOST = "NodeLost"
REASON_NODE_JOINED = "NodeJoined"
REASON_NODE_REMOVED = "NodeRemoved"
REASON_SCALE_FAILED = "ScaleFailed"
REASON_BELOW_MIN_NODES = "FewerThanMinNodes"
ENV_RDZV_CONF = c.TORCH_ENV_RDZV_CONF


@dataclass(frozen=True)
class Bounds:
    min_nodes: int
    max_nodes: int

    def below_min_message(self, left: int) -> str:
        return f"fewer than minNodes ({self.min_nodes}) nodes left: {left}"


def _node_env(plan: Plan) -> dict[str, Any]:
    for rjob in plan.jobset.get("spec", {}).get("replicatedJobs") or ():
        if rjob.get("name") != c.JOB_NODE:
            continue
        pod = ((rjob.get("template") or {}).get("spec") or {}).get("template") or {}
        for ctr in (pod.get("spec") or {}).get("containers") or ():
            if ctr.get("name") == c.CONTAINER_NODE:
                return {e["name"]: e.get("value") for e in ctr.get("env") or ()}
    return {}


def bounds(plan: Plan) -> Bounds | None:
    """The node range of an elastic Plan (its node container's ``PET_NNODES=min:max`` with a
    c10d rendezvous); None for any other Plan."""
    env = _node_env(plan)
    if env.get(c.TORCH_ENV_RDZV_BACKEND) != c.TORCH_RDZV_BACKEND_C10D:
        return None
    lo, sep, hi = str(env.get(c.TORCH_ENV_NUM_NODES) or "").partition(":")
    if not sep or not lo.isdigit() or not hi.isdigit():
        return None
    return Bounds(int(lo), int(hi))


def rendezvous_env(env: MutableMapping[str, str], index: int) -> None:
    """Node 0 hosts the c10d store: every node resolves the endpoint to this host, so torch's own
    guess (the first to bind is the host) would let any node host it, and its loss end the job."""
    if env.get(c.TORCH_ENV_RDZV_BACKEND) != c.TORCH_RDZV_BACKEND_C10D:
        return
    conf = env.get(ENV_RDZV_CONF, "")
    if "is_host=" in conf:
        return
    host = f"is_host={'true' if index == 0 else 'false'}"
    env[ENV_RDZV_CONF] = f"{conf},{host}" if conf else host


def desired(trainjob: Mapping[str, Any]) -> tuple[int, int | None]:
    """The stored TrainJob's ``metadata.generation`` and ``spec.trainer.numNodes``: ``trainjob
    scale`` sets the count and bumps the generation, so a new request is told from the count a
    lost node left behind."""
    gen = int((trainjob.get("metadata") or {}).get("generation") or 1)
    count = ((trainjob.get("spec") or {}).get("trainer") or {}).get("numNodes")
    return gen, count if isinstance(count, int) else None


def scaled_plan(plan: Plan, count: int) -> Plan:
    """A copy of ``plan`` whose node job runs ``count`` pods (JobSet's ElasticJobSet: the node
    job's ``parallelism`` and ``completions`` changed together)."""
    objects = copy.deepcopy(list(plan.objects))
    out = Plan(tuple(objects))
    for rjob in out.jobset.get("spec", {}).get("replicatedJobs") or ():
        if rjob.get("name") == c.JOB_NODE:
            spec = rjob.setdefault("template", {}).setdefault("spec", {})
            spec["parallelism"] = spec["completions"] = count
    return out
