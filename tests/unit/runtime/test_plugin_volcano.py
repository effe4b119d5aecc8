"""The Volcano plugin: the group-name pod annotation, the Volcano PodGroup, and its validation.

Cases follow upstream ``plugins/volcano/volcano_test.go``: queue from the JobSet annotation
``scheduling.volcano.sh/queue-name`` (a runtime patch can override it), priorityClassName from the
pod templates, networkTopology from the policy; an explicitly empty queue is rejected.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.helpers import container, node_job, replicated_job, runtime, trainjob
from trainjob.api import constants as c
from trainjob.runtime import compile, validate
from trainjob.runtime.compiler import build_info
from trainjob.runtime.plugins.volcano import Volcano


def volcano_runtime(
    *,
    annotations: dict[str, str] | None = None,
    topology: dict[str, Any] | None = None,
    priority_classes: tuple[str | None, ...] = (None,),
) -> Any:
    jobs = []
    for i, pc in enumerate(priority_classes):
        name = "node" if i == len(priority_classes) - 1 else f"aux-{i}"
        ancestor = "trainer" if name == "node" else None
        job = node_job(
            container(resources={"requests": {"cpu": "1"}}), name=name, ancestor=ancestor
        )
        if pc is not None:
            job["template"]["spec"]["template"]["spec"]["priorityClassName"] = pc
        jobs.append(job)
    policy: dict[str, Any] = {} if topology is None else {"networkTopology": topology}
    return runtime(
        ml_policy={"numNodes": 2, "torch": {}},
        replicated_jobs=jobs,
        pod_group_policy={"volcano": policy},
        annotations=annotations,
    )


def queue_patch(queue: str) -> list[dict[str, Any]]:
    return [
        {
            "manager": "example.com/queue-manager",
            "trainingRuntimeSpec": {
                "template": {"metadata": {"annotations": {c.VOLCANO_QUEUE_ANNOTATION: queue}}}
            },
        }
    ]


def test_every_pod_gets_the_group_name_annotation_and_no_label() -> None:
    plan = compile(trainjob(name="vj"), volcano_runtime(priority_classes=(None, None)))
    for job in ("aux-0", "node"):
        pod_meta = replicated_job(plan, job)["template"]["spec"]["template"]["metadata"]
        assert pod_meta == {"annotations": {c.VOLCANO_POD_GROUP_ANNOTATION: "vj"}}


SPEC_CASES = [
    pytest.param({}, {}, {"minMember": 2, "minResources": {"cpu": "2"}}, id="only gang size"),
    pytest.param(
        {"annotations": {c.VOLCANO_QUEUE_ANNOTATION: "research"}},
        {},
        {"minMember": 2, "queue": "research", "minResources": {"cpu": "2"}},
        id="queue from the runtime annotation",
    ),
    pytest.param(
        {"annotations": {c.VOLCANO_QUEUE_ANNOTATION: "research"}},
        {"runtimePatches": queue_patch("urgent")},
        {"minMember": 2, "queue": "urgent", "minResources": {"cpu": "2"}},
        id="a runtime patch overrides the queue",
    ),
    pytest.param(
        {"priority_classes": ("low", "high")},
        {},
        {"minMember": 3, "priorityClassName": "high", "minResources": {"cpu": "3"}},
        id="the last pod template's priorityClassName wins",
    ),
    pytest.param(
        {"topology": {"mode": "hard", "highestTierAllowed": 2}},
        {"trainer": {"numNodes": 3}},
        {
            "minMember": 3,
            "minResources": {"cpu": "3"},
            "networkTopology": {"mode": "hard", "highestTierAllowed": 2},
        },
        id="network topology and numNodes",
    ),
]


@pytest.mark.parametrize(("runtime_kw", "spec_kw", "want"), SPEC_CASES)
def test_pod_group_spec(runtime_kw: dict[str, Any], spec_kw: dict[str, Any], want: Any) -> None:
    plan = compile(trainjob(name="vj", **spec_kw), volcano_runtime(**runtime_kw))
    pg = plan.podgroup
    assert pg is not None
    assert (pg["apiVersion"], pg["kind"]) == ("scheduling.volcano.sh/v1beta1", "PodGroup")
    assert pg["metadata"]["ownerReferences"][0]["name"] == "vj"
    assert pg["spec"] == want


@pytest.mark.parametrize(
    ("annotations", "want"),
    [
        pytest.param(
            {c.VOLCANO_QUEUE_ANNOTATION: ""},
            [
                'spec.annotations[scheduling.volcano.sh/queue-name]: Invalid value: "": '
                "Volcano queue name must not be empty"
            ],
            id="an explicitly empty queue is rejected",
        ),
        pytest.param(None, [], id="no queue annotation is fine"),
        pytest.param({c.VOLCANO_QUEUE_ANNOTATION: "q"}, [], id="a named queue is fine"),
    ],
)
def test_queue_validation(annotations: dict[str, str] | None, want: list[str]) -> None:
    errors = validate(trainjob(name="vj"), volcano_runtime(annotations=annotations))
    assert [str(e) for e in errors] == want


def missing(name: str) -> str | None:
    return None if name == "exists" else f'priorityclasses.scheduling.k8s.io "{name}" not found'


@pytest.mark.parametrize(
    ("classes", "lookup", "want"),
    [
        pytest.param(
            ("ghost",),
            missing,
            [
                'spec.templateSpec.priorityClassName: Invalid value: "ghost": PriorityClass '
                '"ghost" doesn\'t exist: priorityclasses.scheduling.k8s.io "ghost" not found'
            ],
            id="a missing PriorityClass is reported",
        ),
        pytest.param(("exists",), missing, [], id="an existing PriorityClass passes"),
        pytest.param(
            ("system-node-critical", "ghost"),
            missing,
            [],
            id="a built-in class stops the check, as upstream",
        ),
        pytest.param(("ghost",), None, [], id="without a cluster lookup the check is skipped"),
    ],
)
def test_priority_class_validation(classes: tuple[str, ...], lookup: Any, want: list[str]) -> None:
    tj = trainjob(name="vj")
    info = build_info(tj, volcano_runtime(priority_classes=classes))
    assert [str(e) for e in Volcano(lookup).validate(info, None, tj)] == want


def test_validate_checks_priority_classes_only_with_a_lookup() -> None:
    """``runtime.validate`` runs the PriorityClass check when given a lookup (the webhook)."""
    tj = trainjob(name="vj")
    rt = volcano_runtime(priority_classes=("nope",))
    assert [str(e) for e in validate(tj, rt)] == []
    errors = validate(tj, rt, priority_class_error=lambda name: f"{name} is gone")
    assert [str(e) for e in errors] == [
        'spec.templateSpec.priorityClassName: Invalid value: "nope": '
        'PriorityClass "nope" doesn\'t exist: nope is gone'
    ]
