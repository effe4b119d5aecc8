"""The plugin registry: name -> factory, the single list of plugins (upstream ``registry.go``).

Order matters only for the order of objects in a Plan: PodGroups, then MPI's Secret and
ConfigMap, then the JobSet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainjob.runtime.plugins import jobset, plainml, torch

REGISTRY: dict[str, Callable[[], Any]] = {
    plainml.NAME: plainml.PlainML,
    torch.NAME: torch.Torch,
    jobset.NAME: jobset.JobSet,
}
