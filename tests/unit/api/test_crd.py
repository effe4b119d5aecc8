"""The generated CRDs: fresh on disk, structural, and saying what upstream v2.3's CRDs say.

Test design notes: the structural checker below restates the apiserver's rules for CRD schemas
(it has its own negative cases, so a schema it passes could still be wrong only where the rules
are not restated here; tests/integration/test_crds.py installs the files on a real apiserver).
Upstream facts (messages, defaults, limits, list types) are written out literally here, not read
from trainjob.api.crd_rules, so a change to the rules has to change a test too.
"""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from trainjob.api import crd, crd_rules
from trainjob.api.base import K8sModel, to_dict
from trainjob.api.load import parse
from trainjob.api.optimization import OptimizationJob
from trainjob.api.optimization_validation import validate_optimization_job
from trainjob.api.trainer import ClusterTrainingRuntime, TrainingRuntime, TrainJob
from trainjob.api.validation import validate_runtime, validate_trainjob

from .crd_docs import CEL_CASES, PLURAL_OF, apply_defaults, complete, documents, is_subset, prune

REPO = Path(__file__).resolve().parents[3]
CRD_DIR = REPO / "manifests" / "crds"
Obj = dict[str, Any]


@functools.cache
def _parsed(plural: str) -> Obj:
    path = CRD_DIR / f"trainer.kubeflow.org_{plural}.yaml"
    (doc,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return doc  # type: ignore[no-any-return]


def committed(plural: str) -> Obj:
    """The CRD file as committed (a fresh copy: tests may not change each other's input)."""
    return copy.deepcopy(_parsed(plural))


def schema_of(plural: str) -> Obj:
    return committed(plural)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def node_at(schema: Obj, path: str) -> Obj:
    """``spec.trainer.env[]`` -> the schema node (``[]`` steps into items, ``{}`` into values)."""
    node = schema
    for part in re.findall(r"[^.\[\]{}]+|\[\]|\{\}", path):
        if part == "[]":
            node = node["items"]
        elif part == "{}":
            node = node["additionalProperties"]
        else:
            node = node["properties"][part]
    return node


PLURALS = ("trainjobs", "trainingruntimes", "clustertrainingruntimes", "optimizationjobs")


# --- freshness ------------------------------------------------------------------------------------


def test_committed_crds_equal_freshly_generated_ones() -> None:
    diffs = crd.stale(CRD_DIR)
    assert not diffs, "manifests/crds is stale; run `python -m trainjob.api.crd`:\n" + "".join(
        diffs
    )


def test_check_flag_fails_with_a_diff_until_the_files_are_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert crd.main(["--check", "--out", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "+  name: trainjobs.trainer.kubeflow.org" in out
    assert "are stale" in err
    assert crd.main(["--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"trainer.kubeflow.org_{p}.yaml" for p in PLURALS
    )
    capsys.readouterr()
    assert crd.main(["--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "trainer.kubeflow.org_trainjobs.yaml").write_text("stale\n")
    assert crd.main(["--check", "--out", str(tmp_path)]) == 1
    assert "-stale" in capsys.readouterr().out


def test_generation_is_deterministic() -> None:
    assert crd.generate() == crd.generate()


# --- structural schema checker ------------------------------------------------------------------

FORBIDDEN_KEYWORDS = {
    "$ref",
    "$schema",
    "$defs",
    "definitions",
    "id",
    "const",
    "patternProperties",
    "dependencies",
    "additionalItems",
}
TYPES = {"object", "array", "string", "integer", "number", "boolean"}
INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]


def structural_errors(schema: Obj) -> list[str]:
    """The apiserver's structural-schema rules (and the CEL correlation rule), as messages."""
    errs: list[str] = []

    def walk(node: Any, path: str, correlatable: bool) -> None:
        if not isinstance(node, dict):
            errs.append(f"{path}: not a schema object")
            return
        for k in sorted(FORBIDDEN_KEYWORDS & set(node)):
            errs.append(f"{path}: forbidden keyword {k}")
        int_or_string = node.get("x-kubernetes-int-or-string") is True
        preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
        if "type" in node:
            if node["type"] not in TYPES:
                errs.append(f"{path}: bad type {node['type']!r}")
            if int_or_string:
                errs.append(f"{path}: x-kubernetes-int-or-string must not have a type")
        elif not (int_or_string or preserve):
            errs.append(f"{path}: no type")
        for junctor in ("allOf", "oneOf", "not"):
            if junctor in node:
                errs.append(f"{path}: {junctor} is not used by trainjob's schemas")
        if "anyOf" in node and not (int_or_string and node["anyOf"] == INT_OR_STRING):
            errs.append(f"{path}: anyOf other than the int-or-string pattern")
        if node.get("uniqueItems") is True:
            errs.append(f"{path}: uniqueItems: true")
        if node.get("additionalProperties") is False:
            errs.append(f"{path}: additionalProperties: false")
        if "properties" in node and "additionalProperties" in node:
            errs.append(f"{path}: properties and additionalProperties together")
        if node.get("type") == "array" and not isinstance(node.get("items"), dict):
            errs.append(f"{path}: array without an items schema")
        list_type = node.get("x-kubernetes-list-type")
        if list_type == "map":
            item = node.get("items", {})
            for key in node.get("x-kubernetes-list-map-keys") or [f"{path}: no map keys"]:
                prop = item.get("properties", {}).get(key)
                if prop is None:
                    errs.append(f"{path}: list map key {key} is not a property of the items")
                elif key not in item.get("required", []) and "default" not in prop:
                    errs.append(f"{path}: list map key {key} is neither required nor defaulted")
                elif prop.get("type") not in ("string", "integer", "boolean"):
                    errs.append(f"{path}: list map key {key} is not a scalar")
        elif list_type == "set" and node.get("items", {}).get("type") in ("object", "array"):
            errs.append(f"{path}: list-type set of non-scalars")
        for rule in node.get("x-kubernetes-validations", []):
            if set(rule) - {"rule", "message", "messageExpression", "reason", "fieldPath"}:
                errs.append(f"{path}: bad validation entry {rule}")
            if "oldSelf" in rule["rule"] and not correlatable:
                errs.append(f"{path}: transition rule where old and new cannot be correlated")
        for name, prop in node.get("properties", {}).items():
            walk(prop, f"{path}.{name}", correlatable)
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], f"{path}{{}}", correlatable)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]", correlatable and list_type == "map")

    walk(schema, "<root>", True)
    meta = schema.get("properties", {}).get("metadata")
    if meta is not None:
        allowed = {"name", "generateName"}
        if set(meta) - {"type", "properties"} or set(meta.get("properties", {})) - allowed:
            errs.append("metadata: only metadata.name and metadata.generateName may be restricted")
    return errs


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        pytest.param(
            {"type": "object", "properties": {"a": {}}}, "<root>.a: no type", id="untyped"
        ),
        pytest.param({"$ref": "#/$defs/X"}, "forbidden keyword $ref", id="a $ref"),
        pytest.param(
            {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}},
            "anyOf other than",
            id="anyOf with types",
        ),
        pytest.param(
            {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}},
            "properties and additionalProperties together",
            id="properties and additionalProperties",
        ),
        pytest.param(
            {
                "type": "array",
                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
            },
            "neither required nor defaulted",
            id="optional list map key",
        ),
        pytest.param(
            {
                "type": "array",
                "items": {
                    "type": "string",
                    "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "m"}],
                },
            },
            "cannot be correlated",
            id="transition rule in an atomic list",
        ),
        pytest.param(
            {
                "type": "object",
                "properties": {
                    "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}
                },
            },
            "only metadata.name",
            id="metadata restricted beyond its name",
        ),
        pytest.param(
            {"type": "string", "x-kubernetes-int-or-string": True, "anyOf": INT_OR_STRING},
            "must not have a type",
            id="typed int-or-string",
        ),
    ],
)
def test_structural_checker_catches(schema: Obj, problem: str) -> None:
    errs = structural_errors(schema)
    assert any(problem in e for e in errs), errs


