"""A job with more pods than one machine can run as processes is refused before anything starts.

numNodes is valid up to int32 on a cluster; locally every pod is a process, so a huge value must be
a field error naming the fix, not a MemoryError or a machine full of processes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from trainjob.api.load import parse
from trainjob.errors import InvalidError
from trainjob.local import LocalExecutor
from trainjob.local.client.limits import MAX_LOCAL_PODS


def trainjob(num_nodes: int):  # type: ignore[no-untyped-def]
    return parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "big", "namespace": "default"},
            "spec": {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {"numNodes": num_nodes, "command": ["python", "-c", "pass"]},
            },
        }
    )


@pytest.mark.parametrize(
    "num_nodes", [MAX_LOCAL_PODS + 1, 2_147_483_647], ids=["one too many", "int32 max"]
)
def test_too_many_local_pods_is_a_field_error_and_nothing_is_stored(
    tmp_path: Path, num_nodes: int
) -> None:
    ex = LocalExecutor(tmp_path / "home")
    with pytest.raises(InvalidError) as err:
        ex.submit(trainjob(num_nodes))
    (fe,) = err.value.errors
    assert fe.field == "spec.trainer.numNodes"
    assert f"at most {MAX_LOCAL_PODS} pods on the local backend" in str(fe)
    assert ex.states(None) == []
