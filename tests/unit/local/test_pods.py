"""A Plan's pods mapped onto this host: names, labels, env, endpoints, ports, paths, commands."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import local_jobs as L
from trainjob import extras
from trainjob.api.load import parse
from trainjob.executor import catalog
from trainjob.local.job import mpi, podrun, pods
from trainjob.runtime import compile
from trainjob.runtime.plan import Plan


def _torch_plan(nodes: int = 2) -> Plan:
    tj = parse(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "tj", "namespace": "team"},
            "spec": {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {
                    "numNodes": nodes,
                    "command": ["torchrun", "/workspace/train.py"],
                    "resourcesPerNode": {"requests": {"cpu": "2"}},
                },
            },
        }
    )
    return compile(tj, catalog.resolve(tj))  # type: ignore[arg-type]


def test_pods_are_named_and_labelled_as_the_jobset_and_job_controllers_do() -> None:
    plan = _torch_plan()
    t0, t1 = pods.pod_templates(plan, "uid-1", restarts=2)
    assert (t0.job, t0.index, t0.hostname) == ("node", 0, "tj-node-0-0")
    assert (
        t1.hostname == "tj-node-0-1" and t1.name.startswith("tj-node-0-1-") and len(t1.name) == 17
    )
    assert t1.annotations["batch.kubernetes.io/job-completion-index"] == "1"
    assert t1.labels["jobset.sigs.k8s.io/jobset-name"] == "tj"
    assert t1.labels["jobset.sigs.k8s.io/replicatedjob-name"] == "node"
    assert t1.labels["jobset.sigs.k8s.io/restart-attempt"] == "2"
    assert t1.labels["batch.kubernetes.io/job-name"] == "tj-node-0"
    assert t1.labels["trainer.kubeflow.org/trainjob-ancestor-step"] == "trainer"
    assert pods.pod_templates(plan, "uid-1", 2)[1].name == t1.name, "names are deterministic"
    assert pods.pod_templates(plan, "uid-1", 3)[1].name != t1.name, "a restart makes new pods"


def test_torch_env_resolves_the_node_rank_and_maps_the_master_to_this_host(tmp_path: Path) -> None:
    plan = _torch_plan()
    templates = pods.pod_templates(plan, "uid")
    ports = iter([41001, 41002])
    net = pods.network_for(plan, templates, lambda: next(ports))
    local = pods.build_pod(templates[1], net, plan, tmp_path, "/src", "team", {"PATH": "/usr/bin"})
    (ctr,) = local.containers
    env = ctr.env
    assert env["PET_NODE_RANK"] == "1"
    assert env["PET_NNODES"] == "2" and env["PET_NPROC_PER_NODE"] == "2"
    assert env["PET_MASTER_ADDR"] == "127.0.0.1"
    assert env["PET_MASTER_PORT"] == "41001", "a bare port is the first pod's (the master's)"
    assert env["HOSTNAME"] == "tj-node-0-1"
    assert ctr.cwd == "/src"
    assert ctr.argv[1] == "/workspace/train.py", "no volume is mounted at /workspace here"


def test_two_pods_never_get_one_local_port_even_when_a_probe_hands_it_back_twice() -> None:
    plan = _torch_plan()
    templates = pods.pod_templates(plan, "uid")
    ports = iter([41001, 41001, 41001, 41002])  # closed probes: the kernel may repeat a port
    net = pods.network_for(plan, templates, lambda: next(ports))
    assert sorted(net.ports.values()) == [41001, 41002]
    assert [net.port_of(t.hostname, 29500) for t in templates] == [41001, 41002]


@pytest.mark.parametrize(
    ("nodes", "base_env", "want"),
    [
        pytest.param(2, {}, 4 // 4, id="2 nodes x 2 workers on 4 cores: 1 thread each"),
        pytest.param(1, {}, 4 // 2, id="1 node x 2 workers: 2 each"),
        pytest.param(2, {"OMP_NUM_THREADS": "3"}, 3, id="the user's setting wins"),
    ],
)
def test_each_local_process_gets_its_share_of_the_cores(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    nodes: int,
    base_env: dict[str, str],
    want: int,
) -> None:
    from trainjob import threads

    monkeypatch.setattr(threads, "available", lambda: 4)
    plan = _torch_plan(nodes)
    templates = pods.pod_templates(plan, "uid")
    net = pods.network_for(plan, templates)
    for t in templates:
        (ctr,) = pods.build_pod(t, net, plan, tmp_path, "/src", "team", dict(base_env)).containers
        assert ctr.env["OMP_NUM_THREADS"] == str(want)


def test_a_share_is_at_least_one_thread() -> None:
    from trainjob import threads

    assert [threads.share(n, cores=2) for n in (1, 2, 3, 8)] == [2, 1, 1, 1]


@pytest.mark.parametrize(
    ("text", "own", "want"),
    [
        pytest.param("tj-node-0-1.tj", "", "127.0.0.1", id="an endpoint becomes loopback"),
        pytest.param(
            "tj-node-0-1.tj:2222", "", "127.0.0.1:42002", id="its port becomes the pod's local port"
        ),
        pytest.param(
            "tj-node-0-0.tj.team.svc.cluster.local:2222",
            "",
            "127.0.0.1:42001",
            id="a fully qualified name too",
        ),
        pytest.param(
            "--rdzv=localhost:2222",
            "tj-node-0-1",
            "--rdzv=localhost:42002",
            id="localhost:port is the pod's own",
        ),
        pytest.param("xtj-node-0-1.tj", "", "xtj-node-0-1.tj", id="a longer name is left alone"),
        pytest.param(
            "tj-node-0-1.tjx", "", "tj-node-0-1.tjx", id="another subdomain is left alone"
        ),
        pytest.param("tj-node-0-0.tj:9999", "", "127.0.0.1:9999", id="an undeclared port is kept"),
    ],
)
def test_endpoint_rewriting(text: str, own: str, want: str) -> None:
    net = pods.Network(
        "tj",
        ("tj-node-0-0", "tj-node-0-1"),
        {("tj-node-0-0", 2222): 42001, ("tj-node-0-1", 2222): 42002},
    )
    assert net.rewrite(text, own) == want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("/workspace", "/h/init", id="the mount path itself"),
        pytest.param("/workspace/model/x.bin", "/h/init/model/x.bin", id="a path below it"),
        pytest.param(
            "output_dir=/workspace/out", "output_dir=/h/init/out", id="after an equals sign"
        ),
        pytest.param("/workspace2/x", "/workspace2/x", id="a longer name is left alone"),
        pytest.param("/data/workspace/x", "/data/workspace/x", id="not a prefix of the path"),
        pytest.param("/etc/mpi/hostfile", "/h/hosts/hostfile", id="another mount"),
    ],
)
def test_mount_paths_are_rewritten_to_the_volume_directories(text: str, want: str) -> None:
    mounts = [("/workspace", "/h/init"), ("/etc/mpi", "/h/hosts")]
    assert pods.rewrite_paths(text, mounts) == want


def test_volumes_map_mounts_into_the_job_home_and_show_secret_and_configmap_files(
    tmp_path: Path,
) -> None:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "node",
                "command": ["python"],
                "volumeMounts": [
                    {"name": "keys", "mountPath": "/root/.ssh"},
                    {"name": "hosts", "mountPath": "/etc/mpi"},
                    {"name": "scratch", "mountPath": "/workspace", "subPath": "sub"},
                ],
            }
        ],
        "volumes": [
            {
                "name": "keys",
                "secret": {"secretName": "s", "items": [{"key": "k", "path": "id", "mode": 0o400}]},
            },
            {"name": "hosts", "configMap": {"name": "cm"}},
            {"name": "scratch", "emptyDir": {}},
        ],
    }
    plan = Plan(
        (
            {
                "kind": "Secret",
                "metadata": {"name": "s"},
                "data": {"k": base64.b64encode(b"key").decode()},
            },
            {"kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"hostfile": "h slots=1\n"}},
        )
    )
    t = pods.PodTemplate("node", 0, 0, "h", "h-x", {}, {}, spec)
    dirs = pods.volume_dirs(t, tmp_path)
    assert dirs == {
        "keys": tmp_path / "keys",
        "hosts": tmp_path / "hosts",
        "scratch": tmp_path / "scratch",
    }
    assert pods.volume_files(spec["volumes"][0], plan) == {"id": (b"key", 0o400)}
    assert pods.volume_files(spec["volumes"][1], plan) == {"hostfile": (b"h slots=1\n", 0o644)}
    mounts = pods.mount_map(spec["containers"][0], dirs)
    assert mounts[0] == ("/root/.ssh", str(tmp_path / "keys"))
    assert ("/workspace", str(tmp_path / "scratch" / "sub")) in mounts


def _pod(
    env: list[dict[str, object]], env_from: list[dict[str, object]] | None = None
) -> pods.PodTemplate:
    ctr: dict[str, object] = {"name": "node", "env": env, "resources": {"limits": {"cpu": "1500m"}}}
    if env_from:
        ctr["envFrom"] = env_from
    return pods.PodTemplate(
        "node", 0, 3, "tj-node-0-3", "tj-node-0-3-abcde", {"app": "x"},
        {"batch.kubernetes.io/job-completion-index": "3"}, {"containers": [ctr]},
    )  # fmt: skip


OBJECTS = Plan(
    (
        {
            "kind": "Secret",
            "metadata": {"name": "creds"},
            "data": {"token": base64.b64encode(b"s3cr3t").decode()},
        },
        {"kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"lr": "0.1", "bs": "8"}},
    )
)


@pytest.mark.parametrize(
    ("var", "want"),
    [
        pytest.param(
            {"name": "V", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            "tj-node-0-3-abcde",
            id="pod name",
        ),
        pytest.param(
            {"name": "V", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            "team",
            id="namespace",
        ),
        pytest.param(
            {"name": "V", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            "x",
            id="a label",
        ),
        pytest.param(
            {"name": "V", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            "127.0.0.1",
            id="pod IP",
        ),
        pytest.param(
            {"name": "V", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
            "s3cr3t",
            id="a secret key",
        ),
        pytest.param(
            {"name": "V", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "lr"}}},
            "0.1",
            id="a configmap key",
        ),
        pytest.param(
            {"name": "V", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            "2",
            id="cpu limit rounded up",
        ),
        pytest.param(
            {
                "name": "V",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}},
            },
            "1500",
            id="cpu limit in millicores",
        ),
    ],
)
def test_env_value_from_is_resolved(var: dict[str, object], want: str) -> None:
    env = pods.resolve_env(_pod([var]).spec["containers"][0], _pod([var]), OBJECTS, "team")
    assert env["V"] == want


def test_env_from_and_dependent_variables() -> None:
    t = _pod(
        [{"name": "A", "value": "lr=$(CFG_lr) $$(KEEP) $(NOPE)"}],
        [
            {"configMapRef": {"name": "cfg"}, "prefix": "CFG_"},
            {"secretRef": {"name": "missing", "optional": True}},
        ],
    )
    env = pods.resolve_env(t.spec["containers"][0], t, OBJECTS, "team")
    assert env == {"CFG_lr": "0.1", "CFG_bs": "8", "A": "lr=0.1 $(KEEP) $(NOPE)"}


@pytest.mark.parametrize(
    ("var", "error"),
    [
        pytest.param(
            {"name": "V", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k"}}},
            'secret "nope" not found',
            id="missing secret",
        ),
        pytest.param(
            {"name": "V", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "k"}}},
            "couldn't find key k in ConfigMap team/cfg",
            id="missing key",
        ),
    ],
)
def test_env_references_that_do_not_resolve_are_errors(var: dict[str, object], error: str) -> None:
    t = _pod([var])
    with pytest.raises(pods.PodConfigError, match=error):
        pods.resolve_env(t.spec["containers"][0], t, OBJECTS, "team")


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        pytest.param(["mpirun", "x"], "apt-get install -y openmpi-bin libopenmpi-dev", id="mpirun"),
        pytest.param(
            ["torchrun", "x"], f"pip install {extras.install_target(['torch'])}", id="torchrun"
        ),
        pytest.param(["my-tool"], "install it, or put it on PATH", id="anything else"),
        pytest.param(["/home/mpiuser/pi"], "does not exist on this machine", id="an image path"),
    ],
)
def test_a_missing_command_says_what_to_install(
    argv: list[str], error: str, tmp_path: Path
) -> None:
    with pytest.raises(pods.PodConfigError, match=error.replace("[", r"\[").replace("]", r"\]")):
        pods.resolve_command(argv, str(tmp_path), 'container "node"')


def test_python_is_this_interpreter() -> None:
    assert pods.resolve_command(["python3", "-c", "1"], "", "") == [sys.executable, "-c", "1"]


def test_a_command_found_on_path_keeps_its_argv0(tmp_path: Path) -> None:
    # mpirun reads its argv[0]: an absolute /bin/mpirun means --prefix /, which it refuses.
    tool = tmp_path / "mpirun"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert pods.resolve_command(["mpirun", "-n", "2"], str(tmp_path), "") == ["mpirun", "-n", "2"]


def test_an_mpi_hostfile_becomes_one_localhost_line_with_every_slot() -> None:
    text = "a-launcher-0-0.a slots=2\na-node-0-0.a slots=2\na-node-0-1.a slots=2\n"
    assert mpi.localhost_hostfile(text) == "localhost slots=6\n"


def test_the_preflight_plan_of_a_plain_runtime_runs_python(tmp_path: Path) -> None:
    plan = compile(L.trainjob("p", "print(1)"), L.runtime())
    (t,) = pods.pod_templates(plan, "u")
    local = pods.build_pod(
        t, pods.network_for(plan, [t]), plan, tmp_path, str(tmp_path), "default", {}
    )
    assert local.containers[0].argv == (sys.executable, "-c", "print(1)")
    assert local.containers[0].env["INDEX"] == "0"


TORCHRUN_TAIL = """\
Traceback (most recent call last):
  File "train.py", line 3, in <module>
