"""What one pod of a PodSet asks the scheduler for, and a PodGroup's ``minResources``; and
:func:`merge_resources`, a TrainJob's ``resourcesPerNode`` merged into a container (the compiler's
``build_info`` and the MPI plugin).

Called by the gang-scheduling plugins (:mod:`~trainjob.runtime.plugins.coscheduling`,
:mod:`~trainjob.runtime.plugins.volcano`). Follows Kubernetes' ``PodRequests`` helper:

* a container's requests are its ``resources.requests``, with ``resources.limits`` filling any
  resource that has no request (what API defaulting does when the pod is created);
* the pod asks for the larger of the sum of its containers (plus sidecars: init containers with
  ``restartPolicy: Always``) and each ordinary init container (plus the sidecars started before
  it), resource by resource;
* pod-level ``spec.resources`` (cpu, memory, hugepages) replace the containers' aggregate;
* ``spec.overhead`` is added.

What needs a cluster is left to the controller: LimitRange defaults and RuntimeClass overhead.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from trainjob.api.quantity import Quantity, parse

ResourceList = dict[str, Quantity]

_POD_LEVEL_RESOURCES = ("cpu", "memory")


def _requests(resources: dict[str, Any] | None) -> ResourceList:
    """Requests of a ``resources`` block, limits filling in the missing ones."""
    resources = resources or {}
    out: ResourceList = {}
    for name, value in (resources.get("limits") or {}).items():
        out[name] = parse(value)
    for name, value in (resources.get("requests") or {}).items():
        out[name] = parse(value)
    return out


def _add(into: ResourceList, other: ResourceList) -> None:
    for name, q in other.items():
        into[name] = into[name] + q if name in into else q


def _max(into: ResourceList, other: ResourceList) -> None:
    for name, q in other.items():
        if name not in into or q.amount > into[name].amount:
            into[name] = q


def pod_requests(pod_spec: dict[str, Any]) -> ResourceList:
    """The resources one pod with this spec requests (Kubernetes ``PodRequests``)."""
    reqs: ResourceList = {}
    for ctr in pod_spec.get("containers") or ():
        _add(reqs, _requests(ctr.get("resources")))
    sidecars: ResourceList = {}
    init_max: ResourceList = {}
    for ctr in pod_spec.get("initContainers") or ():
        ctr_reqs = _requests(ctr.get("resources"))
        if ctr.get("restartPolicy") == "Always":
            _add(reqs, ctr_reqs)
            _add(sidecars, ctr_reqs)
            step = dict(sidecars)
        else:
            step = dict(ctr_reqs)
            _add(step, sidecars)
        _max(init_max, step)
    _max(reqs, init_max)
    pod_level = _requests(pod_spec.get("resources"))
    for name, q in pod_level.items():
        if name in _POD_LEVEL_RESOURCES or name.startswith("hugepages-"):
            reqs[name] = q
    _add(reqs, {name: parse(v) for name, v in (pod_spec.get("overhead") or {}).items()})
    return reqs


def total(pods: Iterable[tuple[ResourceList, int]]) -> dict[str, str]:
    """Sum ``count x single-pod requests`` into a ResourceList, keys sorted as Go marshals them."""
    out: ResourceList = {}
    for reqs, count in pods:
        for name, q in reqs.items():
            scaled = q * count
            out[name] = out[name] + scaled if name in out else scaled
    return {name: str(out[name]) for name in sorted(out)}


def merge_resources(ctr: dict[str, Any], trainjob_trainer: Any) -> None:
    """Strategic merge of ``resourcesPerNode`` into a container, key by key (upstream HEAD)."""
    rpn = trainjob_trainer.resources_per_node
    if rpn is None:
        return
    res = ctr.setdefault("resources", {})
    for kind in ("limits", "requests"):
        values = getattr(rpn, kind)
        if values:
            res.setdefault(kind, {}).update(values)
    if rpn.claims:
        claims = {cl.get("name"): cl for cl in res.get("claims") or ()}
        for cl in rpn.claims:
            claims[cl.get("name")] = dict(cl)
        res["claims"] = list(claims.values())
