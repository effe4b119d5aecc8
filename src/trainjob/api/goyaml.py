"""Plain YAML scalars typed as Kubernetes types them, for reading manifests and printing Plans.

``kubectl`` and the apiserver read YAML with ``sigs.k8s.io/yaml`` (go-yaml v2 rules), which differ
from PyYAML's YAML 1.1 rules on plain (unquoted) scalars: ``1e-4``, ``+.5``, ``0o17`` and ``1_000``
are numbers there and strings in PyYAML; ``y``/``n`` are booleans there; ``1:30`` is a string there
and the integer 90 in PyYAML. Read with PyYAML, ``value: 1e-4`` passed locally and was refused by
the cluster; printed by PyYAML, the string ``"1e-4"`` came out unquoted and ``kubectl apply`` of a
Plan read it as a number.

:class:`GoYAMLResolver` types plain scalars by go-yaml's rules (its ``resolve`` in resolve.go); the
loader in :mod:`trainjob.api.load` reads with it, and :func:`dump_all` writes with it, so a string
that go-yaml would read as anything else is quoted. An integral number reads as an ``int`` (what
the apiserver's JSON makes of ``2.0`` or ``1e3``), and non-string mapping keys become strings as
``sigs.k8s.io/yaml`` makes them (:func:`json_key`).
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

STR, NULL, BOOL = "tag:yaml.org,2002:str", "tag:yaml.org,2002:null", "tag:yaml.org,2002:bool"
INT, FLOAT = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
MERGE = "tag:yaml.org,2002:merge"

# go-yaml v2 resolveMap: plain scalars typed by their exact text.
_WORDS: dict[str, tuple[str, Any]] = {
    **{w: (NULL, None) for w in ("", "~", "null", "Null", "NULL")},
    **{w: (BOOL, True) for w in ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE")},
    **{w: (BOOL, True) for w in ("on", "On", "ON")},
    **{w: (BOOL, False) for w in ("n", "N", "no", "No", "NO", "false", "False", "FALSE")},
    **{w: (BOOL, False) for w in ("off", "Off", "OFF")},
    **{w: (FLOAT, math.nan) for w in (".nan", ".NaN", ".NAN")},
    **{w: (FLOAT, math.inf) for w in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")},
    **{w: (FLOAT, -math.inf) for w in ("-.inf", "-.Inf", "-.INF")},
    "<<": (MERGE, "<<"),
}
# strconv.ParseInt/ParseUint(s, 0, 64): a sign, then a base prefix or a leading-0 octal.
_GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_GO_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")
_BASES = {"x": 16, "o": 8, "b": 2}


def _go_int(text: str) -> int | None:
    m = _GO_INT.fullmatch(text)
    if m is None:
        return None
    sign, digits = m.groups()
    if len(digits) > 1 and digits[0] == "0":
        base = _BASES.get(digits[1].lower(), 8)
        value = int(digits[2:] if base != 8 or digits[1] in "oO" else digits[1:], base)
    else:
        value = int(digits)
    value = -value if sign == "-" else value
    if -(2**63) <= value < 2**64 and not (sign and value >= 2**63):  # int64, else uint64 unsigned
        return value
    return None


def _finite(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None  # ParseFloat: out of range is an error


def resolve_plain(text: str) -> tuple[str, Any]:
    """(tag, value) go-yaml gives an unquoted scalar: ``1e-4`` -> (float, 0.0001)."""
    word = _WORDS.get(text)
    if word is not None:
        return word
    first = text[:1]
    if first == ".":
        value = _finite(text) if _DOT_FLOAT.fullmatch(text) else None
        return (FLOAT, value) if value is not None else (STR, text)
    if first.isdigit() or first in "+-":
        plain = text.replace("_", "")
        as_int = _go_int(plain)
        if as_int is not None:
            return INT, as_int
        if _GO_FLOAT.fullmatch(plain):
            value = _finite(plain)
            if value is not None:
                return FLOAT, value
    return STR, text


class GoYAMLResolver(yaml.resolver.BaseResolver):
    """Types plain scalars by go-yaml's rules; quoted scalars stay strings."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0]:
            return resolve_plain(value)[0]
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]


def number(tag: str, text: str) -> Any:
    """The value of a plain scalar typed ``tag``: an integral float reads as an ``int``, as the
    apiserver's JSON makes ``2.0`` and ``1e3`` integers."""
    value = resolve_plain(text)[1]
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value


def json_key(key: Any) -> Any:
    """A mapping key as ``sigs.k8s.io/yaml`` turns it into a JSON key (``true: x`` -> ``"true"``)."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, int | float):
        return str(key)
    return key


_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter when built


_DECIMAL = re.compile(r"-?[0-9]+")


class Dumper(_Dumper):  # type: ignore[misc]
    """SafeDumper (libyaml's when available) whose plain strings go-yaml reads back as strings."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0]:
            tag = resolve_plain(value)[0]
            # An integer past uint64 is a float to go-yaml, and a number in JSON all the same.
            return INT if tag == FLOAT and _DECIMAL.fullmatch(value) else tag
        return super().resolve(kind, value, implicit)


def dump_all(objects: list[Any]) -> str:
    """Multi-document YAML of ``objects``, keys in their order, readable by kubectl as written."""
    return yaml.dump_all(objects, Dumper=Dumper, sort_keys=False, default_flow_style=False)
