"""``trainjob get ... -o yaml`` prints strings that kubectl reads back as strings ("1e-4", "y")."""

from __future__ import annotations

from trainjob.api.load import load_documents, parse
from trainjob.api.trainer import TrainJob
from trainjob.cli.output import Output, printed_as_objects


def test_yaml_output_keeps_number_like_strings_as_strings(capsys) -> None:  # type: ignore[no-untyped-def]
    tj = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "lr", "namespace": "default"},
            "spec": {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {
                    "env": [{"name": "LR", "value": "1e-4"}, {"name": "FLAG", "value": "y"}]
                },
            },
        }
    )
    assert isinstance(tj, TrainJob)
    assert printed_as_objects([tj], Output.yaml, lambda o: o.metadata.name)
    (doc,) = load_documents(capsys.readouterr().out)
    env = doc["spec"]["trainer"]["env"]
    assert env == [{"name": "LR", "value": "1e-4"}, {"name": "FLAG", "value": "y"}]
