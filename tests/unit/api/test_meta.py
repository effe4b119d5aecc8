"""Label and annotation rules (``trainjob.api.meta``) with the apiserver's messages.

Each expected message was read off a real kube-apiserver v1.36 (hack/testenv) refusing a TrainJob
whose ``metadata.labels`` / ``metadata.annotations`` held the key or value.
"""

from __future__ import annotations

import pytest

from trainjob.api.meta import (
    qualified_name_problems,
    validate_annotations,
    validate_labels,
    validate_nested_metadata,
)

NAME_RULE = (
    "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


@pytest.mark.parametrize(
    ("key", "want"),
    [
        pytest.param("app", [], id="a plain name"),
        pytest.param("example.com/team-a_b.c", [], id="a prefixed name"),
        pytest.param("a" * 250 + ".io/x", [], id="a 253-byte prefix"),
        pytest.param("bad key!", [f"name part must {NAME_RULE}"], id="a space"),
        pytest.param("a" * 64, ["name part must be no more than 63 bytes"], id="64 bytes"),
        pytest.param("/x", ["prefix part must be non-empty"], id="an empty prefix"),
        pytest.param(
            "a" * 254 + "/x", ["prefix part must be no more than 253 bytes"], id="long prefix"
        ),
        pytest.param("Ab.io/x", [f"prefix part {SUBDOMAIN_RULE}"], id="an uppercase prefix"),
        pytest.param(
            "ab.io/",
            ["name part must be non-empty", f"name part must {NAME_RULE}"],
            id="an empty name",
        ),
        pytest.param(
            "a/b/c",
            [
                f"a valid label key must {NAME_RULE} with an optional DNS subdomain prefix and "
                "'/' (e.g. 'example.com/MyName')"
            ],
            id="two slashes",
        ),
        pytest.param("\u00e4", [f"name part must {NAME_RULE}"], id="a non-ASCII letter"),
    ],
)
def test_qualified_names(key: str, want: list[str]) -> None:
    assert qualified_name_problems(key) == want


def test_label_values() -> None:
    errs = [str(e) for e in validate_labels("metadata.labels", {"a": "-v", "b": "v" * 64, "c": ""})]
    assert errs == [
        'metadata.labels: Invalid value: "-v": a valid label must be an empty string or consist '
        "of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        f'metadata.labels: Invalid value: "{"v" * 64}": must be no more than 63 bytes',
    ]


def test_annotations_keys_are_checked_lowercased_and_their_size_limited() -> None:
    assert validate_annotations("metadata.annotations", {"Ab.io/X": "v", "k": "\u00e4" * 9}) == []
    (err,) = validate_annotations("metadata.annotations", {"k": "v" * 300_000})
    assert str(err) == "metadata.annotations: Too long: may not be more than 262144 bytes"


def test_every_metadata_in_a_template_is_checked() -> None:
    template = {
        "metadata": {"labels": {"ok": "x"}},
        "spec": {
            "replicatedJobs": [
                {"template": {"metadata": {"labels": {"bad!": "x"}}}},
                {"template": {"spec": {"template": {"metadata": {"annotations": {"/x": "y"}}}}}},
            ]
        },
    }
    paths = [e.field for e in validate_nested_metadata("spec.template", template)]
    assert paths == [
        "spec.template.spec.replicatedJobs[0].template.metadata.labels",
        "spec.template.spec.replicatedJobs[1].template.spec.template.metadata.annotations",
    ]
