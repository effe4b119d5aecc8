"""A sweep on the container backend: the OptimizerClient with upstream's ContainerBackendConfig,
each trial's pod a podman container of its image, the sweep supervisor the local one. Skipped,
saying why, where podman cannot run containers (tests/containers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests import containers
from tests.e2e import sweep_funcs as f
from tests.e2e.test_sweeps_local import PLAIN

from trainjob import ContainerBackendConfig, CustomTrainer, TrainJobTemplate
from trainjob.api.load import parse
from trainjob.optimizer import GridSearch, OptimizerClient, Search, TrialConfig

pytestmark = pytest.mark.e2e


def test_a_grid_sweep_runs_its_trials_as_containers_and_finds_the_best(tmp_path: Path) -> None:
    image = containers.image("initializer")  # python, and nothing of trainjob's
    client = OptimizerClient(ContainerBackendConfig(home=tmp_path / "home", cwd=str(tmp_path)))
    client.sweeps.trials.apply_runtime(parse(PLAIN))
    name = client.optimize(
        trial_template=TrainJobTemplate(
            trainer=CustomTrainer(func=f.parabola, image=image), runtime="plain-python"
        ),
        trial_config=TrialConfig(num_trials=3, parallel_trials=3),
        search_space={"x": Search.choice([0.0, 0.25, 1.0])},
        algorithm=GridSearch(),
    )
    job = client.wait_for_job_status(name, timeout=480, polling_interval=0.5)
    assert job.status == "Complete" and {t.phase for t in job.trials} == {"Succeeded"}
    best = client.get_best_results(name)
    assert best is not None and best.parameters == {"x": "0.25"}
    logs = list(client.get_job_logs(name))
    assert any(line.startswith("loss=") for line in logs), logs
    client.delete_job(name)
    assert client.list_jobs() == []
