"""kubectl's JSONPath templates (``-o jsonpath='{.items[*].metadata.name}'``, ``--sort-by``).

The grammar and output of client-go's ``util/jsonpath`` as ``kubectl get`` uses it: text outside
``{}`` is printed as it is; inside, a path from the object (``.a.b``, ``['a.b']``, ``[0]``,
``[-1]``, ``[1:3]``, ``[*]``, ``..name`` at any depth, filters ``[?(@.type=="Ready")]`` with
``== != < > <= >=``, or ``[?(@.key)]`` for presence), ``@`` (the current object), a quoted string
(``{"\\n"}``, ``{"\\t"}``), and ``{range EXPR}...{end}`` to repeat a part for each result.
Several results of one expression are joined by a space; a string prints bare, a number or bool
as JSON, a map or list as compact JSON; a missing key prints nothing (kubectl allows missing keys
when printing). Pure; a malformed template is a ``ValueError``.

``relaxed(expr)`` is kubectl's ``RelaxedJSONPathExpression`` (``.metadata.name`` and
``metadata.name`` mean ``{.metadata.name}``), for ``--sort-by``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_MISSING = object()


@dataclass(frozen=True)
class _Text:
    text: str


@dataclass(frozen=True)
class _Expr:
    steps: tuple[tuple[str, Any], ...]  # ("field", name) | ("index", spec) | ("recurse", name) ...
    literal: str | None = None


@dataclass(frozen=True)
class _Range:
    expr: _Expr
    body: tuple[Any, ...]


def _actions(template: str) -> Iterator[tuple[str, str]]:
    """("text", ...) and ("action", ...) pieces; quotes inside an action may hold braces."""
    i, n = 0, len(template)
    while i < n:
        start = template.find("{", i)
        if start < 0:
            yield "text", template[i:]
            return
        if start > i:
            yield "text", template[i:start]
        j, quote = start + 1, ""
        while j < n:
            ch = template[j]
            if quote:
                if ch == "\\":
                    j += 1
                elif ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch == "}":
                break
            j += 1
        if j >= n:
            raise ValueError(f"unclosed action in template {template!r}")
        yield "action", template[start + 1 : j].strip()
        i = j + 1


_FIELD = re.compile(r"\.\.?([A-Za-z0-9_\-$/@]+|\*)")
_BRACKET = re.compile(r"\[([^\]]*)\]")
_INDEX = re.compile(r"-?\d+|-?\d*:-?\d*(?::-?\d*)?")  # [0], [-1], [1:3], [::2]


def _unquote(s: str) -> str:
    """A quoted string's text, with JSON's escapes (``"\\n"``, ``"\\t"``)."""
    body = s[1:-1]
    if s[0] == "'":
        body = body.replace('"', '\\"')
    value: str = json.loads(f'"{body}"', strict=False)
    return value


def _parse_expr(text: str) -> _Expr:
    if not text:
        raise ValueError("an empty expression")
    if text[0] in "\"'":
        if len(text) < 2 or text[-1] != text[0]:
            raise ValueError(f"unclosed string {text}")
        return _Expr((), literal=_unquote(text))
    steps: list[tuple[str, Any]] = []
    i = 0
    if text.startswith("@") or text.startswith("$"):
        i = 1
    while i < len(text):
        if text.startswith("[?(", i):
            end = text.find(")]", i)
            if end < 0:
                raise ValueError(f"unclosed filter in {text!r}")
            steps.append(("filter", _parse_filter(text[i + 3 : end])))
            i = end + 2
            continue
        m = _FIELD.match(text, i)
        if m:
            recurse = text.startswith("..", i)
            name = m.group(1)
            steps.append(("recurse" if recurse else "field", name))
            i = m.end()
            continue
        m = _BRACKET.match(text, i)
        if m:
            inner = m.group(1).strip()
            if inner[:1] and inner[0] in "\"'":
                steps.append(("field", _unquote(inner)))
            elif inner == "*":
                steps.append(("field", "*"))
            elif _INDEX.fullmatch(inner):
                steps.append(("index", inner))
            else:
                raise ValueError(f"invalid array index [{inner}] in {text!r}")
            i = m.end()
            continue
        if text[i] == "." and i == len(text) - 1:
            break
        raise ValueError(f"unrecognized character in {text!r} at {i}: {text[i:]!r}")
    return _Expr(tuple(steps))


_FILTER = re.compile(r"^\s*(@[^\s=!<>]*)\s*(?:(==|!=|<=|>=|<|>)\s*(.+?))?\s*$")


def _parse_filter(text: str) -> tuple[_Expr, str | None, Any]:
    m = _FILTER.match(text)
    if not m:
        raise ValueError(f"unrecognized filter [?({text})]")
    left = _parse_expr(m.group(1))
    if m.group(2) is None:
        return left, None, None
    raw = m.group(3).strip()
    right: Any
    if raw[:1] in "\"'":
        right = _unquote(raw)
    elif raw.startswith("@"):
        right = _parse_expr(raw)
    else:
        try:
            right = json.loads(raw)
        except ValueError:
            raise ValueError(f"unrecognized value in filter [?({text})]: {raw}") from None
    return left, m.group(2), right


def parse(template: str) -> tuple[Any, ...]:
    """The template as text, expressions and ranges; ValueError when it is malformed."""
    stack: list[list[Any]] = [[]]
    ranges: list[_Expr] = []
    for kind, piece in _actions(template):
        if kind == "text":
            stack[-1].append(_Text(piece))
        elif piece.startswith("range ") or piece == "range":
            ranges.append(_parse_expr(piece[len("range") :].strip()))
            stack.append([])
        elif piece == "end":
            if not ranges:
                raise ValueError(f"{{end}} without {{range}} in {template!r}")
            body = tuple(stack.pop())
            stack[-1].append(_Range(ranges.pop(), body))
        elif piece:
            stack[-1].append(_parse_expr(piece))
    if ranges:
        raise ValueError(f"{{range}} without {{end}} in {template!r}")
    return tuple(stack[0])


def _children(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return list(node.values())
    if isinstance(node, list):
        return list(node)
    return []


def _walk(node: Any) -> Iterator[Any]:
    yield node
    for child in _children(node):
        yield from _walk(child)


def _index(nodes: list[Any], spec: str) -> list[Any]:
    out = []
    for node in nodes:
        if not isinstance(node, list):
            continue
        if ":" in spec:
            parts = [p.strip() for p in spec.split(":")]
            nums = [int(p) if p else None for p in parts[:3]]
            out.extend(node[slice(*nums)])
        else:
            i = int(spec)
            if -len(node) <= i < len(node):
                out.append(node[i])
    return out


def _compare(a: Any, op: str, b: Any) -> bool:
    try:
        return bool(
            {
                "==": lambda: a == b,
                "!=": lambda: a != b,
                "<": lambda: a < b,
                ">": lambda: a > b,
                "<=": lambda: a <= b,
                ">=": lambda: a >= b,
            }[op]()
        )
    except TypeError:
        return False


def evaluate(expr: _Expr, node: Any) -> list[Any]:
    """The values ``expr`` selects from ``node`` (``[]`` when a key is missing)."""
    if expr.literal is not None:
        return [expr.literal]
    nodes = [node]
    for kind, arg in expr.steps:
        nxt: list[Any] = []
        if kind == "field":
            for n in nodes:
                if arg == "*":
                    nxt.extend(_children(n))
                elif isinstance(n, dict) and arg in n:
                    nxt.append(n[arg])
        elif kind == "recurse":
            for n in nodes:
                for m in _walk(n):
                    if arg == "*":
                        nxt.extend(_children(m))
                    elif isinstance(m, dict) and arg in m:
                        nxt.append(m[arg])
        elif kind == "index":
            nxt = _index(nodes, arg)
        elif kind == "filter":
            left, op, right = arg
            for n in nodes:
                for item in n if isinstance(n, list) else _children(n):
                    got = evaluate(left, item)
                    if op is None:
                        if got:
                            nxt.append(item)
                        continue
                    want = evaluate(right, item) if isinstance(right, _Expr) else [right]
                    if got and want and _compare(got[0], op, want[0]):
                        nxt.append(item)
        nodes = nxt
    return nodes


def text_of(value: Any) -> str:
    """A value as kubectl's JSONPath prints it."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=True)  # as Go prints a map


