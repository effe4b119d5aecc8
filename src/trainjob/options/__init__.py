"""``trainjob.options``: the path of upstream's ``kubeflow.trainer.options``, so that code ported by
replacing ``kubeflow.trainer`` with ``trainjob`` imports unchanged
(``from trainjob.options import Name, Labels, RuntimePatch``).

The options live in :mod:`trainjob.client.options` (also exported from ``trainjob``); these are
the same objects. ``trainjob.options.common`` and ``trainjob.options.kubernetes`` mirror
upstream's submodules; every option works on every backend here.
"""

from __future__ import annotations

from trainjob.client.options import (
    ActiveDeadlineSeconds,
    Annotations,
    ContainerPatch,
    JobSetSpecPatch,
    JobSetTemplatePatch,
    JobSpecPatch,
    JobTemplatePatch,
    Labels,
    Name,
    PodSpecPatch,
    PodTemplatePatch,
    ReplicatedJobPatch,
    RuntimePatch,
    TrainerArgs,
    TrainerCommand,
    TrainerEnvFrom,
    TrainingRuntimeSpecPatch,
)
from trainjob.client.workspace import Workspace

__all__ = [
    "ActiveDeadlineSeconds",
    "Annotations",
    "ContainerPatch",
    "JobSetSpecPatch",
    "JobSetTemplatePatch",
    "JobSpecPatch",
    "JobTemplatePatch",
    "Labels",
    "Name",
    "PodSpecPatch",
    "PodTemplatePatch",
    "ReplicatedJobPatch",
    "RuntimePatch",
    "TrainerArgs",
    "TrainerCommand",
    "TrainerEnvFrom",
    "TrainingRuntimeSpecPatch",
    "Workspace",
]
