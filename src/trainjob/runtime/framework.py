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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from trainjob.api.trainer import TrainJob
    from trainjob.errors import FieldError
    from trainjob.runtime.compiler import CompileOptions
    from trainjob.runtime.info import Info

Obj = dict[str, Any]


@runtime_checkable
class Plugin(Protocol):
    name: str


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


@dataclass(frozen=True)
class Framework:
    """Plugins filed by extension point, in registry order."""

    ml_policy: tuple[EnforceMLPolicyPlugin, ...]
    pod_group_policy: tuple[EnforcePodGroupPolicyPlugin, ...]
    pre_build: tuple[PreBuildPlugin, ...]
    builders: tuple[ComponentBuilderPlugin, ...]
    validators: tuple[CustomValidationPlugin, ...]

    @classmethod
    def new(cls, plugins: list[Any]) -> Framework:
        return cls(
            ml_policy=tuple(p for p in plugins if isinstance(p, EnforceMLPolicyPlugin)),
            pod_group_policy=tuple(
                p for p in plugins if isinstance(p, EnforcePodGroupPolicyPlugin)
            ),
            pre_build=tuple(p for p in plugins if isinstance(p, PreBuildPlugin)),
            builders=tuple(p for p in plugins if isinstance(p, ComponentBuilderPlugin)),
            validators=tuple(p for p in plugins if isinstance(p, CustomValidationPlugin)),
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

    def validate(self, info: Info | None, old: TrainJob | None, new: TrainJob) -> list[FieldError]:
        errors: list[FieldError] = []
        for v in self.validators:
            errors.extend(v.validate(info, old, new))
        return errors
