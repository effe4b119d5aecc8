"""The Resume plugin: a restartable JobSet's trainer containers get ``$TRAINJOB_RESTART_ATTEMPT``
(the pod's restart-attempt annotation, through the downward API) and, where they mount a volume
that outlives a pod, ``$TRAINJOB_CHECKPOINT_DIR`` on it; only when the controller asks."""

from __future__ import annotations

from typing import Any

from tests.unit.helpers import builtin, container_of, env_of, renamed, trainjob
from trainjob.api.load import parse
from trainjob.api.trainer import ClusterTrainingRuntime
from trainjob.runtime import CompileOptions, compile
from trainjob.runtime.plugins import resume

CLUSTER = CompileOptions(resume_env=True)
ATTEMPT = {"fieldRef": {"fieldPath": "metadata.annotations['jobset.sigs.k8s.io/restart-attempt']"}}


def restartable(name: str, edit: Any = None) -> ClusterTrainingRuntime:
    doc = builtin(name).to_dict()
    doc["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 2}
    if edit:
        edit(doc)
    out = parse(doc)
    assert isinstance(out, ClusterTrainingRuntime)
    return out


def test_a_pvc_backed_trainer_gets_the_attempt_and_a_checkpoint_dir_on_it() -> None:
    # the torchtune runtimes mount their volumeClaimPolicies volume "initializer" on /workspace
    rt = restartable("torchtune-qwen2.5-1.5b")
    plan = compile(trainjob("torchtune-qwen2.5-1.5b", name="tune"), rt, CLUSTER)
    node = container_of(plan, "node", "node")
    env = env_of(node)
    assert env[resume.ENV_RESTART_ATTEMPT] == ATTEMPT
    assert env[resume.ENV_CHECKPOINT_DIR] == "/workspace/checkpoints"
    # the initializers restart from scratch: nothing for them
    init = container_of(plan, "dataset-initializer", "dataset-initializer")
    assert resume.ENV_RESTART_ATTEMPT not in env_of(init)


def test_without_a_surviving_volume_only_the_attempt() -> None:
    plan = compile(trainjob(name="ddp"), restartable("torch-distributed"), CLUSTER)
    env = env_of(container_of(plan, "node", "node"))
    assert env[resume.ENV_RESTART_ATTEMPT] == ATTEMPT
    assert resume.ENV_CHECKPOINT_DIR not in env, "an emptyDir would die with the pod"


def test_a_persistent_volume_claim_volume_counts_and_the_users_own_value_wins() -> None:
    def pvc(doc: dict[str, Any]) -> None:
        (rj,) = doc["spec"]["template"]["spec"]["replicatedJobs"]
        pod = rj["template"]["spec"]["template"]["spec"]
        pod["volumes"] = [
            {"name": "ckpt", "persistentVolumeClaim": {"claimName": "team-ckpt"}},
            {"name": "scratch", "emptyDir": {}},
        ]
        pod["containers"][0]["volumeMounts"] = [
            {"name": "scratch", "mountPath": "/tmp/scratch"},
            {"name": "ckpt", "mountPath": "/mnt/ckpt/"},
        ]

    rt = restartable("torch-distributed", pvc)
    env = env_of(container_of(compile(trainjob(name="ddp"), rt, CLUSTER), "node", "node"))
    assert env[resume.ENV_CHECKPOINT_DIR] == "/mnt/ckpt/checkpoints"
    mine = trainjob(
        name="ddp", trainer={"env": [{"name": "TRAINJOB_CHECKPOINT_DIR", "value": "/mnt/ckpt/x"}]}
    )
    env = env_of(container_of(compile(mine, rt, CLUSTER), "node", "node"))
    assert env[resume.ENV_CHECKPOINT_DIR] == "/mnt/ckpt/x"


def test_nothing_without_restarts_or_when_the_executor_does_not_ask() -> None:
    tj = trainjob(name="ddp")
    once = compile(tj, builtin("torch-distributed"), CLUSTER)
    assert once == compile(tj, builtin("torch-distributed")), "maxRestarts 0: upstream's JobSet"
    rt = restartable("torch-distributed")
    assert resume.ENV_RESTART_ATTEMPT not in str(compile(tj, rt).objects), "local, trainjob plan"
    tune = renamed(restartable("torchtune-qwen2.5-1.5b"), "torchtune-qwen2.5-1.5b")
    assert resume.ENV_CHECKPOINT_DIR not in str(
        compile(trainjob("torchtune-qwen2.5-1.5b"), tune).objects
    )
