"""The apiserver's rules for object metadata: label keys and values, annotation keys and size.

Kubernetes checks them on every object it stores (apimachinery ``ValidateLabels`` /
``ValidateAnnotations``), with these messages (kube-apiserver v1.36); and an object's namespace. Called by
:mod:`trainjob.api.validation` for a TrainJob's and a runtime's own metadata, and for every
``metadata`` a runtime template or a runtime patch carries into the JobSet: without the check a
bad label ran locally and was refused only when the controller applied the JobSet.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from trainjob.errors import ErrorType, FieldError

_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE = re.compile(f"^{_NAME}$")
_NAME_RULE = (
    "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    f"alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    f"validation is '{_NAME}')"
)
_VALUE = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_VALUE_RE = re.compile(f"^{_VALUE}$")
_VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '{_VALUE}')"
)
_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_SUBDOMAIN_RE = re.compile(f"^{_SUBDOMAIN}$")
_SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    f"for validation is '{_SUBDOMAIN}')"
)
MAX_ANNOTATIONS_BYTES = 256 * 1024


def _bytes(s: str) -> int:
    return len(s.encode())


def qualified_name_problems(value: str) -> list[str]:
    """apimachinery ``IsQualifiedName``: ``[prefix/]name``, as label and annotation keys."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            f"a valid label key must {_NAME_RULE} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    out: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            out.append("prefix part must be non-empty")
        else:
            if _bytes(prefix) > 253:
                out.append("prefix part must be no more than 253 bytes")
            if not _SUBDOMAIN_RE.match(prefix):
                out.append(f"prefix part {_SUBDOMAIN_RULE}")
    if not name:
        out.append("name part must be non-empty")
    elif _bytes(name) > 63:
        out.append("name part must be no more than 63 bytes")
    if not _NAME_RE.match(name):
        out.append(f"name part must {_NAME_RULE}")
    return out


def validate_labels(path: str, labels: Mapping[str, Any] | None) -> list[FieldError]:
    errs: list[FieldError] = []
    for key, value in (labels or {}).items():
        key = str(key)
        errs.extend(FieldError.invalid(path, key, p) for p in qualified_name_problems(key))
        if not isinstance(value, str):
            continue  # the type error is reported where the model is parsed
        if _bytes(value) > 63:
            errs.append(FieldError.invalid(path, value, "must be no more than 63 bytes"))
        if not _VALUE_RE.match(value):
            errs.append(FieldError.invalid(path, value, _VALUE_RULE))
    return errs


def validate_annotations(path: str, annotations: Mapping[str, Any] | None) -> list[FieldError]:
    errs: list[FieldError] = []
    size = 0
    for key, value in (annotations or {}).items():
        key = str(key)
        errs.extend(FieldError.invalid(path, key, p) for p in qualified_name_problems(key.lower()))
        size += _bytes(key) + (_bytes(value) if isinstance(value, str) else 0)
    if size > MAX_ANNOTATIONS_BYTES:
        detail = f"may not be more than {MAX_ANNOTATIONS_BYTES} bytes"
        errs.append(FieldError(ErrorType.TOO_LONG, path, detail))
    return errs


def validate_metadata(path: str, meta: Any) -> list[FieldError]:
    """Labels and annotations of one ObjectMeta (a dict, or a model with those attributes)."""
    if isinstance(meta, Mapping):
        labels, annotations = meta.get("labels"), meta.get("annotations")
    else:
        labels, annotations = getattr(meta, "labels", None), getattr(meta, "annotations", None)
    errs: list[FieldError] = []
    if isinstance(labels, Mapping):
        errs.extend(validate_labels(f"{path}.labels", labels))
    if isinstance(annotations, Mapping):
        errs.extend(validate_annotations(f"{path}.annotations", annotations))
    return errs


def validate_nested_metadata(path: str, value: Any) -> list[FieldError]:
    """:func:`validate_metadata` of every ``metadata`` object inside ``value`` (a template or a
    patch as a dict): the JobSet's, each Job template's, each Pod template's, a PVC template's."""
    errs: list[FieldError] = []
    if isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if key == "metadata" and isinstance(item, dict):
                errs.extend(validate_metadata(sub, item))
            errs.extend(validate_nested_metadata(sub, item))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            errs.extend(validate_nested_metadata(f"{path}[{i}]", item))
    return errs


DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_LABEL_MESSAGE = (  # apimachinery's message
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL_MESSAGE = (  # apimachinery's message
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
MAX_LABEL = 63
MAX_LABEL_MESSAGE = f"must be no more than {MAX_LABEL} characters"


def dns1035_label(value: str) -> list[str]:
    """apimachinery's ``IsDNS1035Label``: its problems with ``value``, the length first."""
    problems = [MAX_LABEL_MESSAGE] if len(value) > MAX_LABEL else []
    if not DNS1035_LABEL.match(value):
        problems.append(DNS1035_LABEL_MESSAGE)
    return problems


def validate_namespace(namespace: str | None) -> list[FieldError]:
    """An object's namespace, when it names one: a DNS-1123 label of at most 63 characters
    (the apiserver takes it from the URL; locally it names a directory, so ``..`` never passes)."""
    if namespace is None:
        return []
    if len(namespace) > 63:
        return [
            FieldError.invalid(
                "metadata.namespace", namespace, "must be no more than 63 characters"
            )
        ]
    if not DNS1123_LABEL.match(namespace):
        return [FieldError.invalid("metadata.namespace", namespace, DNS1123_LABEL_MESSAGE)]
    return []
