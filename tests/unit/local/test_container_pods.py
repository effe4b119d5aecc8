"""A Plan's pods as engine command lines (the container backend), checked without an engine:
images, names, DNS names and addresses, env passed by name, mounts, limits, command semantics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainjob.api.load import parse
from trainjob.executor import catalog
from trainjob.local.job import pods
from trainjob.local.job.containers import pod as cpod
from trainjob.local.job.containers.engine import Engine
from trainjob.local.job.containers.settings import ContainerSettings, Mount
from trainjob.runtime import compile
from trainjob.runtime.plan import Plan


def _plan(trainer: dict[str, object], runtime: str = "torch-distributed") -> Plan:
    tj = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "tj", "namespace": "team"},
            "spec": {"runtimeRef": {"name": runtime}, "trainer": trainer},
        }
    )
    return compile(tj, catalog.resolve(tj))  # type: ignore[arg-type]


def _ctx(tmp_path: Path, plan: Plan, settings: ContainerSettings | None = None) -> cpod.PodContext:
    templates = pods.pod_templates(plan, "uid-1")
    addresses = {t.hostname: f"10.89.3.{10 + i}" for i, t in enumerate(templates)}
    return cpod.PodContext(
        Engine("podman"),
        settings or ContainerSettings(),
        cpod.PodNetwork("trainjob-uid-1", pods.subdomain(plan), addresses),
        ("team", "tj", "uid-1"),
        (),
        tmp_path,
    )


def _opts(argv: tuple[str, ...], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


@pytest.mark.parametrize(
    ("image", "want"),
    [
        ("pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime", "docker.io/pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"),
        ("python:3.11", "docker.io/library/python:3.11"),
        ("ghcr.io/kubeflow/trainer/dataset-initializer:latest", "ghcr.io/kubeflow/trainer/dataset-initializer:latest"),
        ("localhost/trainjob/torch-trainer:dev", "localhost/trainjob/torch-trainer:dev"),
        ("registry:5000/team/img", "registry:5000/team/img"),
    ],
)  # fmt: skip
def test_an_image_without_a_registry_is_docker_hubs_as_on_kubernetes(image: str, want: str) -> None:
    assert cpod.qualify(image, "podman") == want
    assert cpod.qualify(image, "docker") == image, "docker qualifies names itself"


def test_a_node_runs_its_image_with_its_hostname_address_every_pods_dns_name_and_its_port(
    tmp_path: Path,
) -> None:
    plan = _plan({"numNodes": 2, "command": ["torchrun", "/workspace/train.py"]})
    ctx = _ctx(tmp_path, plan)
    t1 = pods.pod_templates(plan, "uid-1")[1]
    (ctr,) = cpod.build_pod(t1, plan, tmp_path / "volumes", ctx).containers
    assert isinstance(ctr, cpod.ContainerProcess)
    argv = ctr.argv
    assert argv[:4] == ("podman", "--log-level", "error", "run")
    assert _opts(argv, "--hostname") == ["tj-node-0-1"]
    assert _opts(argv, "--network") == ["trainjob-uid-1"]
    assert _opts(argv, "--ip") == ["10.89.3.11"]
    # every pod's DNS names, known before any starts (no DNS server, no race with a late peer)
    assert _opts(argv, "--add-host") == [
        "tj-node-0-0.tj:10.89.3.10",
        "tj-node-0-0.tj.team.svc:10.89.3.10",
        "tj-node-0-0.tj.team.svc.cluster.local:10.89.3.10",
        "tj-node-0-1.tj:10.89.3.11",
        "tj-node-0-1.tj.team.svc:10.89.3.11",
        "tj-node-0-1.tj.team.svc.cluster.local:10.89.3.11",
    ]
    assert "--publish" not in argv and "-p" not in argv, "ports stay as declared, on its network"
    assert json.loads(_opts(argv, "--entrypoint")[0]) == ["torchrun", "/workspace/train.py"]
    assert argv[-1] == "docker.io/pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
    labels = _opts(argv, "--label")
    assert "trainjob.local/uid=uid-1" in labels and "jobset.sigs.k8s.io/jobset-name=tj" in labels
    assert ctr.container.startswith(t1.name + "-node-")
    # the master is named as on a cluster, and its port is the declared one
    env = dict(ctr.env)
    assert (env["PET_MASTER_ADDR"], env["PET_MASTER_PORT"]) == ("tj-node-0-0.tj", "29500")
    assert env["PET_NODE_RANK"] == "1"


def test_env_values_never_go_on_the_command_line(tmp_path: Path) -> None:
    """A Secret's value passed as env must not show in the process table: only names do."""
    plan = _plan(
        {
            "numNodes": 1,
            "command": ["python", "-c", "print(1)"],
            "env": [{"name": "ACCESS_TOKEN", "value": "s3cr3t-value"},
                    {"name": "PATH", "value": "/opt/venv/bin:/usr/bin"}],
        }
    )  # fmt: skip
    ctx = _ctx(tmp_path, plan)
    (ctr,) = cpod.build_pod(pods.pod_templates(plan, "u")[0], plan, tmp_path, ctx).containers
    assert isinstance(ctr, cpod.ContainerProcess)
    assert not any("s3cr3t-value" in a for a in ctr.argv)
    assert "ACCESS_TOKEN" in _opts(ctr.argv, "-e")
    assert ctr.env["ACCESS_TOKEN"] == "s3cr3t-value", "the engine reads it from its own env"
    # PATH is the engine CLI's own: it goes in the (0600) env file instead, not in its env
    assert "PATH" not in _opts(ctr.argv, "-e") and ctr.env.get("PATH") != "/opt/venv/bin:/usr/bin"
    assert _opts(ctr.argv, "--env-file") == [ctr.env_file]
    assert ctr.env_file_text == "PATH=/opt/venv/bin:/usr/bin\n"


