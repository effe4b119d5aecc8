"""Trial TrainJobs from the template: names, placeholders anywhere, typed values, env vars,
labels, annotations and the ownerReference."""

from __future__ import annotations

import json

from trainjob.api import constants as c
from trainjob.api.base import to_dict
from trainjob.api.validation import validate_trainjob
from trainjob.optimizer.template import parameters_of, placeholders, render_trial, trial_name

from .builders import LR, OPT, sweep

PARAMS = {"lr": "0.003", "opt": "adam"}


def test_placeholders_are_found_in_any_string_with_or_without_spaces() -> None:
    spec = {
        "a": ["--lr={{.lr}}", {"b": "{{ .opt }}"}],
        "{{.key}}": 1,
        "c": "{{.x}}-{{.y}} and {{ not a placeholder }}",
    }
    assert placeholders(spec) == {"lr", "opt", "key", "x", "y"}


def test_a_trial_is_named_and_labelled_after_its_job_and_index() -> None:
    tj = render_trial(sweep(), 3, PARAMS)
    assert tj.metadata.name == trial_name("sweep", 3) == "sweep-3"
    assert tj.metadata.namespace == "default"
    assert tj.metadata.labels == {
        "trainer.kubeflow.org/optimization-job": "sweep",
        "trainer.kubeflow.org/trial-index": "3",
    }
    annotations = tj.metadata.annotations or {}
    assert json.loads(annotations["trainer.kubeflow.org/trial-parameters"]) == PARAMS
    assert parameters_of(tj) == PARAMS
    assert tj.metadata.owner_references is None  # the job has no uid yet
    assert validate_trainjob(tj) == []


def test_values_fill_placeholders_anywhere_in_the_spec_and_the_metadata() -> None:
    template = {
        "metadata": {
            "labels": {"opt": "{{.opt}}", "team": "a"},
            "annotations": {"note": "lr is {{.lr}}"},
        },
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "initializer": {"model": {"storageUri": "hf://org/model-{{.opt}}"}},
            "trainer": {
                "command": ["python", "train.py", "--lr", "{{.lr}}"],
                "env": [{"name": "OPTIMIZER", "value": "{{ .opt }}"}],
            },
        },
    }
    tj = render_trial(sweep(template=template), 0, PARAMS)
    spec = to_dict(tj)["spec"]
    assert spec["initializer"]["model"]["storageUri"] == "hf://org/model-adam"
    assert spec["trainer"]["command"] == ["python", "train.py", "--lr", "0.003"]
    assert tj.metadata.labels is not None and tj.metadata.labels["opt"] == "adam"
    assert tj.metadata.labels["team"] == "a"
    assert (tj.metadata.annotations or {})["note"] == "lr is 0.003"
    # A whole-value placeholder in a string field stays a string, even if it looks like a number.
    assert spec["trainer"]["env"][0] == {"name": "OPTIMIZER", "value": "adam"}
    assert spec["trainer"]["command"][3] == "0.003"


def test_every_value_is_also_an_env_var_as_upstreams_kep_passes_them() -> None:
    template = {"spec": {"runtimeRef": {"name": "torch-distributed"}}}
    tj = render_trial(sweep(template=template), 1, PARAMS)
    env = {e.name: e.value for e in (tj.spec.trainer.env if tj.spec.trainer else None) or ()}
    assert env == {"KUBEFLOW_TRAINER_OPT_LR": "0.003", "KUBEFLOW_TRAINER_OPT_OPT": "adam"}


def test_a_placeholder_for_a_field_that_takes_a_number_becomes_a_number() -> None:
    units = {"name": "procs", "searchSpace": {"uniform": {"min": "1", "max": "4", "type": "Int"}}}
    cpu = {"name": "cpu", "searchSpace": {"categorical": {"choices": ["2", "500m"]}}}
    template = {
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {
                "numProcPerNode": "{{.procs}}",
                "resourcesPerNode": {"requests": {"cpu": "{{.cpu}}"}},
                "args": ["{{.procs}}"],
            },
        }
    }
    job = sweep(units, cpu, template=template)
    tj = render_trial(job, 0, {"procs": "2", "cpu": "2"})
    spec = to_dict(tj)["spec"]["trainer"]
    assert spec["numProcPerNode"] == 2  # an int, not "2" (which the Torch plugin refuses)
    assert spec["resourcesPerNode"]["requests"]["cpu"] == 2
    assert spec["args"] == ["2"]
    other = to_dict(render_trial(job, 1, {"procs": "3", "cpu": "500m"}))["spec"]["trainer"]
    assert other["resourcesPerNode"]["requests"]["cpu"] == "500m"
    assert validate_trainjob(tj) == []


def test_a_job_with_a_uid_owns_its_trials() -> None:
    job = sweep(LR, OPT, metadata={"name": "sweep", "namespace": "team-a", "uid": "u-1"})
    tj = render_trial(job, 0, PARAMS)
    assert tj.metadata.namespace == "team-a"
    assert [to_dict(o) for o in tj.metadata.owner_references or ()] == [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "OptimizationJob",
            "name": "sweep",
            "uid": "u-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_the_templates_own_labels_cannot_override_the_trial_labels() -> None:
    template = {
        "metadata": {"labels": {c.LABEL_TRIAL_INDEX: "9", c.LABEL_OPTIMIZATION_JOB: "other"}},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"args": ["{{.lr}}"]}},
    }
    tj = render_trial(sweep(LR, template=template), 2, {"lr": "0.01"})
    assert tj.metadata.labels == {c.LABEL_OPTIMIZATION_JOB: "sweep", c.LABEL_TRIAL_INDEX: "2"}


def test_the_template_is_not_changed_by_rendering() -> None:
    job = sweep()
    before = to_dict(job)
    render_trial(job, 0, PARAMS)
    assert to_dict(job) == before


def test_parameters_of_a_trainjob_without_a_good_annotation_are_unknown() -> None:
    tj = render_trial(sweep(), 0, PARAMS)
    assert tj.metadata.annotations is not None
    tj.metadata.annotations[c.ANNOTATION_TRIAL_PARAMETERS] = "{not json"
    assert parameters_of(tj) is None
    tj.metadata.annotations[c.ANNOTATION_TRIAL_PARAMETERS] = '{"lr": 1}'
    assert parameters_of(tj) is None
    del tj.metadata.annotations[c.ANNOTATION_TRIAL_PARAMETERS]
    assert parameters_of(tj) is None
