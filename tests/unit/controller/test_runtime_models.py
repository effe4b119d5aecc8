"""A runtime's API model is parsed once per version and shared (trainjob.controller.runtimes.
to_model): the admission webhook and every first reconcile read the same object, so nothing
that validates or compiles against it may change it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainjob.api.base import to_dict
from trainjob.api.load import parse
from trainjob.api.trainer import TrainJob
from trainjob.controller import runtimes
from trainjob.errors import InvalidError
from trainjob.executor import sshkeys
from trainjob.runtime.compiler import CompileOptions, compile, validate
from trainjob.runtime.plugins.trainjobstatus import StatusServer

REPO = Path(__file__).resolve().parents[3]
Obj = dict[str, Any]


def shipped() -> list[Obj]:
    out = []
    for path in sorted((REPO / "manifests" / "runtimes").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") in ("ClusterTrainingRuntime", "TrainingRuntime"):
                doc["metadata"].update(uid=f"uid-{doc['metadata']['name']}", resourceVersion="7")
                out.append(doc)
    return out


def test_one_version_parses_once_and_a_new_one_again() -> None:
    rt = shipped()[0]
    first = runtimes.to_model(rt)
    assert runtimes.to_model(copy.deepcopy(rt)) is first
    newer = copy.deepcopy(rt)
    newer["metadata"]["resourceVersion"] = "8"
    newer["metadata"].setdefault("labels", {})["x"] = "y"
    assert runtimes.to_model(newer) is not first
    assert (runtimes.to_model(newer).metadata.labels or {})["x"] == "y"
    unversioned = copy.deepcopy(rt)
    del unversioned["metadata"]["resourceVersion"]
    assert runtimes.to_model(unversioned) is not runtimes.to_model(unversioned)


@pytest.mark.parametrize("rt", shipped(), ids=lambda rt: rt["metadata"]["name"])
def test_validating_and_compiling_leave_the_shared_model_as_it_was(rt: Obj) -> None:
    model = runtimes.to_model(rt)
    before = json.dumps(to_dict(model), sort_keys=True)
    last = rt["spec"]["template"]["spec"]["replicatedJobs"][-1]
    container = last["template"]["spec"]["template"]["spec"]["containers"][0]["name"]
    patch = {
        "manager": "example.com/tuner",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": last["name"],
                            "template": {
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "containers": [
                                                {"name": container, "env": [{"name": "Z"}]}
                                            ]
                                        }
                                    }
                                }
                            },
                        }
                    ]
                }
            }
        },
    }
    private, public = sshkeys.generate_ssh_key_pair()
    options = CompileOptions(
        resume_env=True,
        ssh_private_key=private,
        ssh_public_key=public,
        status_server=StatusServer("https://127.0.0.1:1", "CA"),
    )
    compiled = 0
    for patches in ([], [patch]):
        tj = parse(
            {
                "apiVersion": "trainer.kubeflow.org/v1alpha1",
                "kind": "TrainJob",
                "metadata": {"name": "a", "namespace": "ns", "uid": "u"},
                "spec": {
                    "runtimeRef": {"name": rt["metadata"]["name"]},
                    "trainer": {
                        "numNodes": 2,
                        "command": ["run"],
                        "env": [{"name": "A", "value": "b"}],
                        "resourcesPerNode": {"limits": {"cpu": "1"}},
                    },
                    "runtimePatches": patches,
                },
            }
        )
        assert isinstance(tj, TrainJob)
        validate(tj, model, None)
        try:
            for _ in range(2):
                plan = compile(tj, model, options)
                plan.jobset["spec"]["replicatedJobs"].clear()  # a caller editing its Plan
                compiled += 1
        except InvalidError:
            pass
    assert compiled
    assert json.dumps(to_dict(model), sort_keys=True) == before
