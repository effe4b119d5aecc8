"""Builders for e2e tests of the local backend: a plain-Python runtime and TrainJobs that run code.

Each container runs ``python -c CODE``; the code reads its env (completion index, restart attempt,
mapped ports) like a real training script would.
"""

from __future__ import annotations

from typing import Any

from trainjob.api.load import parse
from trainjob.api.trainer import ClusterTrainingRuntime, TrainJob

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
ATTEMPT = "metadata.annotations['jobset.sigs.k8s.io/restart-attempt']"


def runtime(
    name: str = "plain",
    *,
    ports: list[int] | None = None,
    failure_policy: dict[str, Any] | None = None,
    initializer: str | None = None,
    image: str = "python:3.11",
) -> ClusterTrainingRuntime:
    """A runtime whose ``node`` job runs the trainer's command in this Python environment.

    ``initializer``: code for a ``dataset-initializer`` job that runs first (the trainer waits for
    it to Complete); both mount volume ``initializer`` at ``/workspace``. ``image``: the image of
    every container (what the container backend runs; processes ignore it).
    """
    node: dict[str, Any] = {"name": "node", "image": image}
    if ports:
        node["ports"] = [{"containerPort": p} for p in ports]
    node["env"] = [
        {"name": "INDEX", "valueFrom": {"fieldRef": {"fieldPath": INDEX}}},
        {"name": "ATTEMPT", "valueFrom": {"fieldRef": {"fieldPath": ATTEMPT}}},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]
    jobs: list[dict[str, Any]] = []
    if initializer is not None:
        node["volumeMounts"] = [{"name": "initializer", "mountPath": "/workspace"}]
        jobs.append(
            {
                "name": "dataset-initializer",
                "template": {
                    "metadata": {"labels": {ANCESTOR: "dataset-initializer"}},
                    "spec": {
                        "template": {
                            "spec": {
                                "containers": [
                                    {
                                        "name": "dataset-initializer",
                                        "image": image,
                                        "command": ["python", "-c", initializer],
                                        "volumeMounts": [
                                            {"name": "initializer", "mountPath": "/workspace"}
                                        ],
                                    }
                                ],
                                "volumes": [{"name": "initializer", "emptyDir": {}}],
                            }
                        }
                    },
                },
            }
        )
    trainer_job: dict[str, Any] = {
        "name": "node",
        "template": {
            "metadata": {"labels": {ANCESTOR: "trainer"}},
            "spec": {"template": {"spec": {"containers": [node]}}},
        },
    }
    if initializer is not None:
        trainer_job["dependsOn"] = [{"name": "dataset-initializer", "status": "Complete"}]
        trainer_job["template"]["spec"]["template"]["spec"]["volumes"] = [
            {"name": "initializer", "emptyDir": {}}
        ]
    jobs.append(trainer_job)
    spec: dict[str, Any] = {"replicatedJobs": jobs}
    if failure_policy is not None:
        spec["failurePolicy"] = failure_policy
    obj = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "ClusterTrainingRuntime",
            "metadata": {"name": name},
            "spec": {"mlPolicy": {"numNodes": 1}, "template": {"spec": spec}},
        }
    )
    assert isinstance(obj, ClusterTrainingRuntime)
    return obj


def trainjob(
    name: str,
    code: str,
    *,
    runtime: str = "plain",
    nodes: int = 1,
    env: dict[str, str] | None = None,
    **spec: Any,
) -> TrainJob:
    """A TrainJob running ``python -c code`` on ``nodes`` pods."""
    trainer: dict[str, Any] = {"numNodes": nodes, "command": ["python", "-c", code]}
    if env:
        trainer["env"] = [{"name": k, "value": v} for k, v in env.items()]
    obj = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": name},
            "spec": {"runtimeRef": {"name": runtime}, "trainer": trainer, **spec},
        }
    )
    assert isinstance(obj, TrainJob)
    return obj
