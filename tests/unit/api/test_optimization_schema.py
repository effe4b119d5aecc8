"""trainjob's OptimizationJob CRD against upstream's Go types, field by field.

Test design notes: ``upstream/optimizationjob_types.go`` is upstream's file, vendored unchanged
(its header says from which commit). A small regex parser reads its structs (fields, JSON names,
Go types) and kubebuilder markers; the tests walk the struct tree from ``OptimizationJob`` and
the committed CRD schema side by side. Every upstream field must be in the CRD under the same
JSON name with a matching type and upstream's limits, defaults and CEL messages; every field the
CRD has beyond upstream's must be one of trainjob's documented additions, and say so in its
description. Types defined elsewhere (``TrainJobSpec``, ``metav1.ObjectMeta``, ``metav1.Condition``)
are not descended into: test_crd.py checks those.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
GO_FILE = Path(__file__).parent / "upstream" / "optimizationjob_types.go"
CRD_FILE = REPO / "manifests" / "crds" / "trainer.kubeflow.org_optimizationjobs.yaml"
Obj = dict[str, Any]

# (Go struct, JSON field): trainjob's additions, each off by default.
ADDITIONS = {
    ("SearchAlgorithm", "tpe"),
    ("OptimizationJobSpec", "maxFailedTrials"),
    ("OptimizationJobSpec", "earlyStopping"),
    ("OptimizationJobStatus", "trials"),
}


@dataclass(frozen=True)
class GoField:
    name: str  # the JSON name ("" for an inline embed)
    go_type: str  # as written: "*SearchAlgorithm", "[]Objective", "int32"
    markers: tuple[str, ...] = ()

    @property
    def base_type(self) -> str:
        return self.go_type.lstrip("*[]")

    @property
    def is_list(self) -> bool:
        return self.go_type.lstrip("*").startswith("[]")


@dataclass(frozen=True)
class GoType:
    name: str
    markers: tuple[str, ...]
    fields: tuple[GoField, ...] = field(default=())
    alias_of: str | None = None  # `type Double string`


_DECL = re.compile(
    r"((?:^//[^\n]*\n)*)^type (\w+) (?:struct \{\n(.*?)^\}|(\w+)$)", re.MULTILINE | re.DOTALL
)
_FIELD = re.compile(r"^\s*(?:(\w+)\s+)?([\w.\[\]*]+)\s+`json:\"([^\"]*)\"`")


def _markers(comment: str) -> tuple[str, ...]:
    return tuple(m.strip() for m in re.findall(r"^\s*//\s*\+(.*)$", comment, re.MULTILINE))


@functools.cache
def go_types() -> dict[str, GoType]:
    """Every type declared in the vendored file, with its fields and markers."""
    text = GO_FILE.read_text()
    out: dict[str, GoType] = {}
    for comment, name, body, alias in _DECL.findall(text):
        fields = []
        pending: list[str] = []
        for line in (body or "").splitlines():
            if line.strip().startswith("//"):
                pending.append(line)
                continue
            m = _FIELD.match(line)
            if m:
                _, go_type, tag = m.groups()
                fields.append(GoField(tag.split(",")[0], go_type, _markers("\n".join(pending))))
            pending = []
        out[name] = GoType(name, _markers(comment), tuple(fields), alias or None)
    return out


def test_the_parser_reads_upstreams_file() -> None:
    types = go_types()
    spec = types["OptimizationJobSpec"]
    assert [f.name for f in spec.fields] == [
        "objectives",
        "searchAlgorithm",
        "parameters",
        "numTrials",
        "parallelTrials",
        "trainJobTemplate",
    ]
    assert spec.fields[2].is_list and spec.fields[2].base_type == "Parameter"
    assert "kubebuilder:validation:MaxItems=100" in spec.fields[2].markers
    assert types["Double"].alias_of == "string"
    assert [f.name for f in types["OptimizationJob"].fields] == ["", "metadata", "spec", "status"]
    assert any("parallelTrials cannot exceed numTrials" in m for m in spec.markers)


@functools.cache
def crd_schema() -> Obj:
    (doc,) = [d for d in yaml.safe_load_all(CRD_FILE.read_text()) if d]
    return doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def pairs() -> list[tuple[str, GoType, Obj]]:
    """(path, Go struct, CRD node) for every struct of the file reachable from OptimizationJob."""
    types = go_types()
    out: list[tuple[str, GoType, Obj]] = []

    def walk(path: str, go: GoType, node: Obj) -> None:
        out.append((path, go, node))
        for f in go.fields:
            child = types.get(f.base_type)
            if not f.name or child is None or child.alias_of or f.name not in node["properties"]:
                continue
            sub = node["properties"][f.name]
            walk(f"{path}.{f.name}" if path else f.name, child, sub["items"] if f.is_list else sub)

    walk("", types["OptimizationJob"], crd_schema())
    return out


def field_cases() -> list[Any]:
    return [
        pytest.param(path, go.name, f, node, id=f"{go.name}.{f.name or '<inline>'}")
        for path, go, node in pairs()
        for f in go.fields
    ]


def test_every_struct_of_upstreams_file_is_reached() -> None:
    reached = {go.name for _, go, _ in pairs()}
    structs = {t.name for t in go_types().values() if t.alias_of is None}
    assert structs - reached == {"OptimizationJobList"}


_JSON_TYPES = {"string": "string", "int32": "integer", "int64": "integer", "bool": "boolean"}


@pytest.mark.parametrize(("path", "struct", "go_field", "node"), field_cases())
def test_upstream_field_is_in_the_crd_with_its_json_name_and_type(
    path: str, struct: str, go_field: GoField, node: Obj
) -> None:
    props = node["properties"]
    if not go_field.name:  # metav1.TypeMeta, inline
        assert go_field.go_type == "metav1.TypeMeta"
        assert {"apiVersion", "kind"} <= set(props)
        return
    assert go_field.name in props, f"{path or '<root>'} has no field {go_field.name!r}"
    prop = props[go_field.name]
    if go_field.is_list:
        assert prop["type"] == "array"
        prop = prop["items"]
    alias = go_types().get(go_field.base_type)
    scalar = alias.alias_of if alias is not None and alias.alias_of else go_field.base_type
    want = _JSON_TYPES.get(scalar, "object")
    assert prop["type"] == want, f"{path}.{go_field.name}: {prop['type']} != {want}"


def _marker_value(text: str) -> Any:
    """A marker's value: a Go string literal (its escapes are JSON's), else YAML-ish."""
    if text.startswith('"'):
        return json.loads(text)
    return yaml.safe_load(text)


@pytest.mark.parametrize(("path", "struct", "go_field", "node"), field_cases())
def test_upstream_field_markers_are_in_the_crd(
    path: str, struct: str, go_field: GoField, node: Obj
) -> None:
    if not go_field.name:
        return
    prop = node["properties"][go_field.name]
    alias = go_types().get(go_field.base_type)
    markers = list(go_field.markers)
    if alias is not None and alias.alias_of:
        markers += alias.markers  # `type Double string` with its Pattern and MaxLength
    for marker in markers:
        if marker.startswith("kubebuilder:validation:XValidation:"):
            message = re.search(r'message="([^"]*)"', marker)
            assert message is not None
            rules = [r["message"] for r in prop.get("x-kubernetes-validations", [])]
            assert message.group(1) in rules, f"{path}.{go_field.name}: {marker}"
            continue
        m = re.match(r"kubebuilder:(?:validation:)?(items:)?(\w+)=(.*)$", marker)
        if m is None:
            continue
        items, key, value = m.groups()
        target = prop["items"] if items else prop
        where = f"{path}.{go_field.name}: {marker}"
        if key == "default":
            assert prop["default"] == _marker_value(value), where
        elif key in ("MinItems", "MaxItems", "MinLength", "MaxLength", "Minimum", "Maximum"):
            assert target[key[0].lower() + key[1:]] == int(value), where
        elif key == "Pattern":
            assert target["pattern"] == _marker_value(value), where
        elif key == "Enum":
            assert target["enum"] == value.split(";"), where
        elif key != "Type":  # Type=string: the field is a string (checked by the type test)
            pytest.fail(f"the test does not know the marker {marker!r}")
    if alias is not None and alias.alias_of is None:
        _check_type_markers(
            f"{path}.{go_field.name}", alias, prop["items"] if go_field.is_list else prop
        )
    if "listType=map" in " ".join(markers):
        assert prop["x-kubernetes-list-type"] == "map"
        keys = [m.split("=")[1] for m in markers if m.startswith("listMapKey=")]
        assert prop["x-kubernetes-list-map-keys"] == keys
    elif "listType=set" in " ".join(markers):
        assert prop["x-kubernetes-list-type"] == "set"
    if "required" in markers:
        assert go_field.name in node.get("required", []), f"{path}.{go_field.name} is required"


def _check_type_markers(path: str, go: GoType, node: Obj) -> None:
    """A struct's own markers: its CEL rules (XValidation, ExactlyOneOf)."""
    messages = [r["message"] for r in node.get("x-kubernetes-validations", [])]
    rules = [r["rule"] for r in node.get("x-kubernetes-validations", [])]
    for marker in go.markers:
        if marker.startswith("kubebuilder:validation:XValidation:"):
            message = re.search(r'message="([^"]*)"', marker)
            assert message is not None and message.group(1) in messages, f"{path}: {marker}"
        elif marker.startswith("kubebuilder:validation:ExactlyOneOf="):
            members = marker.split("=", 1)[1].split(";")
            assert any(
                all(f"has(self.{m})" in rule for m in members) and "size() == 1" in rule
                for rule in rules
            ), f"{path}: {marker}"


