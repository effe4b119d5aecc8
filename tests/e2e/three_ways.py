"""One 2-node torch TrainJob, submitted the same way (the SDK) to every backend, and what each run
shows reduced to what must agree: its steps, each node's env and its statuses.

Used by tests/e2e/test_three_ways.py (processes and containers here) and, on the whole simulated
cluster (KWOK nodes: pods do not run, so the env is read from the pods' specs as the kubelet
would resolve it), by tests/cluster/test_three_ways.py.

What may differ, and is checked to differ only so: as processes, the pods' endpoints are mapped
onto this host (``PET_MASTER_ADDR`` is 127.0.0.1 and ``PET_MASTER_PORT`` a free port,
docs/local-backend.md); in containers and on a cluster they are as the Plan writes them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainjob import ContainerBackendConfig, CustomTrainer, LocalBackendConfig, TrainerClient

ENV_NAMES = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR",
             "PET_MASTER_PORT", "EPOCHS", "OMP_NUM_THREADS")  # fmt: skip
MARK = "three-ways env "


def trainer(image: str) -> CustomTrainer:
    from tests.e2e import sdk_funcs

    return CustomTrainer(
        func=sdk_funcs.env_and_all_reduce,
        func_args={"names": list(ENV_NAMES), "mark": MARK},
        num_nodes=2,
        image=image,
        resources_per_node={"cpu": 1},
        env={"EPOCHS": "1", "OMP_NUM_THREADS": "1"},
    )


@dataclass(frozen=True)
class Run:
    """What one backend's run of the job shows."""

    status: str
    steps: tuple[tuple[str, str], ...]  # (step, status)
    env: dict[str, dict[str, str]]  # step -> the trainer's env as the node sees it
    conditions: tuple[tuple[str, str, str], ...]  # (type, status, reason) of the TrainJob

    def normalised(self, name: str, mapped_endpoints: bool) -> Run:
        """The run with its endpoints checked and replaced by placeholders, so that runs of
        jobs of other names, on other backends, compare equal: as the Plan writes them (the
        master pod's DNS name and port 29500), or, for processes, mapped onto this host."""
        env = {}
        for step, values in self.env.items():
            values = dict(values)
            if mapped_endpoints:
                assert values["PET_MASTER_ADDR"] == "127.0.0.1", values
                assert values["PET_MASTER_PORT"].isdigit(), values
            else:
                assert values["PET_MASTER_ADDR"] == f"{name}-node-0-0.{name}", values
                assert values["PET_MASTER_PORT"] == "29500", values
            values["PET_MASTER_ADDR"] = "<master>"
            values["PET_MASTER_PORT"] = "<port>"
            env[step] = values
        return Run(self.status, self.steps, env, self.conditions)


def submit(client: TrainerClient, image: str) -> str:
    return client.train(runtime="torch-distributed", trainer=trainer(image))


def observe(client: TrainerClient, name: str, trainjob: dict[str, Any]) -> Run:
    """After the job ended: its SDK status and steps, each node's env from its log, and the
    TrainJob's conditions (``trainjob`` as the backend stores it)."""
    job = client.get_job(name)
    env = {}
    for step in job.steps:
        logs = "\n".join(client.get_job_logs(name, step=step.name))
        found = re.findall(rf"^{re.escape(MARK)}(.*)$", logs, re.M)
        assert found, f"{step.name} printed no env:\n{logs[-2000:]}"
        env[step.name] = json.loads(found[-1])
    return Run(job.status, _steps(job), env, _conditions(trainjob))


_LOCAL_RUNS: dict[str, Run] = {}


def local_run(backend: str, root: Path) -> Run:
    """The job's run, normalised, on the local ``backend`` (``process`` or ``container``: the
    torch-trainer image, built if needed, or the test skipped saying why podman cannot run it).

    Run once per session and kept: the e2e test compares the two, and the cluster's test
    (tests/cluster/test_three_ways.py, later in the same session) compares the cluster with each
    without running them again. ``root`` holds the backend's home; the job is deleted after."""
    if backend in _LOCAL_RUNS:
        return _LOCAL_RUNS[backend]
    from tests import containers

    image = (
        containers.image("torch-trainer")
        if backend == "container"
        else containers.tag("torch-trainer")
    )
    home = root / backend
    config: LocalBackendConfig | ContainerBackendConfig
    if backend == "process":
        config = LocalBackendConfig(home=home, cwd=str(root))
    else:
        config = ContainerBackendConfig(home=home, cwd=str(root))
    client = TrainerClient(config)
    name = submit(client, image)
    job = client.wait_for_job_status(name, status={"Complete", "Failed"}, timeout=600)
    trainjob = client.backend.executor.get(name).to_dict()  # type: ignore[attr-defined]
    run = observe(client, name, trainjob)
    assert job.status == "Complete", run
    client.delete_job(name)
    _LOCAL_RUNS[backend] = run.normalised(name, mapped_endpoints=backend == "process")
    return _LOCAL_RUNS[backend]


def _steps(job: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((s.name, s.status) for s in job.steps))


def _conditions(trainjob: dict[str, Any]) -> tuple[tuple[str, str, str], ...]:
    conds = (trainjob.get("status") or {}).get("conditions") or []
    return tuple(sorted((c["type"], c["status"], c.get("reason", "")) for c in conds))


def env_of_pod_spec(pod: dict[str, Any]) -> dict[str, str]:
    """The trainer container's env of a cluster's pod, fieldRefs resolved from the pod itself (as
    the kubelet does), restricted to ENV_NAMES."""
    ctr = next(c for c in pod["spec"]["containers"] if c["name"] == "node")
    meta = pod["metadata"]
    out: dict[str, str] = {}
    for var in ctr.get("env") or ():
        if var["name"] not in ENV_NAMES:
            continue
        if "value" in var:
            out[var["name"]] = str(var["value"])
            continue
        path = var["valueFrom"]["fieldRef"]["fieldPath"]
        m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
        assert m, path
        out[var["name"]] = meta[m.group(1)][m.group(2)]
    return out


def cluster_run(client: TrainerClient, name: str, trainjob: dict[str, Any], pods: list[Any]) -> Run:
    """A cluster's run: the SDK's status and steps, the env from the pods' specs."""
    job = client.get_job(name)
    by_step = {s.pod_name: s.name for s in job.steps}
    env = {by_step[p["metadata"]["name"]]: env_of_pod_spec(p) for p in pods}
    return Run(job.status, _steps(job), env, _conditions(trainjob))
