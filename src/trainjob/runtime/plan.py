"""The Plan: the objects the upstream controller would apply for one TrainJob.

A JobSet, and where the runtime asks for them a PodGroup, ConfigMaps and Secrets, as plain
Kubernetes manifests (apply configurations). Both executors read the same Plan: the local backend
runs it as processes, the controller server-side-applies it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]


@dataclass(frozen=True)
class Plan:
    objects: tuple[Obj, ...]

    def __iter__(self) -> Iterator[Obj]:
        return iter(self.objects)

    def __len__(self) -> int:
        return len(self.objects)

    def of_kind(self, kind: str) -> list[Obj]:
        return [o for o in self.objects if o.get("kind") == kind]

    @property
    def jobset(self) -> Obj:
        """The JobSet (every plan has exactly one)."""
        (js,) = self.of_kind("JobSet")
        return js

    @property
    def podgroup(self) -> Obj | None:
        groups = self.of_kind("PodGroup")
        return groups[0] if groups else None

    @property
    def configmaps(self) -> list[Obj]:
        return self.of_kind("ConfigMap")

    @property
    def secrets(self) -> list[Obj]:
        return self.of_kind("Secret")

    def to_yaml(self) -> str:
        """Multi-document YAML that ``kubectl apply -f`` reads back as these objects (a string
        such as ``"1e-4"`` or ``"y"`` is quoted: go-yaml would read a number, a boolean)."""
        from trainjob.api import (
            goyaml,
        )  # on first use: the local supervisor reads Plans without YAML

        return goyaml.dump_all(list(self.objects))

    def to_json(self) -> str:
        return json.dumps(list(self.objects), indent=2)
