"""OptimizationJob: parsing into the model, upstream's defaults, and every validation message.

Test design notes: each case is a change to one valid OptimizationJob (``base()``), with the one
error line it must produce; the messages are written out literally (upstream's CEL texts where
upstream has them), not read from the module, so a changed message fails here.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from trainjob.api import load
from trainjob.api.base import to_dict
from trainjob.api.optimization import OptimizationJob, parse_optimization_job
from trainjob.api.optimization_validation import sample_values, validate_optimization_job
from trainjob.errors import InvalidError

Obj = dict[str, Any]


def base() -> Obj:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "OptimizationJob",
        "metadata": {"name": "sweep", "namespace": "default"},
        "spec": {
            "objectives": [{"metric": "loss"}],
            "parameters": [
                {"name": "lr", "searchSpace": {"logUniform": {"min": "1e-4", "max": "0.1"}}},
                {"name": "opt", "searchSpace": {"categorical": {"choices": ["sgd", "adam"]}}},
            ],
            "numTrials": 4,
            "trainJobTemplate": {
                "spec": {
                    "runtimeRef": {"name": "torch-distributed"},
                    "trainer": {"args": ["--lr={{.lr}}", "--optimizer={{ .opt }}"]},
                }
            },
        },
    }


def errors_of(doc: Obj) -> list[str]:
    try:
        parse_optimization_job(doc)
    except InvalidError as e:
        return [str(err) for err in e.errors]
    return []


def test_a_valid_job_parses_with_upstreams_defaults() -> None:
    job = parse_optimization_job(base())
    assert isinstance(job, OptimizationJob)
    spec = to_dict(job)["spec"]
    assert spec["searchAlgorithm"] == {"random": {}}
    assert spec["objectives"] == [{"metric": "loss", "direction": "Minimize"}]
    assert spec["parallelTrials"] == 1
    assert spec["parameters"][0]["searchSpace"]["logUniform"]["type"] == "Float"
    # trainjob's additions are off unless asked for.
    assert "maxFailedTrials" not in spec and "earlyStopping" not in spec


def test_a_yaml_document_of_kind_optimizationjob_loads_into_the_model() -> None:
    text = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: OptimizationJob
metadata: {name: s}
spec:
  objectives: [{metric: accuracy, direction: Maximize}]
  searchAlgorithm: {grid: {}}
  parameters: [{name: bs, searchSpace: {categorical: {choices: ["16", "32"]}}}]
  trainJobTemplate: {spec: {runtimeRef: {name: torch-distributed}, trainer: {args: ["{{.bs}}"]}}}
"""
    (doc,) = load.load_documents(text)
    parsed = load.parse(doc)
    assert isinstance(parsed, OptimizationJob)
    assert parsed.spec.search_algorithm is not None
    assert parsed.spec.search_algorithm.grid is not None
    assert validate_optimization_job(parsed) == []


def test_the_error_names_the_kind_and_the_job() -> None:
    doc = base()
    doc["spec"]["numTrials"] = 0
    with pytest.raises(
        InvalidError, match=r'^OptimizationJob.trainer.kubeflow.org "sweep" is invalid: '
    ):
        parse_optimization_job(doc)


def _set(path: str, value: Any) -> Callable[[Obj], None]:
    """A change to the document: set the value at a dotted path (``[i]`` indexes a list)."""

    def change(doc: Obj) -> None:
        node: Any = doc
        parts = path.replace("]", "").replace("[", ".").split(".")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
        last = parts[-1]
        if value is _DELETE:
            del node[int(last) if last.isdigit() else last]
        elif last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value

    return change


def _all(*changes: Callable[[Obj], None]) -> Callable[[Obj], None]:
    def change(doc: Obj) -> None:
        for ch in changes:
            ch(doc)

    return change


_DELETE = object()
P0 = "spec.parameters[0].searchSpace"
ARGS = "spec.trainJobTemplate.spec.trainer.args"