def test_the_specs_own_rules_are_upstreams() -> None:
    types = go_types()
    schema = crd_schema()
    _check_type_markers("spec", types["OptimizationJobSpec"], schema["properties"]["spec"])


def test_the_crd_has_a_status_subresource_as_upstream() -> None:
    assert "kubebuilder:subresource:status" in go_types()["OptimizationJob"].markers
    (doc,) = [d for d in yaml.safe_load_all(CRD_FILE.read_text()) if d]
    assert doc["spec"]["versions"][0]["subresources"] == {"status": {}}


def test_the_only_fields_beyond_upstreams_are_trainjobs_documented_additions() -> None:
    extra = []
    for path, go, node in pairs():
        known = {f.name for f in go.fields if f.name}
        if any(not f.name for f in go.fields):
            known |= {"apiVersion", "kind"}
        for name, prop in node["properties"].items():
            if name in known:
                continue
            extra.append((go.name, name))
            assert prop.get("description", "").startswith("trainjob's addition"), (
                f"{path}.{name} is not upstream's and its description does not say it is "
                "trainjob's addition"
            )
    assert set(extra) == ADDITIONS


def test_trainjobs_additions_are_off_by_default() -> None:
    for path, go, node in pairs():
        for name, prop in node["properties"].items():
            if (go.name, name) in ADDITIONS:
                assert "default" not in prop, f"{path}.{name}"
                assert name not in node.get("required", []), f"{path}.{name}"