ValueError: boom
E1129 20:41:00.647000 18490 torch/distributed/elastic/multiprocessing/api.py:1002] failed \
(exitcode: 1) local_rank: 0 (pid: 18515) of binary: /venv/bin/python
Traceback (most recent call last):
  File "/venv/bin/torchrun", line 10, in <module>
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""
TORCHRUN_NO_FILE = TORCHRUN_TAIL.replace(
    'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\nValueError: boom',
    "/venv/bin/python: can't open file '/tmp/train.py': [Errno 2] No such file or directory",
)


@pytest.mark.parametrize(
    ("log", "want"),
    [
        pytest.param(TORCHRUN_TAIL, "ValueError: boom", id="torchrun: the rank's error"),
        pytest.param(
            TORCHRUN_NO_FILE,
            "/venv/bin/python: can't open file '/tmp/train.py': [Errno 2] No such file or directory",
            id="torchrun: what the rank said before torchrun's report",
        ),
        pytest.param(
            "x\nOSError: [Errno 98] Address already in use\n",
            "OSError: [Errno 98] Address already in use",
            id="a python error",
        ),
        pytest.param(
            "mpirun noticed that process rank 1 exited on signal 9 (Killed).\n"
            "--------------------------------------------------------------------------\n",
            "mpirun noticed that process rank 1 exited on signal 9 (Killed).",
            id="no exception: the last line that is not a rule",
        ),
        pytest.param(
            "epoch 2 rank 1/2 loss 1.99\n"
            "terminate called without an active exception\n"
            "E1130 00:29:38.506000 11945 torch/distributed/elastic/multiprocessing/api.py:1002] "
            "failed (exitcode: -6) local_rank: 0 (pid: 11954) of binary: /venv/bin/python\n",
            podrun.TORCH_EXIT_HINT,
            id="torch 2.15's abort at exit: the cause and the fix",
        ),
        pytest.param("", "", id="an empty log"),
        pytest.param("E" * 400 + "\n", "E" * 297 + "...", id="a long line is cut"),
    ],
)
def test_a_failed_container_reports_what_its_log_says(log: str, want: str, tmp_path: Path) -> None:
    path = tmp_path / "node-0.log"
    path.write_text(log)
    assert podrun.log_says(path) == want
    assert podrun.log_says(tmp_path / "missing.log") == ""


