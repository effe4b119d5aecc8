"""CoScheduling: gang scheduling with scheduler-plugins' PodGroup (upstream ``plugins/coscheduling``).

* ``enforce_pod_group_policy``: every pod gets the label ``scheduling.x-k8s.io/pod-group=<trainjob>``.
* ``build``: a ``scheduling.x-k8s.io/v1alpha1`` PodGroup named like the TrainJob, with
  ``minMember`` = all pods of all jobs (initializers included), ``minResources`` = their summed
  requests (:mod:`trainjob.runtime.resources`) and the policy's ``scheduleTimeoutSeconds``.

Upstream does not re-apply an existing PodGroup unless the TrainJob is suspended; the compiler
always plans it and the controller decides whether to apply it.
"""

from __future__ import annotations

from trainjob.api import constants as c
from trainjob.api.trainer import TrainJob
from trainjob.runtime import resources
from trainjob.runtime.info import Info, Obj
from trainjob.runtime.kinds import COSCHEDULING_PODGROUP, Kind
from trainjob.runtime.plugins.jobset import owned_meta

NAME = "CoScheduling"


def min_member_and_resources(info: Info) -> tuple[int, dict[str, str]]:
    """Pods in the gang and what they request together (shared with Volcano)."""
    members = sum(ps.count for ps in info.pod_sets)
    total = resources.total((resources.pod_requests(ps.pod_spec), ps.count) for ps in info.pod_sets)
    return members, total


def pod_group(trainjob: TrainJob, api_version: str, spec: Obj) -> Obj:
    """The PodGroup of ``trainjob`` (named like it, owned by it) for either scheduler."""
    return {
        "apiVersion": api_version,
        "kind": c.POD_GROUP_KIND,
        "metadata": owned_meta(trainjob),
        "spec": spec,
    }


class CoScheduling:
    name = NAME

    def kinds(self) -> tuple[Kind, ...]:
        """The kinds it plans (the scheduler-plugins PodGroup) and how each executor treats them."""
        return (COSCHEDULING_PODGROUP,)

    def enforce_pod_group_policy(self, info: Info, trainjob: TrainJob) -> None:
        pgp = info.pod_group_policy
        if pgp is None or pgp.coscheduling is None:
            return
        info.pod_labels[c.COSCHEDULING_POD_GROUP_LABEL] = trainjob.metadata.name or ""

    def build(self, info: Info, trainjob: TrainJob, options: object) -> list[Obj]:
        pgp = info.pod_group_policy
        if pgp is None or pgp.coscheduling is None:
            return []
        members, total = min_member_and_resources(info)
        spec: Obj = {"minMember": members, "minResources": total}
        if pgp.coscheduling.schedule_timeout_seconds is not None:
            spec["scheduleTimeoutSeconds"] = pgp.coscheduling.schedule_timeout_seconds
        return [pod_group(trainjob, c.COSCHEDULING_API_VERSION, spec)]
