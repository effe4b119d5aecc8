"""The registered plugins as one :class:`Framework`, and the kinds of object they declare.

Upstream's ``registry.go`` lists the plugins (here :data:`trainjob.runtime.plugins.REGISTRY`);
this module builds the framework from that list, once, for the compiler, and collects the kinds
the plugins declare (:mod:`trainjob.runtime.kinds`) for the controller's informers, apply step
and RBAC and for the local executor. It sits above the plugins and below the compiler, so
neither the compiler's plugins nor ``kinds`` import the compiler back.
"""

from __future__ import annotations

import functools
from typing import Any

from trainjob.runtime import kinds as k
from trainjob.runtime.framework import Framework
from trainjob.runtime.plugins import REGISTRY, volcano

_FRAMEWORK: Framework | None = None


def framework() -> Framework:
    """Every registered plugin, filed by the extension points it implements (built once)."""
    global _FRAMEWORK
    if _FRAMEWORK is None:
        _FRAMEWORK = Framework.new([factory() for factory in REGISTRY.values()])
    return _FRAMEWORK


@functools.lru_cache(maxsize=8)
def framework_with(priority_class_error: volcano.PriorityClassLookup) -> Framework:
    """The plugins with Volcano's PriorityClass lookup, built once per lookup (the webhook's bound
    method: equal on every request): filing plugins by their runtime-checkable protocols costs
    ~10 ms, five times what validating a TrainJob does."""
    return Framework.new(
        [
            volcano.Volcano(priority_class_error) if name == volcano.NAME else factory()
            for name, factory in REGISTRY.items()
        ]
    )


@functools.cache
def kinds() -> dict[tuple[str, str], k.Kind]:
    """The kinds of every registered plugin, in :data:`trainjob.runtime.kinds.BUILTIN`'s order,
    then any other in the plugins' order."""
    found = k.collect(framework().watchers)
    rank = {kind.key: i for i, kind in enumerate(k.BUILTIN)}
    return dict(sorted(found.items(), key=lambda kv: rank.get(kv[0], len(rank))))


def kind_of(obj: dict[str, Any]) -> k.Kind:
    """The kind of a Plan object; KeyError when no plugin declares it."""
    return kinds()[(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))]
