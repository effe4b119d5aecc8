"""A trial's TrainJob, made from an OptimizationJob's ``trainJobTemplate``.

The trial of index ``n`` (from 0, like a pod's completion index) is the TrainJob ``<job>-<n>`` in
the job's namespace, with the template's spec, every parameter value filled in (as
``KUBEFLOW_TRAINER_OPT_<NAME>`` in ``spec.trainer.env`` and into ``{{.name}}`` placeholders;
:mod:`trainjob.api.placeholders`), the template's labels and annotations (placeholders filled
in too) plus:

* labels ``trainer.kubeflow.org/optimization-job: <job>`` and ``trainer.kubeflow.org/trial-index: <n>``
  (how a backend lists a sweep's trials);
* annotation ``trainer.kubeflow.org/trial-parameters``: the values as a JSON object of strings
  (how a backend reads a trial's parameters back; KEP 2605 keeps them in an annotation too);
* an ownerReference to the OptimizationJob (controller, blockOwnerDeletion) once it has a uid, so
  that a cluster deletes the trials with their job.

Pure: called by every backend's sweep driver and by the controller.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from trainjob.api import constants as c
from trainjob.api import placeholders as ph
from trainjob.api.base import to_dict
from trainjob.api.optimization import OptimizationJob
from trainjob.api.trainer import TrainJob

__all__ = ["parameters_of", "placeholders", "render_trial", "trial_name"]


def placeholders(spec: Any) -> set[str]:
    """The parameter names used as ``{{.name}}`` (or ``{{ .name }}``) anywhere in ``spec``."""
    return ph.placeholders(spec)


def trial_name(job_name: str, index: int) -> str:
    """``<job>-<index>``: the name of a sweep's trial TrainJob."""
    return f"{job_name}-{index}"


def render_trial(job: OptimizationJob, index: int, parameters: Mapping[str, str]) -> TrainJob:
    """The TrainJob of trial ``index`` with ``parameters`` (name -> value as a string)."""
    name = job.metadata.name or ""
    template = job.spec.train_job_template
    values = dict(parameters)
    meta: dict[str, Any] = to_dict(template.metadata) if template.metadata else {}
    meta = ph.substitute(meta, values)
    meta["name"] = trial_name(name, index)
    if job.metadata.namespace:
        meta["namespace"] = job.metadata.namespace
    meta["labels"] = {
        **(meta.get("labels") or {}),
        c.LABEL_OPTIMIZATION_JOB: name,
        c.LABEL_TRIAL_INDEX: str(index),
    }
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        c.ANNOTATION_TRIAL_PARAMETERS: json.dumps(values, sort_keys=True),
    }
    if job.metadata.uid:
        meta["ownerReferences"] = [
            {
                "apiVersion": c.API_VERSION,
                "kind": c.OPTIMIZATION_JOB_KIND,
                "name": name,
                "uid": job.metadata.uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    doc = {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB_KIND,
        "metadata": meta,
        "spec": ph.fill(to_dict(template.spec), values),
    }
    return TrainJob.model_validate(doc, by_alias=True, by_name=False)


def parameters_of(trainjob: TrainJob) -> dict[str, str] | None:
    """A trial's parameters, read back from its annotation; None when it has none (or a bad one)."""
    text = (trainjob.metadata.annotations or {}).get(c.ANNOTATION_TRIAL_PARAMETERS)
    if text is None:
        return None
    try:
        values = json.loads(text)
    except ValueError:
        return None
    if not isinstance(values, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in values.items()
    ):
        return None
    return values