@pytest.mark.parametrize("plural", PLURALS)
def test_schema_is_structural(plural: str) -> None:
    assert structural_errors(schema_of(plural)) == []


def test_rules_name_only_models_and_fields_that_exist() -> None:
    used = set()
    for resource in crd.RESOURCES:
        used |= set(crd._model_classes(resource.model)) | {resource.model.__name__}
    assert sorted(cls.__name__ for cls in crd_rules.SCHEMA if cls.__name__ not in used) == []


def test_a_union_that_cannot_be_structural_is_refused() -> None:
    class Odd(BaseModel):
        x: int | list[str]

    with pytest.raises(crd.SchemaError, match="union"):
        crd.openapi_schema(Odd)


# --- the CRD objects ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plural", "kind", "scope", "status"),
    [
        pytest.param("trainjobs", "TrainJob", "Namespaced", True, id="TrainJob"),
        pytest.param("trainingruntimes", "TrainingRuntime", "Namespaced", False, id="TR"),
        pytest.param(
            "clustertrainingruntimes", "ClusterTrainingRuntime", "Cluster", False, id="CTR"
        ),
        pytest.param("optimizationjobs", "OptimizationJob", "Namespaced", True, id="OJ"),
    ],
)
def test_names_scope_and_version_are_upstreams(
    plural: str, kind: str, scope: str, status: bool
) -> None:
    doc = committed(plural)
    assert doc["apiVersion"] == "apiextensions.k8s.io/v1"
    assert doc["metadata"]["name"] == f"{plural}.trainer.kubeflow.org"
    spec = doc["spec"]
    assert spec["group"] == "trainer.kubeflow.org"
    assert spec["names"] == {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
    }
    assert spec["scope"] == scope
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert ("subresources" in version) == status
    if status:
        assert version["subresources"] == {"status": {}}


