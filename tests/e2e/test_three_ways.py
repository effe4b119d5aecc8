"""The same TrainJob three ways (issue 14): here, as processes and as containers of the
torch-trainer image; the third way, the whole simulated cluster, is tests/cluster/test_three_ways.py,
which compares the cluster's run with these two (kept for the session by tests/e2e/three_ways.py).
Both runs must show the same steps, the same env on every node (but the process backend's
documented endpoint mapping) and the same statuses."""

from __future__ import annotations

import pytest
from tests.e2e import three_ways

pytestmark = pytest.mark.e2e


def test_processes_and_containers_give_the_same_steps_env_and_statuses(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    root = tmp_path_factory.mktemp("three-ways")
    process = three_ways.local_run("process", root)
    container = three_ways.local_run("container", root)
    assert container == process
    assert process.steps == (("node-0", "Succeeded"), ("node-1", "Succeeded"))
    assert process.env["node-1"] == {
        "EPOCHS": "1", "OMP_NUM_THREADS": "1", "PET_MASTER_ADDR": "<master>",
        "PET_MASTER_PORT": "<port>", "PET_NNODES": "2", "PET_NODE_RANK": "1",
        "PET_NPROC_PER_NODE": "1",
    }  # fmt: skip
    assert process.conditions == (("Complete", "True", "AllJobsCompleted"),), (
        "JobSet's reason, as the controller reports it on a cluster"
    )