JOBSET_ONLY = Plan(({"kind": "JobSet", "metadata": {"name": "tj"}, "spec": {}},))


def _spec_pod(spec: dict[str, object]) -> pods.PodTemplate:
    return pods.PodTemplate("init", 0, 0, "tj-init-0-0", "tj-init-0-0-abcde", {}, {}, spec)


@pytest.mark.parametrize(
    ("image", "module", "output"),
    [
        pytest.param(
            "ghcr.io/kubeflow/trainer/dataset-initializer:latest",
            "trainjob.initializers.dataset",
            "dataset",
            id="the dataset initializer image",
        ),
        pytest.param(
            "ghcr.io/kubeflow/trainer/model-initializer:v2.3.0@sha256:" + "0" * 64,
            "trainjob.initializers.model",
            "model",
            id="the model initializer image, with tag and digest",
        ),
    ],
)
def test_upstream_initializer_images_run_as_trainjob_s_initializer_modules(
    image: str, module: str, output: str, tmp_path: Path
) -> None:
    """The torchtune runtimes' initializer steps have an image and no command: here they run
    trainjob's module of the same env contract, writing into the mounted workspace."""
    ctr = {
        "name": "init",
        "image": image,
        "env": [{"name": "STORAGE_URI", "value": "file:///data"}],
        "volumeMounts": [{"name": "initializer", "mountPath": "/workspace"}],
    }
    spec = {"containers": [ctr], "volumes": [{"name": "initializer", "emptyDir": {}}]}
    t = _spec_pod(spec)
    plan = JOBSET_ONLY
    local = pods.build_pod(t, pods.network_for(plan, [t]), plan, tmp_path, "/src", "default", {})
    (c,) = local.containers
    assert c.argv == (sys.executable, "-m", module)
    assert c.env["STORAGE_URI"] == "file:///data"
    assert c.env["OUTPUT_PATH"] == str(tmp_path / "initializer" / output)