def test_trainjob_printer_columns_are_upstreams() -> None:
    (version,) = committed("trainjobs")["spec"]["versions"]
    assert version["additionalPrinterColumns"] == [
        {"jsonPath": ".status.conditions[-1:].type", "name": "State", "type": "string"},
        {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
    ]
    for plural in ("trainingruntimes", "clustertrainingruntimes", "optimizationjobs"):
        (version,) = committed(plural)["spec"]["versions"]
        assert "additionalPrinterColumns" not in version


# --- CEL rules ------------------------------------------------------------------------------------

IMMUTABLE = "field is immutable"
UPSTREAM_CEL: list[tuple[str, str, str]] = [
    ("trainjobs", "", "metadata.name must match RFC 1035 DNS label format"),
    ("trainjobs", "", "metadata.name must be no more than 63 characters"),
    ("trainjobs", "spec.runtimeRef", IMMUTABLE),
    ("trainjobs", "spec.initializer", IMMUTABLE),
    ("trainjobs", "spec.trainer", IMMUTABLE),
    ("trainjobs", "spec.activeDeadlineSeconds", IMMUTABLE),
    (
        "trainjobs",
        "spec.managedBy",
        "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue "
        "if set",
    ),
    ("trainjobs", "spec.managedBy", IMMUTABLE),
    (
        "trainjobs",
        "spec.initializer.dataset.storageUri",
        "storageUri may be empty, or it must be a valid URI (scheme://...)",
    ),
    (
        "trainjobs",
        "spec.initializer.model.storageUri",
        "storageUri may be empty, or it must be a valid URI (scheme://...)",
    ),
    (
        "trainjobs",
        "spec.trainer.numProcPerNode",
        "numProcPerNode must be greater than or equal to 1",
    ),
    ("trainjobs", "spec.runtimePatches[].manager", IMMUTABLE),
    *(
        (
            "trainjobs",
            "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[]"
            f".template.spec.template.spec.{field}",
            IMMUTABLE,
        )
        for field in (
            "serviceAccountName",
            "volumes",
            "initContainers",
            "containers",
            "imagePullSecrets",
            "securityContext",
            "terminationGracePeriodSeconds",
        )
    ),
    (
        "trainjobs",
        "status.trainerStatus",
        "lastUpdatedTime is required when trainerStatus is present",
    ),
    *(
        (plural, path, msg)
        for plural in ("trainingruntimes", "clustertrainingruntimes")
        for path, msg in (
            ("spec.mlPolicy", "Only one of the policy can be configured"),
            ("spec.mlPolicy", "numNodes should not be set if torch.elasticPolicy is configured"),
            (
                "spec.mlPolicy.torch.envInjection.targets[].containerNames",
                "containerNames must not include the main node container because PET_* envs are "
                "always injected into it",
            ),
            (
                "spec.mlPolicy.mpi.numProcPerNode",
                "numProcPerNode must be greater than or equal to 1",
            ),
            ("spec.mlPolicy.flux.numProcPerNode", "NumProcPerNode in fluxPolicy must be >= 1"),
            (
                "spec.mlPolicy.torch.numProcPerNode",
                "NumProcPerNode must be equal to auto, cpu, gpu, or int value",
            ),
        )
    ),
    # upstream main after v2.3 (optimizationjob_types.go), and controller-gen's ExactlyOneOf
    # messages (trainjob's tpe and earlyStopping are members of their own).
    (
        "optimizationjobs",
        "spec",
        "OptimizationJobSpec is immutable and cannot be updated after creation",
    ),
    ("optimizationjobs", "spec", "parallelTrials cannot exceed numTrials"),
    (
        "optimizationjobs",
        "spec",
        "Grid search requires all parameters to be Categorical; Uniform and LogUniform are not "
        "supported.",
    ),
    (
        "optimizationjobs",
        "spec.searchAlgorithm",
        "exactly one of the fields in [random grid tpe] must be set",
    ),
    (
        "optimizationjobs",
        "spec.parameters[].searchSpace",
        "exactly one of the fields in [uniform logUniform categorical] must be set",
    ),
    (
        "optimizationjobs",
        "spec.parameters[].searchSpace.uniform",
        "min must be strictly less than max",
    ),
    (
        "optimizationjobs",
        "spec.parameters[].searchSpace.logUniform",
        "min must be strictly greater than 0",
    ),
    (
        "optimizationjobs",
        "spec.parameters[].searchSpace.logUniform",
        "min must be strictly less than max",
    ),
    (
        "optimizationjobs",
        "spec.trainJobTemplate.metadata",
        "name and namespace cannot be set in a template.",
    ),
    ("optimizationjobs", "spec.earlyStopping", "exactly one of the fields in [median] must be set"),
]


@pytest.mark.parametrize(
    ("plural", "path", "message"),
    [
        pytest.param(*case, id=f"{case[0]} {case[1] or '<root>'}: {case[2]}")
        for case in UPSTREAM_CEL
    ],
)
def test_upstream_cel_rule_is_in_the_crd(plural: str, path: str, message: str) -> None:
    node = node_at(schema_of(plural), path)
    assert message in [r["message"] for r in node.get("x-kubernetes-validations", [])]


def test_only_one_policy_rule_covers_every_ml_policy() -> None:
    (rule,) = [
        r["rule"]
        for r in node_at(schema_of("trainingruntimes"), "spec.mlPolicy")["x-kubernetes-validations"]
        if r["message"] == "Only one of the policy can be configured"
    ]
    policies = set(node_at(schema_of("trainingruntimes"), "spec.mlPolicy")["properties"])
    assert set(re.findall(r"has\(self\.(\w+)\)", rule)) == policies - {"numNodes"}


def all_rules(node: Obj, path: str = "") -> list[tuple[str, str, str]]:
    out = [(path, r["rule"], r["message"]) for r in node.get("x-kubernetes-validations", [])]
    for name, prop in node.get("properties", {}).items():
        out += all_rules(prop, f"{path}.{name}" if path else name)
    for key, step in (("items", "[]"), ("additionalProperties", "{}")):
        if isinstance(node.get(key), dict):
            out += all_rules(node[key], path + step)
    return out


PYTHON_CHECKS = [
    REPO / "src/trainjob/api/validation.py",
    REPO / "src/trainjob/api/runtime_validation.py",
    REPO / "src/trainjob/api/meta.py",
    REPO / "src/trainjob/api/optimization_validation.py",
    *sorted((REPO / "src/trainjob/runtime/plugins").glob("*.py")),
]


@functools.cache
def _python_source() -> str:
    # Joined string literals ("a " "b") count as one.
    text = "\n".join(p.read_text() for p in PYTHON_CHECKS)
    return re.sub(r'"\s*\n\s*(?:f)?"', "", text)


CRD_MESSAGES = sorted({m for p in PLURALS for _, _, m in all_rules(schema_of(p))})


@pytest.mark.parametrize(
    "message", CRD_MESSAGES, ids=[re.sub(r"\W+", "-", m) for m in CRD_MESSAGES]
)
def test_every_cel_message_is_also_raised_by_the_python_checks(message: str) -> None:
    if message not in _python_source():
        pytest.fail(
            f"CEL message {message!r} is in the CRDs but not in src/trainjob/api/validation.py, "
            "runtime_validation.py, meta.py or a plugin: the local backend would accept what the apiserver rejects"
        )


def test_transition_rules_are_dropped_only_under_the_v21_pod_template_overrides() -> None:
    legacy = node_at(schema_of("trainjobs"), "spec.podTemplateOverrides[].spec")
    patched = node_at(
        schema_of("trainjobs"),
        "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[]"
        ".template.spec.template.spec",
    )
    assert all_rules(legacy) == []
    assert {m for _, _, m in all_rules(patched)} == {IMMUTABLE}


# --- defaults, limits, list types ---------------------------------------------------------------

UPSTREAM_DEFAULTS: list[tuple[str, str, Any]] = [
    ("trainjobs", "spec.runtimeRef.apiGroup", "trainer.kubeflow.org"),
    ("trainjobs", "spec.runtimeRef.kind", "ClusterTrainingRuntime"),
    ("trainjobs", "spec.suspend", False),
    ("trainjobs", "spec.managedBy", "trainer.kubeflow.org/trainjob-controller"),
    ("trainjobs", "spec.initializer.dataset.secretRef.name", ""),
    ("trainingruntimes", "spec.mlPolicy.mpi.numProcPerNode", 1),
    ("trainingruntimes", "spec.mlPolicy.mpi.mpiImplementation", "OpenMPI"),
    ("trainingruntimes", "spec.mlPolicy.mpi.sshAuthMountPath", "/root/.ssh"),
    ("trainingruntimes", "spec.mlPolicy.mpi.runLauncherAsNode", False),
    ("trainingruntimes", "spec.mlPolicy.flux.numProcPerNode", 1),
    ("clustertrainingruntimes", "spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds", 60),
    ("clustertrainingruntimes", "spec.podGroupPolicy.volcano.networkTopology.mode", "hard"),
    ("clustertrainingruntimes", "spec.template.spec.replicatedJobs[].replicas", 1),
    ("clustertrainingruntimes", "spec.template.spec.failurePolicy.restartStrategy", "Recreate"),
    ("optimizationjobs", "spec.numTrials", 1),
    ("optimizationjobs", "spec.parallelTrials", 1),
    ("optimizationjobs", "spec.searchAlgorithm", {"random": {}}),
    ("optimizationjobs", "spec.objectives[].direction", "Minimize"),
    ("optimizationjobs", "spec.parameters[].searchSpace.uniform.type", "Float"),
    ("optimizationjobs", "spec.parameters[].searchSpace.logUniform.type", "Float"),
]


@pytest.mark.parametrize(
    ("plural", "path", "value"),
    [pytest.param(*case, id=f"{case[0]} {case[1]}") for case in UPSTREAM_DEFAULTS],
)
def test_upstream_default(plural: str, path: str, value: Any) -> None:
    node = node_at(schema_of(plural), path)
    assert "default" in node and node["default"] == value and type(node["default"]) is type(value)


def test_torch_num_proc_per_node_is_not_defaulted_any_more() -> None:
    # v2.0/v2.1 defaulted it to "auto"; v2.2 removed the field, trainjob only accepts it.
    assert "default" not in node_at(
        schema_of("trainingruntimes"), "spec.mlPolicy.torch.numProcPerNode"
    )


def _api_models() -> list[type[BaseModel]]:
    seen: dict[str, type[BaseModel]] = {}

    def visit(cls: type[BaseModel]) -> None:
        if cls.__name__ in seen:
            return
        seen[cls.__name__] = cls
        for f in cls.model_fields.values():
            for arg in _types_in(f.annotation):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    visit(arg)

    for r in crd.RESOURCES:
        visit(r.model)
    return [cls for cls in seen.values() if not issubclass(cls, K8sModel)]


def _types_in(annotation: Any) -> list[Any]:
    args = getattr(annotation, "__args__", None)
    if not args:
        return [annotation]
    return [t for a in args for t in _types_in(a)]


def test_crd_defaults_equal_the_model_defaults() -> None:
    """The local backend (pydantic) and the apiserver (CRD) default the same fields alike."""
    mismatches = []
    for cls in _api_models():
        rules = crd_rules.SCHEMA.get(cls, {})
        for name, f in cls.model_fields.items():
            alias = f.alias or name
            if name in ("api_version", "kind") or f.is_required() or f.default_factory:
                continue
            crd_default = rules.get(alias, {}).get("default")
            if f.default != crd_default:
                mismatches.append(
                    f"{cls.__name__}.{alias}: model {f.default!r}, CRD {crd_default!r}"
                )
    assert mismatches == []


UPSTREAM_LIMITS: list[tuple[str, str, Obj]] = [
    ("trainjobs", "spec.runtimeRef.name", {"minLength": 1, "maxLength": 253}),
    ("trainjobs", "spec.runtimeRef", {"required": ["name"]}),
    ("trainjobs", "spec", {"required": ["runtimeRef"]}),
    ("trainjobs", "spec.managedBy", {"maxLength": 253}),
    ("trainjobs", "spec.activeDeadlineSeconds", {"minimum": 1, "format": "int64"}),
    ("trainjobs", "spec.trainer.image", {"maxLength": 500}),
    ("trainjobs", "spec.trainer.command", {"maxItems": 128, "x-kubernetes-list-type": "atomic"}),
    ("trainjobs", "spec.trainer.args", {"maxItems": 128, "x-kubernetes-list-type": "atomic"}),
    ("trainjobs", "spec.trainer.numNodes", {"minimum": 0}),
    ("trainjobs", "spec.trainer.numProcPerNode", {"x-kubernetes-int-or-string": True}),
    ("trainjobs", "spec.trainer.resourcesPerNode.limits{}", {"x-kubernetes-int-or-string": True}),
    ("trainjobs", "spec.initializer.model.storageUri", {"maxLength": 2048}),
    ("trainjobs", "spec.runtimePatches", {"maxItems": 16}),
    ("trainjobs", "spec.runtimePatches[].manager", {"minLength": 1, "maxLength": 253}),
    ("trainjobs", "spec.runtimePatches[].time", {"format": "date-time"}),
    (
        "trainjobs",
        "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs",
        {"maxItems": 100},
    ),
    (
        "trainjobs",
        "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[]"
        ".template.spec.template.spec.tolerations",
        {"maxItems": 128, "x-kubernetes-list-type": "atomic"},
    ),
    (
        "trainjobs",
        "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[]"
        ".template.spec.template.spec.schedulingGates",
        {"maxItems": 16},
    ),
    ("trainjobs", "status", {"minProperties": 1}),
    ("trainjobs", "status.conditions", {"maxItems": 8}),
    ("trainjobs", "status.conditions[].status", {"enum": ["True", "False", "Unknown"]}),
    ("trainjobs", "status.jobsStatus", {"maxItems": 100}),
    ("trainjobs", "status.jobsStatus[].ready", {"minimum": 0}),
    ("trainjobs", "status.trainerStatus.progressPercentage", {"minimum": 0, "maximum": 100}),
    ("trainjobs", "status.trainerStatus.metrics", {"maxItems": 256}),
    ("trainjobs", "status.trainerStatus.metrics[].name", {"minLength": 1, "maxLength": 64}),
    ("trainingruntimes", "spec", {"minProperties": 1}),
    ("trainingruntimes", "spec.template", {"minProperties": 1}),
    ("trainingruntimes", "spec.mlPolicy.mpi.mpiImplementation", {"enum": ["OpenMPI", ""]}),
    ("trainingruntimes", "spec.mlPolicy.torch.envInjection.targets", {"maxItems": 16}),
    (
        "trainingruntimes",
        "spec.mlPolicy.torch.envInjection.targets[].containerNames",
        {"minItems": 1, "maxItems": 8, "x-kubernetes-list-type": "set"},
    ),
    ("clustertrainingruntimes", "spec.mlPolicy.numNodes", {"format": "int32"}),
    # upstream main after v2.3: manifests/base/crds/trainer.kubeflow.org_optimizationjobs.yaml
    ("optimizationjobs", "spec", {"required": ["objectives", "parameters", "trainJobTemplate"]}),
    ("optimizationjobs", "spec.objectives", {"minItems": 1, "maxItems": 1}),
    ("optimizationjobs", "spec.objectives[].metric", {"minLength": 1, "maxLength": 64}),
    ("optimizationjobs", "spec.objectives[].direction", {"enum": ["Maximize", "Minimize"]}),
    ("optimizationjobs", "spec.objectives[]", {"required": ["metric"]}),
    ("optimizationjobs", "spec.parameters", {"minItems": 1, "maxItems": 100}),
    ("optimizationjobs", "spec.parameters[]", {"required": ["name", "searchSpace"]}),
    ("optimizationjobs", "spec.parameters[].name", {"minLength": 1, "maxLength": 64}),
    ("optimizationjobs", "spec.numTrials", {"minimum": 1, "maximum": 100, "format": "int32"}),
    ("optimizationjobs", "spec.parallelTrials", {"minimum": 1, "maximum": 100, "format": "int32"}),
    ("optimizationjobs", "spec.searchAlgorithm.random.seed", {"format": "int64"}),
    *(
        (
            "optimizationjobs",
            f"spec.parameters[].searchSpace.{space}.{end}",
            {
                "minLength": 1,
                "maxLength": 64,
                "pattern": r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$",
            },
        )
        for space in ("uniform", "logUniform")
        for end in ("min", "max")
    ),
    ("optimizationjobs", "spec.parameters[].searchSpace.uniform", {"required": ["max", "min"]}),
    (
        "optimizationjobs",
        "spec.parameters[].searchSpace.logUniform.type",
        {"enum": ["Int", "Float"]},
    ),
    (
        "optimizationjobs",
        "spec.parameters[].searchSpace.categorical.choices",
        {"minItems": 1, "maxItems": 100, "x-kubernetes-list-type": "set"},
    ),
    ("optimizationjobs", "spec.parameters[].searchSpace.categorical.choices[]", {"maxLength": 64}),
    ("optimizationjobs", "spec.trainJobTemplate", {"required": ["spec"]}),
    ("optimizationjobs", "spec.trainJobTemplate.spec", {"required": ["runtimeRef"]}),
    ("optimizationjobs", "status.conditions", {"maxItems": 100}),
    ("optimizationjobs", "status.result", {"required": ["trainJobName"]}),
    ("optimizationjobs", "status.result.trainJobName", {"minLength": 1, "maxLength": 63}),
    ("optimizationjobs", "status.result.parameters", {"maxItems": 100}),
    ("optimizationjobs", "status.result.parameters[].value", {"minLength": 1, "maxLength": 64}),
]


@pytest.mark.parametrize(
    ("plural", "path", "want"),
    [pytest.param(*case, id=f"{case[0]} {case[1]}") for case in UPSTREAM_LIMITS],
)
def test_upstream_limit(plural: str, path: str, want: Obj) -> None:
    node = node_at(schema_of(plural), path)
    assert {k: node.get(k) for k in want} == want


UPSTREAM_LIST_MAPS: list[tuple[str, str, list[str]]] = [
    ("trainjobs", "spec.trainer.env", ["name"]),
    ("trainjobs", "spec.initializer.dataset.env", ["name"]),
    ("trainjobs", "spec.initializer.model.env", ["name"]),
    ("trainjobs", "spec.runtimePatches", ["manager"]),
    (
        "trainjobs",
        "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs",
        ["name"],
    ),
    *(
        (
            "trainjobs",
            "spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[]"
            f".template.spec.template.spec.{field}",
            ["name"],
        )
        for field in (
            "volumes",
            "initContainers",
            "containers",
            "imagePullSecrets",
            "schedulingGates",
        )
    ),
    ("trainjobs", "status.conditions", ["type"]),
    ("trainjobs", "status.jobsStatus", ["name"]),
    ("trainingruntimes", "spec.mlPolicy.torch.envInjection.targets", ["jobName"]),
    ("trainingruntimes", "spec.template.spec.replicatedJobs", ["name"]),
    # upstream main after v2.3: manifests/base/crds/trainer.kubeflow.org_optimizationjobs.yaml
    ("optimizationjobs", "spec.objectives", ["metric"]),
    ("optimizationjobs", "spec.parameters", ["name"]),
    ("optimizationjobs", "status.conditions", ["type"]),
    ("optimizationjobs", "status.result.parameters", ["name"]),
]


@pytest.mark.parametrize(
    ("plural", "path", "keys"),
    [pytest.param(*case, id=f"{case[0]} {case[1]}") for case in UPSTREAM_LIST_MAPS],
)
def test_upstream_list_map(plural: str, path: str, keys: list[str]) -> None:
    node = node_at(schema_of(plural), path)
    assert node.get("x-kubernetes-list-type") == "map"
    assert node.get("x-kubernetes-list-map-keys") == keys


def test_pass_through_kubernetes_types_keep_unknown_fields() -> None:
    tj, rt = schema_of("trainjobs"), schema_of("clustertrainingruntimes")
    for schema, path in [
        (tj, "spec.trainer.env[]"),
        (tj, "spec.trainer.env[].valueFrom"),
        (tj, "spec.trainer.resourcesPerNode"),
        (tj, "status"),
        (rt, "spec.template.spec"),
        (rt, "spec.template.spec.replicatedJobs[].template.spec.template.spec"),
        (rt, "spec.template.spec.replicatedJobs[].template.spec.template.spec.containers[]"),
        (rt, "spec.podGroupPolicy.volcano.networkTopology"),
    ]:
        assert node_at(schema, path).get("x-kubernetes-preserve-unknown-fields") is True, path
    # trainjob's own API types are closed, as upstream's are.
    for schema, path in [(tj, "spec"), (tj, "spec.trainer"), (rt, "spec.mlPolicy.torch")]:
        assert "x-kubernetes-preserve-unknown-fields" not in node_at(schema, path), path


# --- documents through the models and the CRDs ---------------------------------------------------


ALL_DOCS = [pytest.param(doc, id=name) for name, doc in documents()]


@pytest.mark.parametrize("doc", ALL_DOCS)
def test_models_keep_every_field_of_the_document(doc: Obj) -> None:
    dumped = to_dict(parse(copy.deepcopy(doc)))
    assert is_subset(doc, dumped) == []


@pytest.mark.parametrize("doc", ALL_DOCS)
def test_the_apiserver_would_prune_nothing(doc: Obj) -> None:
    schema = schema_of(PLURAL_OF[doc["kind"]])
    assert is_subset(doc, prune(doc, schema)) == []


@pytest.mark.parametrize("doc", ALL_DOCS)
def test_model_defaults_are_crd_defaults(doc: Obj) -> None:
    """What the models add to a document on a round trip, the apiserver adds too."""
    schema = schema_of(PLURAL_OF[doc["kind"]])
    dumped = to_dict(parse(copy.deepcopy(doc)))
    assert is_subset(dumped, apply_defaults(doc, schema)) == []


# --- the Python checks reject what the CEL rules reject ------------------------------------------


def python_errors(kind: str, obj: Obj, old: Obj | None = None) -> list[str]:
    model = parse(complete(kind, obj))
    if isinstance(model, OptimizationJob):
        before = parse(complete(kind, old)) if old is not None else None
        assert before is None or isinstance(before, OptimizationJob)
        return [str(e) for e in validate_optimization_job(model, before)]
    if isinstance(model, TrainJob):
        previous = parse(complete(kind, old)) if old is not None else None
        assert previous is None or isinstance(previous, TrainJob)
        return [str(e) for e in validate_trainjob(model, previous)]
    assert isinstance(model, TrainingRuntime | ClusterTrainingRuntime)
    return [str(e) for e in validate_runtime(model)]


def test_every_cel_rule_has_a_case() -> None:
    assert {c["message"] for c in CEL_CASES} == set(CRD_MESSAGES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CEL_CASES])
def test_python_checks_reject_what_the_cel_rule_rejects(case: Obj) -> None:
    errs = python_errors(case["kind"], case["object"], case.get("old"))
    assert any(case["message"] in e for e in errs), errs
    if "old" in case:
        assert python_errors(case["kind"], case["old"]) == []