def test_command_replaces_the_entrypoint_and_args_the_arguments(tmp_path: Path) -> None:
    plan = _plan({"numNodes": 1, "args": ["--epochs", "$(EPOCHS)"],
                  "env": [{"name": "EPOCHS", "value": "3"}]})  # fmt: skip
    ctx = _ctx(tmp_path, plan)
    (ctr,) = cpod.build_pod(pods.pod_templates(plan, "u")[0], plan, tmp_path, ctx).containers
    assert "--entrypoint" not in ctr.argv, "no command: the image's entrypoint runs"
    assert ctr.argv[-2:] == ("--epochs", "3"), "args follow the image, $(VAR) expanded"


def test_limits_become_container_limits_and_requests_do_not(tmp_path: Path) -> None:
    plan = _plan(
        {
            "numNodes": 1,
            "command": ["python"],
            "resourcesPerNode": {"requests": {"cpu": "1"},
                                 "limits": {"cpu": "1500m", "memory": "2Gi"}},
        }
    )  # fmt: skip
    ctx = _ctx(tmp_path, plan)
    (ctr,) = cpod.build_pod(pods.pod_templates(plan, "u")[0], plan, tmp_path, ctx).containers
    assert _opts(ctr.argv, "--cpus") == ["1.5"]
    assert _opts(ctr.argv, "--memory") == [str(2 * 1024**3) + "b"]
    plan = _plan({"numNodes": 1, "command": ["python"],
                  "resourcesPerNode": {"requests": {"cpu": "4", "memory": "1Gi"}}})  # fmt: skip
    (ctr,) = cpod.build_pod(pods.pod_templates(plan, "u")[0], plan, tmp_path, ctx).containers
    assert "--cpus" not in ctr.argv and "--memory" not in ctr.argv


