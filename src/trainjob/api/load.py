"""Parse manifests (dicts or YAML) into API models, turning pydantic errors into field errors.

Every problem in a document is reported with its Kubernetes field path, never as a traceback:
``spec.trainer.numNodes: Invalid value: "two": must be an integer``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeAlias

import yaml
from pydantic import BaseModel, ValidationError

from trainjob.api import constants as c
from trainjob.api import goyaml
from trainjob.api.jobset import JobSet
from trainjob.api.optimization import OptimizationJob
from trainjob.api.trainer import ClusterTrainingRuntime, TrainingRuntime, TrainJob
from trainjob.errors import ErrorType, FieldError, InvalidError

Manifest: TypeAlias = TrainJob | TrainingRuntime | ClusterTrainingRuntime | JobSet | OptimizationJob

KINDS: dict[str, type[BaseModel]] = {
    c.TRAINJOB_KIND: TrainJob,
    c.TRAINING_RUNTIME_KIND: TrainingRuntime,
    c.CLUSTER_TRAINING_RUNTIME_KIND: ClusterTrainingRuntime,
    "JobSet": JobSet,
    c.OPTIMIZATION_JOB_KIND: OptimizationJob,
}
_API_VERSIONS = {
    c.TRAINJOB_KIND: c.API_VERSION,
    c.TRAINING_RUNTIME_KIND: c.API_VERSION,
    c.CLUSTER_TRAINING_RUNTIME_KIND: c.API_VERSION,
    "JobSet": "jobset.x-k8s.io/v1alpha2",
    c.OPTIMIZATION_JOB_KIND: c.API_VERSION,
}

_MESSAGES = {
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "string_type": "must be a string",
    "bool_type": "must be a boolean",
    "bool_parsing": "must be a boolean",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "float_type": "must be a number",
}


def path_of(loc: tuple[int | str, ...], prefix: str = "") -> str:
    """A pydantic ``loc`` as a Kubernetes field path: ``spec.trainer.env[0].name``."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("str", "int", "float", "bool", "union") or "[" in str(part):
            continue  # union branch markers
        else:
            out += ("." if out else "") + str(part)
    return out


def field_errors(err: ValidationError, prefix: str = "") -> list[FieldError]:
    """Convert a pydantic error into field errors, one per problem, deduplicated by path."""
    out: list[FieldError] = []
    seen: set[str] = set()
    for e in err.errors(include_url=False):
        path = path_of(e["loc"], prefix)
        if path in seen:
            continue
        seen.add(path)
        t = e["type"]
        if t == "missing":
            out.append(FieldError.required(path, ""))
        elif t == "extra_forbidden":
            field = path.rsplit(".", 1)[-1]
            out.append(
                FieldError(
                    ErrorType.FORBIDDEN,
                    path,
                    f"unknown field {field!r}; check its spelling against the "
                    f"trainer.kubeflow.org/v1alpha1 API".replace("'", '"'),
                )
            )
        elif t == "literal_error":
            expected = e.get("ctx", {}).get("expected", "")
            out.append(FieldError.invalid(path, e.get("input"), f"must be {expected}"))
        else:
            msg = _MESSAGES.get(t, e["msg"][0].lower() + e["msg"][1:])
            union = e["loc"][-1:] == ("str",)  # e.g. a quantity: numbers are fine there
            if t == "string_type" and not union and isinstance(e.get("input"), bool | int | float):
                msg += " (quote it in YAML)"
            out.append(FieldError.invalid(path, _printable(e.get("input")), msg))
    return out


def _printable(value: Any) -> Any:
    if isinstance(value, dict | list | str | int | float | bool) or value is None:
        return value
    return str(value)


def parse(doc: Any, source: str = "") -> Manifest:
    """One manifest dict -> its model. Raises InvalidError naming every bad field."""
    if not isinstance(doc, dict):
        raise InvalidError(
            [
                FieldError.invalid(
                    "<root>", _printable(doc), "must be a Kubernetes object (a YAML mapping)"
                )
            ]
        )
    kind = doc.get("kind")
    if kind not in KINDS:
        raise InvalidError([FieldError.not_supported("kind", kind, sorted(KINDS))])
    api_version = doc.get("apiVersion")
    if api_version is not None and api_version != _API_VERSIONS[kind]:
        raise InvalidError(
            [FieldError.not_supported("apiVersion", api_version, [_API_VERSIONS[kind]])]
        )
    name = ""
    meta = doc.get("metadata")
    if isinstance(meta, dict):
        name = str(meta.get("name") or "")
    group = c.GROUP if kind != "JobSet" else "jobset.x-k8s.io"
    too_deep = _too_deep(doc)
    if too_deep is not None:
        raise InvalidError([too_deep], f"{kind}.{group}", name)
    try:
        # By alias only: `num_nodes` is an unknown field to the apiserver, so here too.
        return KINDS[kind].model_validate(doc, by_alias=True, by_name=False)  # type: ignore[return-value]
    except ValidationError as e:
        raise InvalidError(field_errors(e), f"{kind}.{group}", name) from None


# Deeper than any Kubernetes object goes (a TrainJob's deepest fields are ~25 levels down), and
# shallow enough for every step after parsing: pydantic serialises at most ~250 levels.
MAX_DEPTH = 128


def _deeper_than(obj: Any, levels: int) -> bool:
    if levels < 0:
        return True
    for v in obj.values() if isinstance(obj, dict) else obj:
        if isinstance(v, dict | list) and _deeper_than(v, levels - 1):
            return True
    return False


def _too_deep(doc: Any) -> FieldError | None:
    """The error for the first value nested deeper than :data:`MAX_DEPTH`, else None."""
    if not _deeper_than(doc, MAX_DEPTH):
        return None
    path, obj = "", doc
    for levels in range(MAX_DEPTH, -1, -1):  # down a branch that is too deep
        in_list = isinstance(obj, list)
        items = enumerate(obj) if in_list else obj.items()
        key, obj = next(
            (k, v) for k, v in items if isinstance(v, dict | list) and _deeper_than(v, levels - 1)
        )
        path = f"{path}[{key}]" if in_list else f"{path}.{key}" if path else str(key)
    return FieldError.invalid(path, "...", f"must not be nested more than {MAX_DEPTH} levels deep")


class KubernetesYAMLLoader(goyaml.GoYAMLResolver, yaml.SafeLoader):
    """YAML read as Kubernetes reads it (``sigs.k8s.io/yaml``): plain scalars typed by go-yaml's
    rules (:mod:`trainjob.api.goyaml`: ``1e-4`` is a number, ``y`` a boolean, ``2024-01-05`` and
    ``1:30`` strings), mapping keys made strings, a key written twice an error. Aliases are
    counted, so that a document can be checked for alias bombs and cycles (see
    :func:`check_aliases`)."""

    aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        """Keys as ``sigs.k8s.io/yaml`` makes them (strings: ``true: x`` -> ``"true"``); a key
        written twice in one mapping is an error (as in go-yaml and the apiserver's strict
        decoding), not a silent "the last one wins"; keys merged in with ``<<`` may be
        overridden."""
        if not isinstance(node, yaml.MappingNode):
            return super().construct_mapping(node, deep)
        written: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == goyaml.MERGE or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = goyaml.json_key(self.construct_object(key_node))
            if key in written:
                raise yaml.constructor.ConstructorError(
                    None, None, f'key "{key}" already set in map', key_node.start_mark
                )
            written.add(key)
        self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "found unhashable key",
                    key_node.start_mark,
                ) from None
            mapping[goyaml.json_key(key)] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_go_scalar(self, node: Any) -> Any:
        return goyaml.number(node.tag, self.construct_scalar(node))