# The error lines a change must produce: one, or a few where one mistake breaks two rules.
CASES: list[tuple[str, Callable[[Obj], None], str | list[str]]] = [
    (
        "parallelTrials above numTrials",
        _set("spec.parallelTrials", 5),
        'spec: Invalid value: "...": parallelTrials cannot exceed numTrials',
    ),
    (
        "grid with a range parameter",
        _set("spec.searchAlgorithm", {"grid": {}}),
        'spec: Invalid value: "...": Grid search requires all parameters to be Categorical; '
        "Uniform and LogUniform are not supported.",
    ),
    (
        "two algorithms",
        _set("spec.searchAlgorithm", {"random": {}, "tpe": {"seed": 1}}),
        'spec.searchAlgorithm: Invalid value: {"random":{},"tpe":{"seed":1}}: '
        "exactly one of the fields in [random grid tpe] must be set",
    ),
    (
        "no algorithm",
        _set("spec.searchAlgorithm", {}),
        "spec.searchAlgorithm: Invalid value: {}: exactly one of the fields in [random grid tpe] "
        "must be set",
    ),
    (
        "uniform min not below max",
        _set(P0, {"uniform": {"min": "2", "max": "1"}}),
        f'{P0}.uniform: Invalid value: {{"min":"2","max":"1","type":"Float"}}: '
        "min must be strictly less than max",
    ),
    (
        "logUniform min zero",
        _set(P0, {"logUniform": {"min": "0", "max": "1"}}),
        f'{P0}.logUniform: Invalid value: {{"min":"0","max":"1","type":"Float"}}: '
        "min must be strictly greater than 0",
    ),
    (
        "logUniform min not below max",
        _set(P0, {"logUniform": {"min": "1", "max": "1"}}),
        f'{P0}.logUniform: Invalid value: {{"min":"1","max":"1","type":"Float"}}: '
        "min must be strictly less than max",
    ),
    (
        "min not a decimal",
        _set(f"{P0}.logUniform.min", "1/1000"),
        f'{P0}.logUniform.min: Invalid value: "1/1000": should match '
        "'^-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?$'",
    ),
    (
        "max too long",
        _set(f"{P0}.logUniform.max", "1" + "0" * 64),
        f'{P0}.logUniform.max: Too long: "1{"0" * 64}": may not be more than 64 bytes',
    ),
    (
        "min as a YAML number",
        _set(f"{P0}.logUniform.min", 0.001),
        f"{P0}.logUniform.min: Invalid value: 0.001: must be a string (quote it in YAML)",
    ),
    (
        "Int range with a fraction",
        _set(P0, {"uniform": {"min": "1.5", "max": "4", "type": "Int"}}),
        f'{P0}.uniform.min: Invalid value: "1.5": must be a whole number when type is Int',
    ),
    (
        "two search spaces",
        _set(f"{P0}.uniform", {"min": "1", "max": "2"}),
        f'{P0}: Invalid value: {{"uniform":{{"min":"1","max":"2","type":"Float"}},'
        f'"logUniform":{{"min":"1e-4","max":"0.1","type":"Float"}}}}: '
        "exactly one of the fields in [uniform logUniform categorical] must be set",
    ),
    (
        "no search space",
        _set(P0, {}),
        f"{P0}: Invalid value: {{}}: exactly one of the fields in [uniform logUniform "
        "categorical] must be set",
    ),
    (
        "no choices",
        _set("spec.parameters[1].searchSpace.categorical.choices", []),
        "spec.parameters[1].searchSpace.categorical.choices: Required value: "
        "must have at least 1 items",
    ),
    (
        "a choice twice",
        _set("spec.parameters[1].searchSpace.categorical.choices", ["sgd", "sgd"]),
        'spec.parameters[1].searchSpace.categorical.choices[1]: Duplicate value: "sgd"',
    ),
    (
        "a choice too long",
        _set("spec.parameters[1].searchSpace.categorical.choices", ["x" * 65]),
        f'spec.parameters[1].searchSpace.categorical.choices[0]: Too long: "{"x" * 65}": '
        "may not be more than 64 bytes",
    ),
    (
        "a parameter twice",
        _all(_set("spec.parameters[1].name", "lr"), _set(ARGS, ["--lr={{.lr}}"])),
        'spec.parameters[1]: Duplicate value: {"name":"lr"}',
    ),
    (
        "a parameter name that cannot be a placeholder",
        _all(_set("spec.parameters[1].name", "learning-rate"), _set(ARGS, ["{{.lr}}"])),
        'spec.parameters[1].name: Invalid value: "learning-rate": should match '
        "'^[A-Za-z_][A-Za-z0-9_]*$'",
    ),
    (
        "an empty parameter name",
        _all(_set("spec.parameters[1].name", ""), _set(ARGS, ["{{.lr}}"])),
        'spec.parameters[1].name: Invalid value: "": should be at least 1 chars long',
    ),
    (
        "a template that sets a parameter's variable itself",
        _set("spec.trainJobTemplate.spec.trainer.env", [{"name": "KUBEFLOW_TRAINER_OPT_LR"}]),
        "spec.trainJobTemplate.spec.trainer.env[0].name: Forbidden: KUBEFLOW_TRAINER_OPT_LR is "
        "set by the OptimizationJob to each trial's value of parameter lr",
    ),
    (
        "two parameters with one variable",
        _all(_set("spec.parameters[1].name", "LR"), _set(ARGS, [])),
        'spec.parameters[1].name: Invalid value: "LR": must differ from parameter lr in more '
        "than case: both would be KUBEFLOW_TRAINER_OPT_LR in the trials' env",
    ),
    (
        "a placeholder that is no parameter",
        _set(ARGS, ["--lr={{.lr}}", "{{.opt}}", "{{.momentum}}"]),
        'spec.trainJobTemplate: Invalid value: "{{.momentum}}": names no parameter; '
        "spec.parameters has: lr, opt",
    ),
    (
        "a parameter the placeholders leave out",
        _set(ARGS, ["--lr={{.lr}}"]),
        'spec.parameters[1].name: Invalid value: "opt": is not used by spec.trainJobTemplate: '
        "add {{.opt}} where the trial takes it (or read the env var KUBEFLOW_TRAINER_OPT_OPT "
        "and use no placeholder at all)",
    ),
    (
        "no parameters",
        _set("spec.parameters", []),
        "spec.parameters: Required value: must have at least 1 items",
    ),
    (
        "no objectives",
        _set("spec.objectives", []),
        "spec.objectives: Required value: must have at least 1 items",
    ),
    (
        "two objectives",
        _set("spec.objectives", [{"metric": "loss"}, {"metric": "acc"}]),
        "spec.objectives: Too many: 2: must have at most 1 items",
    ),
    (
        "an empty metric",
        _set("spec.objectives[0].metric", ""),
        'spec.objectives[0].metric: Invalid value: "": should be at least 1 chars long',
    ),
    (
        "an unknown direction",
        _set("spec.objectives[0].direction", "Up"),
        "spec.objectives[0].direction: Invalid value: \"Up\": must be 'Maximize' or 'Minimize'",
    ),
    (
        "numTrials zero",
        _set("spec.numTrials", 0),
        [
            "spec.numTrials: Invalid value: 0: should be greater than or equal to 1",
            'spec: Invalid value: "...": parallelTrials cannot exceed numTrials',
        ],
    ),
    (
        "numTrials above 100",
        _set("spec.numTrials", 101),
        "spec.numTrials: Invalid value: 101: should be less than or equal to 100",
    ),
    (
        "parallelTrials zero",
        _set("spec.parallelTrials", 0),
        "spec.parallelTrials: Invalid value: 0: should be greater than or equal to 1",
    ),
    (
        "maxFailedTrials negative",
        _set("spec.maxFailedTrials", -1),
        "spec.maxFailedTrials: Invalid value: -1: should be greater than or equal to 0",
    ),
    (
        "earlyStopping without a rule",
        _set("spec.earlyStopping", {}),
        "spec.earlyStopping: Invalid value: {}: exactly one of the fields in [median] must be set",
    ),
    (
        "median stopping before any trial completed",
        _set("spec.earlyStopping", {"median": {"minTrials": 0}}),
        "spec.earlyStopping.median.minTrials: Invalid value: 0: "
        "should be greater than or equal to 1",
    ),
    (
        "median stopping from a negative step",
        _set("spec.earlyStopping", {"median": {"startStep": -1}}),
        "spec.earlyStopping.median.startStep: Invalid value: -1: "
        "should be greater than or equal to 0",
    ),
    (
        "a name in the template's metadata",
        _set("spec.trainJobTemplate.metadata", {"name": "x"}),
        'spec.trainJobTemplate.metadata: Invalid value: {"name":"x"}: '
        "name and namespace cannot be set in a template.",
    ),
    (
        "a namespace in the template's metadata",
        _set("spec.trainJobTemplate.metadata", {"namespace": "x"}),
        'spec.trainJobTemplate.metadata: Invalid value: {"namespace":"x"}: '
        "name and namespace cannot be set in a template.",
    ),
    (
        "a label that is invalid once filled in",
        _set("spec.trainJobTemplate.metadata", {"labels": {"opt": "{{.opt}}!"}}),
        'spec.trainJobTemplate.metadata.labels: Invalid value: "sgd!": a valid label must be an '
        "empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and "
        "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex "
        "used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ),
    (
        "a template spec that is invalid once filled in",
        _set("spec.trainJobTemplate.spec.initializer", {"model": {"storageUri": "{{.opt}}"}}),
        [
            'spec.trainJobTemplate.spec.initializer.model.storageUri: Invalid value: "sgd": '
            "storageUri may be empty, or it must be a valid URI (scheme://...) "
            "(with lr=1e-4, opt=sgd)",
            'spec.trainJobTemplate.spec.initializer.model.storageUri: Invalid value: "adam": '
            "storageUri may be empty, or it must be a valid URI (scheme://...) "
            "(with lr=0.1, opt=adam)",
        ],
    ),
    (
        "a template spec that breaks a TrainJob rule",
        _set("spec.trainJobTemplate.spec.activeDeadlineSeconds", 0),
        "spec.trainJobTemplate.spec.activeDeadlineSeconds: Invalid value: 0: should be greater "
        "than or equal to 1 (with lr=1e-4, opt=sgd)",
    ),
    (
        "a template without a spec",
        _set("spec.trainJobTemplate.spec", _DELETE),
        "spec.trainJobTemplate.spec: Required value",
    ),
    (
        "an unknown field in the template",
        _set("spec.trainJobTemplate.spec.trainer.numNode", 2),
        'spec.trainJobTemplate.spec.trainer.numNode: Forbidden: unknown field "numNode"; '
        "check its spelling against the trainer.kubeflow.org/v1alpha1 API",
    ),
    (
        "a name the trial names would make too long",
        _set("metadata.name", "s" * 62),
        f'metadata.name: Invalid value: "{"s" * 62}": must be no more than 61 characters, so '
        f"that the trial names (such as {'s' * 62}-3) are valid TrainJob names",
    ),
    (
        "a name that is not an RFC 1035 label",
        _set("metadata.name", "1sweep"),
        'metadata.name: Invalid value: "1sweep": metadata.name must match RFC 1035 DNS label '
        "format",
    ),
    (
        "no name",
        _set("metadata.name", _DELETE),
        "metadata.name: Required value: name or generateName is required",
    ),
]


@pytest.mark.parametrize(
    ("change", "want"), [pytest.param(ch, want, id=case_id) for case_id, ch, want in CASES]
)
def test_invalid_job_is_refused_with_a_clear_error(
    change: Callable[[Obj], None], want: str | list[str]
) -> None:
    doc = base()
    change(doc)
    assert errors_of(doc) == ([want] if isinstance(want, str) else want)


def test_every_error_is_reported_not_only_the_first() -> None:
    doc = base()
    doc["spec"]["numTrials"] = 0
    doc["spec"]["maxFailedTrials"] = -1
    doc["spec"]["objectives"] = []
    assert (
        len(errors_of(doc)) == 4
    )  # objectives, numTrials, parallelTrials > numTrials, maxFailedTrials


def test_a_spec_change_is_refused_with_upstreams_message() -> None:
    old = parse_optimization_job(base())
    doc = base()
    doc["spec"]["numTrials"] = 5
    new = load.parse(doc)
    assert isinstance(new, OptimizationJob)
    assert [str(e) for e in validate_optimization_job(new, old)] == [
        'spec: Invalid value: "...": OptimizationJobSpec is immutable and cannot be updated after '
        "creation"
    ]
    status_only = load.parse(copy.deepcopy(base()) | {"status": {"trials": []}})
    assert isinstance(status_only, OptimizationJob)
    assert validate_optimization_job(status_only, old) == []


def test_a_parameter_need_not_be_a_placeholder_as_upstreams_trials_get_env_vars() -> None:
    doc = base()
    doc["spec"]["trainJobTemplate"]["spec"]["trainer"] = {"command": ["python", "train.py"]}
    assert errors_of(doc) == []


def test_sample_values_are_each_parameters_ends() -> None:
    job = parse_optimization_job(base())
    job.spec.parameters[0].search_space.log_uniform = None
    doc = base()
    doc["spec"]["parameters"][0]["searchSpace"] = {
        "uniform": {"min": "1", "max": "8", "type": "Int"}
    }
    job = parse_optimization_job(doc)
    assert sample_values(job.spec.parameters) == {"lr": "1", "opt": "sgd"}
    assert sample_values(job.spec.parameters, high=True) == {"lr": "8", "opt": "adam"}


def test_a_bad_range_is_not_also_reported_through_the_template_it_fills() -> None:
    doc = base()
    doc["spec"]["parameters"][0]["searchSpace"] = {"uniform": {"min": "x", "max": "1"}}
    doc["spec"]["trainJobTemplate"]["spec"]["initializer"] = {"model": {"storageUri": "{{.lr}}"}}
    assert errors_of(doc) == [
        'spec.parameters[0].searchSpace.uniform.min: Invalid value: "x": should match '
        "'^-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?$'"
    ]
