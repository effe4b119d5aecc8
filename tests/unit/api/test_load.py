"""``trainjob.api.load.yaml_documents``: YAML read as the apiserver reads it, beyond the error
corpus (``tests/unit/corpus``): what is still accepted next to what is now refused."""

from __future__ import annotations

import pytest
import yaml

from trainjob.api.load import MAX_EXPANDED_NODES, yaml_documents


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param(
            "base: &b {a: 1, b: 2}\nderived:\n  <<: *b\n  a: 3\n",
            [{"base": {"a": 1, "b": 2}, "derived": {"a": 3, "b": 2}}],
            id="a key merged in with << may be overridden",
        ),
        pytest.param(
            "a: &a [1, 2]\nb: *a\nc: *a\n",
            [{"a": [1, 2], "b": [1, 2], "c": [1, 2]}],
            id="a few aliases are fine",
        ),
        pytest.param("a: 1\n---\na: 1\n", [{"a": 1}, {"a": 1}], id="the same key in two documents"),
    ],
)
def test_accepted(text: str, want: list[object]) -> None:
    assert yaml_documents(text) == want


def _bomb(levels: int) -> str:
    lines = ['l0: &l0 ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("a: 1\nb: 2\na: 3\n", 'key "a" already set in map', id="a key twice"),
        pytest.param("{a: 1, a: 1}\n", 'key "a" already set in map', id="a key twice, flow style"),
        pytest.param("a: &a [*a]\n", "an anchor's value contains itself", id="a cycle"),
        pytest.param(_bomb(7), "document contains excessive aliasing", id="10^7 nodes"),
    ],
)
def test_refused(text: str, message: str) -> None:
    with pytest.raises(yaml.YAMLError, match=message):
        yaml_documents(text)


def test_the_alias_limit_leaves_room_for_any_manifest() -> None:
    yaml_documents(_bomb(5))  # 10^5 + ... nodes: under the limit
    assert MAX_EXPANDED_NODES >= 10 * 10**5