def test_an_output_path_set_in_the_runtime_wins_and_other_images_still_need_a_command(
    tmp_path: Path,
) -> None:
    ctr = {
        "name": "init",
        "image": "ghcr.io/kubeflow/trainer/dataset-initializer",
        "env": [{"name": "OUTPUT_PATH", "value": "/data/out"}],
    }
    plan = JOBSET_ONLY
    t = _spec_pod({"containers": [ctr]})
    (c,) = pods.build_pod(t, pods.network_for(plan, [t]), plan, tmp_path, "/", "d", {}).containers
    assert c.env["OUTPUT_PATH"] == "/data/out"
    other = _spec_pod(
        {"containers": [{"name": "x", "image": "ghcr.io/kubeflow/trainer/torchtune"}]}
    )
    with pytest.raises(pods.PodConfigError, match="has no command"):
        pods.build_pod(other, pods.network_for(plan, [other]), plan, tmp_path, "/", "d", {})


def test_tune_without_torchtune_runs_trainjob_s_llm_trainer_with_the_same_argv(
    tmp_path: Path,
) -> None:
    argv = ["tune", "run", "lora_finetune_distributed", "--config", "llama3_2/1B_lora", "epochs=1"]
    got = pods.resolve_command(argv, str(tmp_path), "")  # nothing on this PATH
    assert got == [sys.executable, "-m", "trainjob.trainers.llm", *argv[1:]]
    real = tmp_path / "tune"  # torchtune installed: it runs, as written
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    assert pods.resolve_command(argv, str(tmp_path), "") == argv