def test_volumes_are_mounted_at_their_mount_paths_and_the_step_image_is_replaced(
    tmp_path: Path,
) -> None:
    """The torchtune runtime: the initializers and the node share /workspace (the job's dir);
    ContainerBackendConfig.dataset_initializer_image replaces the dataset step's image only."""
    plan = _plan({"numNodes": 1}, runtime="torchtune-llama3.2-1b")
    settings = ContainerSettings(
        step_images={"dataset-initializer": "localhost/trainjob/initializer:dev"},
        mounts=(Mount("/srv/data", "/data", read_only=True),),
    )
    ctx = _ctx(tmp_path, plan, settings)
    by_job = {t.job: t for t in pods.pod_templates(plan, "u")}
    vols = tmp_path / "volumes"
    (ds,) = cpod.build_pod(by_job["dataset-initializer"], plan, vols, ctx).containers
    (node,) = cpod.build_pod(by_job["node"], plan, vols, ctx).containers
    assert isinstance(ds, cpod.ContainerProcess) and isinstance(node, cpod.ContainerProcess)
    assert ds.image == "localhost/trainjob/initializer:dev"
    assert node.image.startswith("ghcr.io/kubeflow/trainer/torchtune-trainer")
    assert f"{vols}/initializer:/workspace" in _opts(ds.argv, "-v")
    assert f"{vols}/initializer:/workspace" in _opts(node.argv, "-v")
    assert "/srv/data:/data:ro" in _opts(node.argv, "-v")
    mapped = ContainerSettings(
        images={
            "ghcr.io/kubeflow/trainer/torchtune-trainer:latest": "localhost/trainjob/llm-trainer:dev"
        }
    )
    (node,) = cpod.build_pod(by_job["node"], plan, vols, _ctx(tmp_path, plan, mapped)).containers
    assert isinstance(node, cpod.ContainerProcess)
    assert node.image == "localhost/trainjob/llm-trainer:dev"


def test_the_pod_ip_field_is_the_pods_address(tmp_path: Path) -> None:
    plan = _plan({"numNodes": 1, "command": ["python"]})
    spec = plan.jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    spec["containers"][0]["env"].append(
        {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    )
    ctx = _ctx(tmp_path, plan)
    (ctr,) = cpod.build_pod(pods.pod_templates(plan, "uid-1")[0], plan, tmp_path, ctx).containers
    assert ctr.env["MY_IP"] == "10.89.3.10"


@pytest.mark.parametrize(
    ("value", "cpus"), [("500m", "0.5"), ("2", "2"), (1, "1"), ("100m", "0.1")]
)
def test_cpu_quantities(value: object, cpus: str) -> None:
    assert cpod.cpus(value) == cpus


def test_settings_travel_through_the_store_as_json() -> None:
    s = ContainerSettings(
        engine="/usr/bin/podman",
        pull_policy="Never",
        mounts=(Mount("/a", "/b", True),),
        step_images={"model-initializer": "img"},
        images={"pytorch/pytorch:2.7": "localhost/mine:1"},
        initializer_timeout=30,
    )
    assert ContainerSettings.from_json(s.to_json()) == s
    with pytest.raises(ValueError, match="pull_policy must be one of IfNotPresent, Always, Never"):
        ContainerSettings(pull_policy="Sometimes")


def test_the_checkpoint_dir_is_mounted_and_named_inside_and_kept_volumes_are_mounted(
    tmp_path: Path,
) -> None:
    """$TRAINJOB_CHECKPOINT_DIR is a host directory: the container gets it at its own path; a
    kept volume (a job's outputs) is mounted from where trainjob.local.job.outputs keeps it; the Job
    controller's $JOB_COMPLETION_INDEX is set, and the pod's own env wins over the extra env."""
    plan = _plan({"numNodes": 2, "command": ["python", "-c", "print(1)"],
                  "env": [{"name": "TRAINJOB_RESTART_ATTEMPT", "value": "own"}]})  # fmt: skip
    ctx = _ctx(tmp_path, plan)
    node1 = [t for t in pods.pod_templates(plan, "u") if t.job == "node"][1]
    mounted = [m["name"] for c in node1.spec["containers"] for m in c.get("volumeMounts") or ()]
    kept = {name: tmp_path / "outputs" / name for name in mounted}
    extra = {"TRAINJOB_CHECKPOINT_DIR": str(tmp_path / "ckpt"), "TRAINJOB_RESTART_ATTEMPT": "2"}
    (ctr,) = cpod.build_pod(node1, plan, tmp_path / "vols", ctx, kept, extra).containers
    assert isinstance(ctr, cpod.ContainerProcess)
    assert ctr.env["TRAINJOB_CHECKPOINT_DIR"] == cpod.CHECKPOINT_MOUNT
    assert f"{tmp_path / 'ckpt'}:{cpod.CHECKPOINT_MOUNT}" in _opts(ctr.argv, "-v")
    assert ctr.env["JOB_COMPLETION_INDEX"] == "1"
    assert ctr.env["TRAINJOB_RESTART_ATTEMPT"] == "own"
    for name, host in kept.items():
        assert any(v.startswith(f"{host}:") for v in _opts(ctr.argv, "-v")), name
