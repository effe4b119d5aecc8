"""The same TrainJob three ways (issue 14): here, as processes and as containers of the
torch-trainer image; the third way, the whole simulated cluster, is tests/cluster/test_three_ways.py.
Both runs must show the same steps, the same env on every node (but the process backend's
documented endpoint mapping) and the same statuses (tests/e2e/three_ways.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests import containers
from tests.e2e import three_ways

from trainjob import ContainerBackendConfig, LocalBackendConfig, TrainerClient

pytestmark = pytest.mark.e2e


def test_processes_and_containers_give_the_same_steps_env_and_statuses(tmp_path: Path) -> None:
    image = containers.image("torch-trainer")
    runs = {}
    for backend, cfg in (
        ("process", LocalBackendConfig(home=tmp_path / "p", cwd=str(tmp_path))),
        ("container", ContainerBackendConfig(home=tmp_path / "c", cwd=str(tmp_path))),
    ):
        client = TrainerClient(cfg)
        name = three_ways.submit(client, image)
        job = client.wait_for_job_status(name, status={"Complete", "Failed"}, timeout=600)
        trainjob = client.backend.executor.get(name).to_dict()  # type: ignore[attr-defined]
        run = three_ways.observe(client, name, trainjob)
        assert job.status == "Complete", run
        runs[backend] = run.normalised(name, mapped_endpoints=backend == "process")
        client.delete_job(name)
    process, container = runs["process"], runs["container"]
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
