"""Placeholders filled in on parsed values: text inside strings, typed where the field is
int-or-string, never structure."""

from __future__ import annotations

from typing import Any

from trainjob.api import placeholders
from trainjob.api.trainer import TrainJobSpec


def test_a_value_is_text_and_never_structure() -> None:
    spec = {"trainer": {"args": ["{{.x}}"], "command": ["--x={{.x}}"]}}
    out = placeholders.substitute(spec, {"x": "{a: 1}\n- b"}, TrainJobSpec)
    assert out["trainer"]["args"] == ["{a: 1}\n- b"]
    assert out["trainer"]["command"] == ["--x={a: 1}\n- b"]


def test_an_integer_in_an_int_or_string_field_becomes_a_number() -> None:
    spec = {"trainer": {"numProcPerNode": "{{.n}}", "env": [{"name": "N", "value": "{{.n}}"}]}}
    out = placeholders.substitute(spec, {"n": "4"}, TrainJobSpec)
    assert out["trainer"]["numProcPerNode"] == 4
    assert out["trainer"]["env"][0]["value"] == "4"
    words = placeholders.substitute(spec, {"n": "auto"}, TrainJobSpec)
    assert words["trainer"]["numProcPerNode"] == "auto"


def test_an_unknown_placeholder_is_left_as_written() -> None:
    assert placeholders.substitute(["{{.y}} {{.x}}"], {"x": "1"}) == ["{{.y}} 1"]


def test_fill_sets_every_value_as_an_env_var_after_the_templates_own() -> None:
    spec: dict[str, Any] = {
        "runtimeRef": {"name": "r"},
        "trainer": {"env": [{"name": "A", "value": "1"}]},
    }
    out = placeholders.fill(spec, {"lr": "0.1", "batch_size": "32"})
    assert out["trainer"]["env"] == [
        {"name": "A", "value": "1"},
        {"name": "KUBEFLOW_TRAINER_OPT_LR", "value": "0.1"},
        {"name": "KUBEFLOW_TRAINER_OPT_BATCH_SIZE", "value": "32"},
    ]
    assert spec["trainer"]["env"] == [{"name": "A", "value": "1"}]  # the input is not changed
