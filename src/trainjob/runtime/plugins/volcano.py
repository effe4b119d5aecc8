"""Volcano: gang scheduling with Volcano's PodGroup (upstream ``plugins/volcano``, v2.1+).

* ``enforce_pod_group_policy``: every pod gets the annotation ``scheduling.k8s.io/group-name=<trainjob>``.
* ``build``: a ``scheduling.volcano.sh/v1beta1`` PodGroup named like the TrainJob with ``minMember``
  and ``minResources`` (as CoScheduling), ``queue`` from the annotation
  ``scheduling.volcano.sh/queue-name`` (runtime template metadata, overridable by runtime patches),
  ``priorityClassName`` from the pod templates (the last job that sets one wins, as upstream) and
  the policy's ``networkTopology``.
* ``validate``: the queue annotation, when present, must not be empty; the PriorityClass must
  exist. That second check needs a cluster: the plugin takes a ``priority_class_error`` lookup
  (name -> error text, or None when it exists) that the controller passes when it builds its
  framework; without one (``trainjob plan``, the local backend) the check is skipped.
"""

from __future__ import annotations

from collections.abc import Callable

from trainjob.api import constants as c
from trainjob.api.trainer import TrainJob
from trainjob.errors import FieldError
from trainjob.runtime.info import Info, Obj
from trainjob.runtime.kinds import VOLCANO_PODGROUP, Kind
from trainjob.runtime.plugins.coscheduling import min_member_and_resources, pod_group

NAME = "Volcano"

PriorityClassLookup = Callable[[str], str | None]


def _priority_classes(info: Info) -> list[str]:
    """priorityClassName of every pod template that sets one, in job order."""
    names = []
    for rjob in info.jobset_spec.get("replicatedJobs") or ():
        pod = (((rjob.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec")
        if pod and pod.get("priorityClassName") is not None:
            names.append(pod["priorityClassName"])
    return names


class Volcano:
    name = NAME

    def kinds(self) -> tuple[Kind, ...]:
        """The kinds it plans (Volcano's PodGroup) and how each executor treats them."""
        return (VOLCANO_PODGROUP,)

    def __init__(self, priority_class_error: PriorityClassLookup | None = None) -> None:
        self.priority_class_error = priority_class_error

    def validate(self, info: Info | None, old: TrainJob | None, new: TrainJob) -> list[FieldError]:
        errors: list[FieldError] = []
        if info is None or info.pod_group_policy is None or info.pod_group_policy.volcano is None:
            return errors
        queue = info.annotations.get(c.VOLCANO_QUEUE_ANNOTATION)
        if queue == "":
            errors.append(
                FieldError.invalid(
                    f"spec.annotations[{c.VOLCANO_QUEUE_ANNOTATION}]",
                    queue,
                    "Volcano queue name must not be empty",
                )
            )
        if self.priority_class_error is None:
            return errors
        for pc in _priority_classes(info):
            # Upstream stops checking at the first built-in class.
            if pc in c.VOLCANO_PRIORITY_CLASSES_ALWAYS_PRESENT:
                break
            err = self.priority_class_error(pc)
            if err is not None:
                errors.append(
                    FieldError.invalid(
                        "spec.templateSpec.priorityClassName",
                        pc,
                        f'PriorityClass "{pc}" doesn\'t exist: {err}',
                    )
                )
        return errors

    def enforce_pod_group_policy(self, info: Info, trainjob: TrainJob) -> None:
        pgp = info.pod_group_policy
        if pgp is None or pgp.volcano is None:
            return
        info.pod_annotations[c.VOLCANO_POD_GROUP_ANNOTATION] = trainjob.metadata.name or ""

    def build(self, info: Info, trainjob: TrainJob, options: object) -> list[Obj]:
        pgp = info.pod_group_policy
        if pgp is None or pgp.volcano is None:
            return []
        members, total = min_member_and_resources(info)
        # Field order of Volcano's PodGroupSpec.
        spec: Obj = {"minMember": members}
        if c.VOLCANO_QUEUE_ANNOTATION in info.annotations:
            spec["queue"] = info.annotations[c.VOLCANO_QUEUE_ANNOTATION]
        priority_classes = _priority_classes(info)
        if priority_classes:
            spec["priorityClassName"] = priority_classes[-1]
        spec["minResources"] = total
        topology = pgp.volcano.network_topology
        if topology is not None:
            spec["networkTopology"] = {
                k: topology[k] for k in ("mode", "highestTierAllowed") if k in topology
            }
        return [pod_group(trainjob, c.VOLCANO_API_VERSION, spec)]
