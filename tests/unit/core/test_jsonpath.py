"""kubectl's JSONPath templates: the examples of kubectl's own documentation (``kubectl get -o
jsonpath``), on a List of two objects; malformed templates are errors, never tracebacks."""

from __future__ import annotations

import pytest

from trainjob.core import jsonpath

LIST = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {
            "kind": "TrainJob",
            "metadata": {"name": "a", "labels": {"team": "ml"}},
            "spec": {"trainer": {"numNodes": 2}},
            "status": {"conditions": [{"type": "Complete", "status": "True"}]},
        },
        {
            "kind": "TrainJob",
            "metadata": {"name": "b"},
            "spec": {"suspend": True},
            "status": {"conditions": [{"type": "Suspended", "status": "True"}]},
        },
    ],
}


@pytest.mark.parametrize(
    ("template", "want"),
    [
        pytest.param("{.kind}", "List", id="a field"),
        pytest.param("{.items[*].metadata.name}", "a b", id="every item, joined by a space"),
        pytest.param("{.items[0].metadata.name}", "a", id="an index"),
        pytest.param("{.items[-1].metadata.name}", "b", id="a negative index"),
        pytest.param("{.items[0:1].metadata.name}", "a", id="a slice"),
        pytest.param("{..name}", "a b", id="recursive descent"),
        pytest.param("{.items[0].metadata.labels}", '{"team":"ml"}', id="a map as JSON"),
        pytest.param("{.items[0].spec.trainer.numNodes}", "2", id="a number"),
        pytest.param("{.items[1].spec.suspend}", "true", id="a bool"),
        pytest.param("{.items[*].metadata.missing}", "", id="a missing key prints nothing"),
        pytest.param("{.items[*]['metadata']['name']}", "a b", id="bracket keys"),
        pytest.param(
            '{.items[?(@.metadata.name=="b")].spec.suspend}', "true", id="a filter by value"
        ),
        pytest.param(
            "{.items[?(@.spec.trainer.numNodes>1)].metadata.name}", "a", id="a numeric filter"
        ),
        pytest.param("{.items[?(@.spec.suspend)].metadata.name}", "b", id="a presence filter"),
        pytest.param(
            r'{range .items[*]}{.metadata.name}{"\t"}{.status.conditions[0].type}{"\n"}{end}',
            "a\tComplete\nb\tSuspended\n",
            id="range with literals",
        ),
        pytest.param("names: {.items[*].metadata.name}!", "names: a b!", id="text around"),
    ],
)
def test_render(template: str, want: str) -> None:
    assert jsonpath.render(template, LIST) == want


@pytest.mark.parametrize(
    "bad",
    [
        "{.items[0]",
        "{range .items[*]}{.x}",
        "{end}",
        "{.a b}",
        "{.items[x]}",
        "{.items[]}",
        "{range}{end}",
        "{'a}",
    ],
)
def test_malformed_templates_are_errors(bad: str) -> None:
    with pytest.raises(ValueError):
        jsonpath.render(bad, LIST)


def test_sort_key_and_relaxed() -> None:
    assert jsonpath.relaxed("metadata.name") == "{.metadata.name}"
    assert jsonpath.relaxed("{.metadata.name}") == "{.metadata.name}"
    items = [{"n": 2}, {"n": "x"}, {}, {"n": 1}]
    assert sorted(items, key=jsonpath.sort_key(".n")) == [{"n": 1}, {"n": 2}, {"n": "x"}, {}]