for _tag in (goyaml.BOOL, goyaml.INT, goyaml.FLOAT):
    KubernetesYAMLLoader.add_constructor(_tag, KubernetesYAMLLoader.construct_go_scalar)


# go-yaml refuses a document whose aliases expand it past what any manifest needs ("billion
# laughs": nine aliases of nine aliases ... of a list is 9^9 nodes once walked or printed).
MAX_EXPANDED_NODES = 1_000_000


def check_aliases(doc: Any) -> None:
    """Raise ``yaml.YAMLError`` if ``doc`` refers to itself, or expands past
    :data:`MAX_EXPANDED_NODES` nodes (both only possible with aliases)."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(obj: Any) -> int:
        if not isinstance(obj, dict | list):
            return 1
        key = id(obj)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise yaml.YAMLError("an anchor's value contains itself")
        active.add(key)
        total = 1
        for item in obj.values() if isinstance(obj, dict) else obj:
            total += size(item)
            if total > MAX_EXPANDED_NODES:
                raise yaml.YAMLError("document contains excessive aliasing")
        active.discard(key)
        sizes[key] = total
        return total

    size(doc)


def yaml_documents(text: str) -> list[Any]:
    """The objects of a YAML (or JSON) stream, read as Kubernetes reads them: empty documents
    dropped, ``kind: List`` items and top-level lists flattened. Raises ``yaml.YAMLError``."""
    flat: list[Any] = []
    loader = KubernetesYAMLLoader(text)
    try:
        docs = []
        while loader.check_data():  # type: ignore[no-untyped-call]
            docs.append(loader.get_data())
            if loader.aliases:
                check_aliases(docs[-1])
    finally:
        loader.dispose()
    for d in docs:
        if d is None:
            continue
        if isinstance(d, dict) and d.get("kind") == "List" and isinstance(d.get("items"), list):
            flat.extend(d["items"])
        elif isinstance(d, list):
            flat.extend(d)
        else:
            flat.append(d)
    return flat


def load_documents(text: str, source: str = "<stdin>") -> list[Any]:
    """YAML (one or more documents) or JSON text -> raw documents (see :func:`yaml_documents`)."""
    try:
        return yaml_documents(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise InvalidError(
            [FieldError.invalid(source, f"<yaml>{where}", f"cannot parse YAML: {problem}")]
        ) from None


def load_file(path: str | Path) -> list[Manifest]:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise InvalidError(
            [FieldError.invalid("-f", str(path), f"cannot read file: {e.strerror}")]
        ) from None
    return [parse(d, str(path)) for d in load_documents(text, str(path))]
