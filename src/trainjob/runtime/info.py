"""``Info``: the intermediate model every plugin reads and mutates (upstream ``runtime.Info``).

Built from the runtime template after the TrainJob's runtime patches are applied. The JobSet spec is
kept as a plain dict (the apply configuration); each :class:`PodSet` points into it, so a plugin that
edits a PodSet's container edits the JobSet the plan will hold.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from trainjob.api import constants as c
from trainjob.api.trainer import MLPolicy, PodGroupPolicy

Obj = dict[str, Any]


class Endpoints(Sequence[str]):
    """``<trainjob>-<job>-0-<index>.<subdomain>`` for each pod of a job, made when read: a job may
    have up to 2^31-1 pods, and most plugins read only the first endpoint (upstream's iterator)."""

    def __init__(self, prefix: str, subdomain: str, count: int) -> None:
        self._prefix, self._subdomain, self._count = prefix, subdomain, max(count, 0)

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        i = index + self._count if index < 0 else index
        if not 0 <= i < self._count:
            raise IndexError(index)
        return f"{self._prefix}{i}.{self._subdomain}"

    def __iter__(self) -> Iterator[str]:
        return (f"{self._prefix}{i}.{self._subdomain}" for i in range(self._count))

    def __repr__(self) -> str:
        return f"Endpoints({self._prefix}{{0..{self._count - 1}}}.{self._subdomain})"


@dataclass
class PodSet:
    """One replicatedJob of the JobSet: how many pods, which containers, where they answer."""

    name: str
    ancestor: str | None
    count: int
    rjob: Obj
    endpoints: Sequence[str] = ()
    runtime_command: list[str] | None = None
    """Command of the trainer's ``node`` container as the runtime had it, before ``trainer.command``."""
    runtime_args: list[str] | None = None
    """Its args as the runtime had them, before ``trainer.args`` (Flux keeps them)."""

    @property
    def pod_spec(self) -> Obj:
        tmpl = self.rjob.setdefault("template", {})
        job_spec = tmpl.setdefault("spec", {})
        pod_tmpl = job_spec.setdefault("template", {})
        spec: Obj = pod_tmpl.setdefault("spec", {})
        return spec

    @property
    def containers(self) -> list[Obj]:
        containers: list[Obj] = self.pod_spec.setdefault("containers", [])
        return containers

    @property
    def init_containers(self) -> list[Obj]:
        return list(self.pod_spec.get("initContainers") or [])

    def container(self, name: str) -> Obj | None:
        for ctr in self.pod_spec.get("containers") or ():
            if ctr.get("name") == name:
                return ctr  # type: ignore[no-any-return]
        return None

    def any_container(self, name: str) -> Obj | None:
        """A container or init container of that name."""
        for ctr in self.pod_spec.get("initContainers") or ():
            if ctr.get("name") == name:
                return ctr  # type: ignore[no-any-return]
        return self.container(name)


@dataclass
class Info:
    """Everything the plugins work on for one TrainJob."""

    labels: dict[str, str]
    annotations: dict[str, str]
    ml_policy: MLPolicy | None
    pod_group_policy: PodGroupPolicy | None
    jobset_spec: Obj
    pod_sets: list[PodSet]
    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)
    # Job name -> names of its containers and init containers in the runtime template *before*
    # runtime patches (what a patch may target); None when no patch was applied.
    runtime_containers: dict[str, set[str]] | None = None

    def pod_set(self, name: str) -> PodSet | None:
        for ps in self.pod_sets:
            if ps.name == name:
                return ps
        return None

    def pod_set_by_ancestor(self, ancestor: str) -> PodSet | None:
        for ps in self.pod_sets:
            if ps.ancestor == ancestor:
                return ps
        return None

    def trainer_container(self) -> Obj | None:
        """Container ``node`` of the job whose ancestor is ``trainer``."""
        ps = self.pod_set_by_ancestor(c.ANCESTOR_TRAINER)
        return ps.container(c.CONTAINER_NODE) if ps else None


def upsert_env(envs: list[Obj], *new: Obj) -> None:
    """Insert or replace env vars by name, keeping the position of those replaced (upstream UpsertEnvVars)."""
    for env in new:
        for i, cur in enumerate(envs):
            if cur.get("name") == env["name"]:
                envs[i] = env
                break
        else:
            envs.append(env)


def upsert_by(items: list[Obj], key: str, *new: Obj) -> None:
    """Insert or replace list items matched on ``key`` (ports, volumes, volumeMounts)."""
    for item in new:
        for i, cur in enumerate(items):
            if cur.get(key) == item.get(key):
                items[i] = item
                break
        else:
            items.append(item)


def container_resources(ctr: Obj | None) -> Obj:
    return (ctr or {}).get("resources") or {}


def num_gpus(resources: Obj) -> int:
    """GPUs per node (upstream ``GetNumGPUPerNode``): the first resource whose name contains "gpu"
    in requests, else in limits when requests name none or zero."""
    from trainjob.api import quantity

    for kind in ("requests", "limits"):
        for name, value in (resources.get(kind) or {}).items():
            if "gpu" in name.lower():
                try:
                    count = quantity.ceil_int(value)
                except quantity.QuantityError:
                    count = 0
                if count > 0:
                    return count
                break
    return 0


def iter_containers(pod_spec: Obj) -> Iterator[Obj]:
    yield from pod_spec.get("initContainers") or ()
    yield from pod_spec.get("containers") or ()
