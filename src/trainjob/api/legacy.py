"""Translate v2.0/v2.1 TrainJob fields into the v2.3 shape.

KEP-2170 named ``labels``, ``annotations``, ``podSpecOverrides`` (v2.0) and ``podTemplateOverrides``
(v2.1); v2.2 replaced them with ``runtimePatches``. Each legacy field becomes one RuntimePatch
whose manager says where it came from, applied before the user's own patches (as upstream
applied overrides before anything else). ``torch.numProcPerNode``/``elasticPolicy`` on runtimes have
no v2.3 equivalent: they stay on the model and the Torch plugin reads them.
"""

from __future__ import annotations

from typing import Any

from trainjob.api.base import to_dict
from trainjob.api.trainer import RuntimePatch, TrainJobSpec

LEGACY_METADATA_MANAGER = "trainer.kubeflow.org/v2.0-metadata"
LEGACY_POD_SPEC_OVERRIDES_MANAGER = "trainer.kubeflow.org/v2.0-pod-spec-overrides"
LEGACY_POD_TEMPLATE_OVERRIDES_MANAGER = "trainer.kubeflow.org/v2.1-pod-template-overrides"


def legacy_patches(spec: TrainJobSpec) -> list[RuntimePatch]:
    """The RuntimePatches equivalent to the legacy fields of ``spec`` (empty when none)."""
    patches: list[RuntimePatch] = []
    if spec.labels or spec.annotations:
        meta: dict[str, Any] = {}
        if spec.labels:
            meta["labels"] = dict(spec.labels)
        if spec.annotations:
            meta["annotations"] = dict(spec.annotations)
        patches.append(_patch(LEGACY_METADATA_MANAGER, {"metadata": meta}))
    if spec.pod_spec_overrides:
        jobs: list[dict[str, Any]] = []
        for ov in spec.pod_spec_overrides:
            pod_spec = to_dict(ov)
            targets = pod_spec.pop("targetJobs")
            for t in targets:
                jobs.append(_job_patch(t["name"], None, pod_spec))
        patches.append(
            _patch(LEGACY_POD_SPEC_OVERRIDES_MANAGER, {"spec": {"replicatedJobs": jobs}})
        )
    if spec.pod_template_overrides:
        jobs = []
        for tov in spec.pod_template_overrides:
            d = to_dict(tov)
            for t in d.pop("targetJobs"):
                jobs.append(_job_patch(t["name"], d.get("metadata"), d.get("spec")))
        patches.append(
            _patch(LEGACY_POD_TEMPLATE_OVERRIDES_MANAGER, {"spec": {"replicatedJobs": jobs}})
        )
    return patches


def _job_patch(
    name: str, metadata: dict[str, Any] | None, pod_spec: dict[str, Any] | None
) -> dict[str, Any]:
    pod: dict[str, Any] = {}
    if metadata:
        pod["metadata"] = {k: v for k, v in metadata.items() if k in ("labels", "annotations")}
    if pod_spec:
        pod["spec"] = pod_spec
    return {"name": name, "template": {"spec": {"template": pod}}}


def _patch(manager: str, template: dict[str, Any]) -> RuntimePatch:
    return RuntimePatch.model_validate(
        {"manager": manager, "trainingRuntimeSpec": {"template": template}}
    )
