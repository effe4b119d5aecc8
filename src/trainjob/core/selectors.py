"""Label selectors as kubectl writes them (``-l team=ml,env!=prod,tier in (a,b),!legacy``).

apimachinery's ``labels.Parse`` grammar and semantics: requirements joined by ``,`` all hold;
``k=v`` / ``k==v`` (the label is there with that value), ``k!=v`` (absent, or another value),
``k in (a,b)``, ``k notin (a,b)`` (absent, or none of them), ``k`` (present), ``!k`` (absent).
Pure; a bad selector is a ``ValueError`` naming where it fails. Used by ``trainjob get -l`` and
``delete -l`` on every backend.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

_KEY = r"(?:[a-z0-9A-Z](?:[-a-z0-9A-Z_.]*[a-z0-9A-Z])?/)?[a-z0-9A-Z](?:[-a-z0-9A-Z_.]*[a-z0-9A-Z])?"
_VALUE = r"(?:[a-z0-9A-Z](?:[-a-z0-9A-Z_.]*[a-z0-9A-Z])?)?"
_SET = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\(\s*([^()]*)\)\s*$")
_EQ = re.compile(rf"^\s*({_KEY})\s*(==|=|!=)\s*({_VALUE})\s*$")
_EXISTS = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if self.op in ("=", "in"):
            return has and value in self.values
        return not has or value not in self.values  # "!=", "notin"


def _split(selector: str) -> list[str]:
    """Split on the commas that are not inside ``( )``."""
    parts, depth, cur = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def parse(selector: str) -> tuple[Requirement, ...]:
    """The requirements of ``selector`` (an empty selector selects everything)."""
    if not selector.strip():
        return ()
    out = []
    for part in _split(selector):
        if m := _SET.match(part):
            values = tuple(v.strip() for v in m.group(3).split(",") if v.strip())
            bad = [v for v in values if not re.fullmatch(_VALUE, v)]
            if not values or bad:
                raise ValueError(f"unable to parse requirement: {part.strip()!r}: invalid values")
            out.append(Requirement(m.group(1), m.group(2), values))
        elif m := _EQ.match(part):
            op = "=" if m.group(2) in ("=", "==") else "!="
            out.append(Requirement(m.group(1), op, (m.group(3),)))
        elif m := _EXISTS.match(part):
            out.append(Requirement(m.group(2), "!" if m.group(1) else "exists"))
        else:
            raise ValueError(
                f"unable to parse requirement: {part.strip()!r}: expected key, !key, key=value, "
                "key!=value, key in (v1,v2) or key notin (v1,v2)"
            )
    return tuple(out)


def matcher(selector: str) -> Callable[[Mapping[str, str]], bool]:
    """A predicate over a label map that holds when every requirement of ``selector`` does."""
    reqs = parse(selector)
    return lambda labels: all(r.matches(labels) for r in reqs)