def _render(parts: tuple[Any, ...], node: Any) -> str:
    out = []
    for part in parts:
        if isinstance(part, _Text):
            out.append(part.text)
        elif isinstance(part, _Expr):
            out.append(" ".join(text_of(v) for v in evaluate(part, node)))
        else:
            for item in evaluate(part.expr, node):
                out.append(_render(part.body, item))
    return "".join(out)


def render(template: str, obj: Any) -> str:
    """``template`` applied to ``obj``, as ``kubectl get -o jsonpath=TEMPLATE`` prints it."""
    return _render(parse(template), obj)


def relaxed(expr: str) -> str:
    """kubectl's RelaxedJSONPathExpression: ``metadata.name`` -> ``{.metadata.name}``."""
    expr = expr.strip()
    if expr.startswith("{") and expr.endswith("}"):
        expr = expr[1:-1].strip()
    if not expr.startswith((".", "[")):
        expr = "." + expr
    return "{" + expr + "}"


def sort_key(expr: str) -> Any:
    """A key function for objects by the first value ``expr`` selects (``--sort-by``): numbers
    before strings before missing values, as kubectl's sorter orders mixed values."""
    parsed = parse(relaxed(expr))
    (first,) = parsed

    def key(obj: Any) -> tuple[int, Any]:
        values = evaluate(first, obj)
        if not values:
            return (2, "")
        v = values[0]
        if isinstance(v, bool):
            return (0, int(v))
        if isinstance(v, int | float):
            return (0, v)
        return (1, text_of(v))

    return key
