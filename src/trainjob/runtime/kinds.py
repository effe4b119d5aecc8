"""The kinds of object a Plan can hold: what each executor does with one.

A plugin that builds objects of a kind declares it (its ``kinds()``, upstream's
``WatchExtensionPlugin``), so the kind is handled end to end without edits elsewhere:

* ``resource``: its API resource type (group, version, plural, scope), from which the controller
  builds its URLs and informers;
* ``apply``: how the controller applies it — :attr:`Apply.ALWAYS` (server-side apply at every
  reconcile), :attr:`Apply.CREATE_ONCE` (created when absent, never changed: a generated key
  stays the first one) or :attr:`Apply.WHILE_SUSPENDED` (applied when absent and while the
  TrainJob or the object is suspended; left alone while it runs, as upstream's JobSet plugin);
* ``watch``: how it is watched — whole objects, or metadata only (never a Secret's data);
* ``verbs``: the RBAC verbs the controller needs on it (the ClusterRole is built from them);
* ``local``: what the local backend does with it — run it (the JobSet: processes), mount it
  (ConfigMaps, Secrets: files in the job's directory), or skip it (gang scheduling means
  nothing to one machine).

The kinds every registered plugin declares are collected by :func:`trainjob.runtime.registry.kinds`
(and :func:`~trainjob.runtime.registry.kind_of` finds a Plan object's), read by
``controller/manager.py`` (informers), ``controller/reconcile.py`` (apply),
``controller/rbac.py`` (rules) and ``local/client/executor.py`` (a kind it cannot run is refused before
anything starts). Pure data: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from trainjob.core import resources as res


class Apply(StrEnum):
    ALWAYS = "always"
    CREATE_ONCE = "create-once"
    WHILE_SUSPENDED = "while-suspended"


class Watch(StrEnum):
    FULL = "full"
    METADATA = "metadata"


class Local(StrEnum):
    RUN = "run"
    MOUNT = "mount"
    SKIP = "skip"


@dataclass(frozen=True)
class Kind:
    """One kind of Plan object and how every executor treats it (see the module docstring)."""

    resource: res.Resource
    apply: Apply
    watch: Watch
    verbs: tuple[str, ...]
    local: Local
    why: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """(apiVersion, kind), as a manifest names its type."""
        return self.resource.api_version, self.resource.kind


JOBSET = Kind(
    res.JOBSETS,
    Apply.WHILE_SUSPENDED,
    Watch.FULL,
    ("get", "list", "watch", "create", "patch", "delete"),
    Local.RUN,
    "informer; server-side apply; delete past activeDeadlineSeconds; webhook reads status",
)
CONFIGMAP = Kind(
    res.CONFIGMAPS,
    Apply.ALWAYS,
    Watch.METADATA,
    ("list", "watch", "create", "patch"),
    Local.MOUNT,
    "MPI hostfile, Flux entrypoint (apply); metadata informer",
)
SECRET = Kind(
    res.SECRETS,
    Apply.CREATE_ONCE,
    Watch.METADATA,
    ("list", "watch", "create"),
    Local.MOUNT,
    "MPI SSH and Flux CURVE keys (created); metadata-only informer (data never asked)",
)
COSCHEDULING_PODGROUP = Kind(
    res.COSCHEDULING_PODGROUPS,
    Apply.WHILE_SUSPENDED,
    Watch.METADATA,
    ("list", "watch", "create", "patch"),
    Local.SKIP,
    "PodGroup apply; metadata informers",
)
VOLCANO_PODGROUP = Kind(
    res.VOLCANO_PODGROUPS,
    Apply.WHILE_SUSPENDED,
    Watch.METADATA,
    ("list", "watch", "create", "patch"),
    Local.SKIP,
    "PodGroup apply; metadata informers",
)


BUILTIN = (JOBSET, CONFIGMAP, SECRET, COSCHEDULING_PODGROUP, VOLCANO_PODGROUP)
"""The kinds trainjob's own plugins declare, in the order rules and informers list them."""


def collect(plugins: Iterable[Any]) -> dict[tuple[str, str], Kind]:
    """Every kind the plugins declare, by (apiVersion, kind), in the plugins' order; a kind two
    plugins declare differently is a programming error, raised at once."""
    out: dict[tuple[str, str], Kind] = {}
    for plugin in plugins:
        for kind in plugin.kinds():
            seen = out.setdefault(kind.key, kind)
            if seen != kind:
                raise ValueError(f"plugins declare {kind.key} twice, differently: {seen} {kind}")
    return out
