"""Extension points and the plugin registry (upstream ``pkg/runtime/framework``).

A plugin is a class with a ``name`` that implements only the points it needs. The framework files
each plugin under every point it implements and runs them in this documented order:

1. ``enforce_ml_policy``        every ML plugin; each no-ops unless its policy is set
2. ``enforce_pod_group_policy`` coscheduling / volcano
3. ``pre_build``                pod network: endpoints, parallelism (must run after 1 and 2)
4. ``build``                    component builders return the Plan's objects

``validate`` (custom validation) runs on its own, for ``trainjob.runtime.validate`` and the
admission webhook. Enforce steps raise :class:`trainjob.errors.InvalidError` for input the
validation could not catch earlier.

Three more points let a plugin own the kinds it builds end to end, so no executor needs an edit
for a new kind:

* ``kinds`` (upstream's ``WatchExtensionPlugin``): the kinds it plans and how each is applied,
  watched, permitted and run locally (:mod:`trainjob.runtime.kinds`);
* ``status`` (upstream's ``TrainJobStatusPlugin``, at most one): the TrainJob's status from the
  objects it owns (the JobSet plugin: terminal conditions and ``jobsStatus``);
* ``cleanup``: what to delete when the controller itself ends a TrainJob (past its
  ``activeDeadlineSeconds``), so that its pods stop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Mapping

    from trainjob.api.trainer import TrainJob
    from trainjob.errors import FieldError
    from trainjob.runtime.compileoptions import CompileOptions
    from trainjob.runtime.info import Info
    from trainjob.runtime.kinds import Kind

Obj = dict[str, Any]


@runtime_checkable
class EnforceMLPolicyPlugin(Protocol):
    name: str

    def enforce_ml_policy(self, info: Info, trainjob: TrainJob) -> None: ...


@runtime_checkable
class EnforcePodGroupPolicyPlugin(Protocol):
    name: str

    def enforce_pod_group_policy(self, info: Info, trainjob: TrainJob) -> None: ...


@runtime_checkable
class PreBuildPlugin(Protocol):
    name: str

    def pre_build(self, info: Info, trainjob: TrainJob) -> None: ...


@runtime_checkable
class ComponentBuilderPlugin(Protocol):
    name: str

    def build(self, info: Info, trainjob: TrainJob, options: CompileOptions) -> list[Obj]: ...


@runtime_checkable
class CustomValidationPlugin(Protocol):
    name: str

    def validate(
        self, info: Info | None, old: TrainJob | None, new: TrainJob
    ) -> list[FieldError]: ...


@runtime_checkable
class WatchExtensionPlugin(Protocol):
    name: str

    def kinds(self) -> tuple[Kind, ...]: ...


@runtime_checkable
class TrainJobStatusPlugin(Protocol):
    name: str

    def status(
        self, trainjob: Obj, owned: Mapping[tuple[str, str], Obj], conditions: list[Obj]
    ) -> list[Obj] | None:
        """Update ``conditions`` in place from ``owned`` (by (apiVersion, kind), the objects of
        the TrainJob that exist); the new ``jobsStatus``, None to leave it as it is."""


@runtime_checkable
class TerminalCleanupPlugin(Protocol):
    name: str

    def cleanup(self, trainjob: Obj) -> list[tuple[Kind, str]]:
        """The objects (kind, name in the TrainJob's namespace) to delete when the controller
        ends the TrainJob itself."""


@dataclass(frozen=True)
class Framework:
    """Plugins filed by extension point, in registry order."""

    ml_policy: tuple[EnforceMLPolicyPlugin, ...]
    pod_group_policy: tuple[EnforcePodGroupPolicyPlugin, ...]
    pre_build: tuple[PreBuildPlugin, ...]
    builders: tuple[ComponentBuilderPlugin, ...]
    validators: tuple[CustomValidationPlugin, ...]
    watchers: tuple[WatchExtensionPlugin, ...] = ()
    status: TrainJobStatusPlugin | None = None
    cleanups: tuple[TerminalCleanupPlugin, ...] = ()

    @classmethod
    def new(cls, plugins: list[Any]) -> Framework:
        statuses = [p for p in plugins if isinstance(p, TrainJobStatusPlugin)]
        if len(statuses) > 1:  # upstream: "only one TrainJobStatusPlugin can be registered"
            names = ", ".join(p.name for p in statuses)
            raise ValueError(f"only one TrainJobStatusPlugin can be registered, got {names}")
        return cls(
            ml_policy=tuple(p for p in plugins if isinstance(p, EnforceMLPolicyPlugin)),
            pod_group_policy=tuple(
                p for p in plugins if isinstance(p, EnforcePodGroupPolicyPlugin)
            ),
            pre_build=tuple(p for p in plugins if isinstance(p, PreBuildPlugin)),
            builders=tuple(p for p in plugins if isinstance(p, ComponentBuilderPlugin)),
            validators=tuple(p for p in plugins if isinstance(p, CustomValidationPlugin)),
            watchers=tuple(p for p in plugins if isinstance(p, WatchExtensionPlugin)),
            status=statuses[0] if statuses else None,
            cleanups=tuple(p for p in plugins if isinstance(p, TerminalCleanupPlugin)),
        )

    def run(self, info: Info, trainjob: TrainJob, options: CompileOptions) -> list[Obj]:
        for ml in self.ml_policy:
            ml.enforce_ml_policy(info, trainjob)
        for pg in self.pod_group_policy:
            pg.enforce_pod_group_policy(info, trainjob)
        for pb in self.pre_build:
            pb.pre_build(info, trainjob)
        objects: list[Obj] = []
        for b in self.builders:
            objects.extend(b.build(info, trainjob, options))
        return objects

    def trainjob_status(
        self, trainjob: Obj, owned: Mapping[tuple[str, str], Obj], conditions: list[Obj]
    ) -> list[Obj] | None:
        """The status plugin's reading (conditions updated in place; the new jobsStatus)."""
        if self.status is None:
            return None
        return self.status.status(trainjob, owned, conditions)

    def terminal_cleanup(self, trainjob: Obj) -> list[tuple[Kind, str]]:
        return [obj for p in self.cleanups for obj in p.cleanup(trainjob)]

    def validate(self, info: Info | None, old: TrainJob | None, new: TrainJob) -> list[FieldError]:
        errors: list[FieldError] = []
        for v in self.validators:
            errors.extend(v.validate(info, old, new))
        return errors
