"""Plain YAML scalars typed as the apiserver types them (``trainjob.api.goyaml``), both ways.

The expected types were read off a real kube-apiserver v1.36 (hack/testenv): a TrainJob posted as
``application/yaml`` with ``env[0].value: <scalar>`` is refused with "must be of type string:
"number"|"integer"|"boolean"" exactly for the scalars typed as numbers or booleans here.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from trainjob.api.goyaml import dump_all
from trainjob.api.load import yaml_documents

# (plain scalar, what the loader makes of it)
SCALARS: list[tuple[str, Any]] = [
    ("1e-4", 0.0001),
    ("-.5e-3", -0.0005),
    ("+.5", 0.5),
    (".5", 0.5),
    ("1e3", 1000),  # an integral number is an int, as in the apiserver's JSON
    ("1.0e+3", 1000),
    ("2.0", 2),
    ("1.5", 1.5),
    ("0o17", 15),
    ("0777", 511),
    ("089", 89),
    ("0b101", 5),
    ("-0x1f", -31),
    ("+1", 1),
    ("1_000", 1000),
    ("99999999999999999999", 10**20),
    ("y", True),
    ("Y", True),
    ("yes", True),
    ("on", True),
    ("n", False),
    ("off", False),
    ("True", True),
    ("null", None),
    ("~", None),
    # strings to go-yaml (PyYAML made 1:30 the integer 90 and 2024-01-05 a date)
    ("1:30", "1:30"),
    ("12:30:45", "12:30:45"),
    ("2024-01-05", "2024-01-05"),
    ("3e", "3e"),
    ("1e400", "1e400"),
    ("0x1.8p1", "0x1.8p1"),
    ("tRUE", "tRUE"),
    ("plain", "plain"),
]


@pytest.mark.parametrize(("text", "want"), SCALARS, ids=[t for t, _ in SCALARS])
def test_a_plain_scalar_reads_as_the_apiserver_reads_it(text: str, want: Any) -> None:
    got = yaml_documents(f"v: {text}\n")[0]["v"]
    assert (type(got), got) == (type(want), want)


def test_quoted_scalars_stay_strings() -> None:
    assert yaml_documents("a: '1e-4'\nb: \"y\"\n") == [{"a": "1e-4", "b": "y"}]


def test_keys_become_strings_as_sigs_yaml_makes_them() -> None:
    assert yaml_documents("{y: 1, 1: 2, 1.5: 3, null: 4, 07: 5}") == [
        {"true": 1, "1": 2, "1.5": 3, "null": 4, "7": 5}
    ]


def test_special_floats() -> None:
    (doc,) = yaml_documents("a: .inf\nb: -.Inf\nc: .nan\n")
    assert doc["a"] == math.inf and doc["b"] == -math.inf and math.isnan(doc["c"])


def test_printed_strings_read_back_as_the_same_strings() -> None:
    strings = [t for t, _ in SCALARS] + ["", "-", "- x", "a: b", "#x", "\u2603", "null"]
    numbers: list[Any] = [0.0001, 1.5, 3, -7, True, False, None, 2**70]
    objs = [{"env": strings, "numbers": numbers}]
    text = dump_all(objs)
    assert "- '1e-4'\n" in text and "- 'y'\n" in text and "- 1:30\n" in text
    assert yaml_documents(text) == objs
