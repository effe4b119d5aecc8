"""TorchTune: the ``tune run`` rewrite, its pure helpers and its validations (upstream v2.3/HEAD).

Helpers are tested as tables like upstream ``torchtune_test.go``; the command and the messages are
then checked through the compiler on the built-in runtimes, and golden Plans pin each runtime
with full, LoRA and QLoRA fine-tuning.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.helpers import builtin, container_of, env_of, renamed, trainjob
from trainjob.api import constants as c
from trainjob.runtime import compile, validate
from trainjob.runtime.plugins import torchtune

TUNE = ["tune", "run"]
LORA = ["model.lora_attn_modules=[q_proj,v_proj]"]
QLORA = [*LORA, "model.quantize_base=True"]
DORA = [*QLORA, "model.use_dora=True"]
ONE_GPU = {"limits": {"nvidia.com/gpu": "1"}}
LLAMA_OVERRIDES = [
    "output_dir=/workspace/output",
    "tokenizer.path=/workspace/model/original/tokenizer.model",
    "checkpointer.checkpoint_dir=/workspace/model",
]


# -- pure helpers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "want"),
    [
        pytest.param("torchtune-llama3.2-1b", "llama3_2/1B", id="llama3.2 1B is normalized"),
        pytest.param("torchtune-llama3.2-3b", "llama3_2/3B", id="llama3.2 3B is normalized"),
        pytest.param("torchtune-qwen2.5-1.5b", "qwen2_5/1.5B", id="qwen2.5 1.5B is normalized"),
        pytest.param("torchtune-llama3.2", "", id="fewer than three parts is empty"),
        pytest.param("torchtune-llama3.2-1b-extra", "", id="more than three parts is empty"),
        pytest.param("", "", id="an empty name is empty"),
    ],
)
def test_model_from_runtime_ref(name: str, want: str) -> None:
    assert torchtune.model_from_runtime_ref(name) == want


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param(["batch_size=32", *LORA], True, id="lora attn modules present"),
        pytest.param(["batch_size=32", "epochs=10"], False, id="no lora args"),
        pytest.param(None, False, id="no args"),
    ],
)
def test_is_lora(args: list[str] | None, want: bool) -> None:
    assert torchtune.is_lora(args) is want


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param(["model.quantize_base=True"], True, id="quantize base enabled"),
        pytest.param(["model.quantize_base=true"], True, id="the value is case-insensitive"),
        pytest.param(["model.quantize_base=False"], False, id="quantize base explicitly disabled"),
        pytest.param(
            ["model.quantize_base=True", "model.use_dora=True"], False, id="dora wins over qlora"
        ),
        pytest.param(
            ["model.use_dora=True", "model.quantize_base=True"],
            False,
            id="dora wins in any order",
        ),
        pytest.param(
            ["model.quantize_base=True", "model.use_dora=False"],
            True,
            id="dora explicitly disabled keeps qlora",
        ),
        pytest.param(["batch_size=32"], False, id="neither quantize base nor dora"),
        pytest.param(None, False, id="no args"),
    ],
)
def test_is_qlora(args: list[str] | None, want: bool) -> None:
    assert torchtune.is_qlora(args) is want


M = "llama3_2/1B"


@pytest.mark.parametrize(
    ("nodes", "npp", "gpus", "args", "recipe", "config"),
    [
        pytest.param(1, "auto", 1, [], "full_finetune_single_device", M + "_full_single_device", id="single device full"),
        pytest.param(1, "auto", 1, LORA, "lora_finetune_single_device", M + "_lora_single_device", id="single device lora"),
        pytest.param(1, "auto", 1, QLORA, "lora_finetune_single_device", M + "_qlora_single_device", id="single device qlora"),
        pytest.param(1, "auto", 1, DORA, "lora_finetune_single_device", M + "_lora_single_device", id="single device dora is lora"),
        pytest.param(1, "auto", 4, [], "full_finetune_distributed", M + "_full", id="single node multi-gpu full"),
        pytest.param(1, "auto", 4, LORA, "lora_finetune_distributed", M + "_lora", id="single node multi-gpu lora"),
        pytest.param(1, "auto", 4, QLORA, "lora_finetune_distributed", M + "_qlora", id="single node multi-gpu qlora"),
        pytest.param(1, "auto", 4, DORA, "lora_finetune_distributed", M + "_lora", id="single node multi-gpu dora is lora"),
        pytest.param(2, "auto", 8, [], "full_finetune_distributed", M + "_full_multinode", id="multi-node full"),
        pytest.param(2, "auto", 8, LORA, "full_finetune_distributed", M + "_full_multinode", id="multi-node ignores lora"),
        pytest.param(1, 1, 4, [], "full_finetune_single_device", M + "_full_single_device", id="numProcPerNode 1 forces single device"),
        pytest.param(1, 4, 4, [], "full_finetune_distributed", M + "_full", id="numProcPerNode above 1 is distributed"),
        pytest.param(1, 4, 0, [], "full_finetune_distributed", M + "_full", id="cpu processes are distributed"),
    ],
)  # fmt: skip
def test_recipe_and_config(
    nodes: int, npp: int | str, gpus: int, args: list[str], recipe: str, config: str
) -> None:
    assert torchtune.recipe_and_config(nodes, npp, gpus, M, args) == (recipe, config)


@pytest.mark.parametrize(
    ("nodes", "npp", "gpus", "want"),
    [
        pytest.param(2, 1, 1, True, id="several nodes"),
        pytest.param(1, 2, 0, True, id="an int above one"),
        pytest.param(1, 1, 8, False, id="one process on a node with gpus"),
        pytest.param(1, "auto", 2, True, id="auto with several gpus"),
        pytest.param(1, "auto", 1, False, id="auto with one gpu"),
        pytest.param(1, "gpu", 4, True, id="legacy gpu with several gpus"),
    ],
)
def test_rdzv_endpoint_rule(nodes: int, npp: int | str, gpus: int, want: bool) -> None:
    assert torchtune.needs_rdzv_endpoint(nodes, npp, gpus) is want


def test_rdzv_endpoint_is_the_first_node_pod() -> None:
    assert torchtune.rdzv_endpoint("ft") == "--rdzv_endpoint=ft-node-0-0.ft:29500"


@pytest.mark.parametrize(
    ("command", "want"),
    [
        pytest.param(
            ["tune", "run", "x", "output_dir=/o", "batch_size=32", "tokenizer.path=/t"],
            ["output_dir=/o", "tokenizer.path=/t"],
            id="only the immutable configs, in order",
        ),
        pytest.param(
            ["tokenizer.merges_file=/m", "checkpointer.checkpoint_dir=/c"],
            ["tokenizer.merges_file=/m", "checkpointer.checkpoint_dir=/c"],
            id="merges file and checkpoint dir",
        ),
        pytest.param(["dataset.data_dir=/d"], [], id="other configs are dropped"),
        pytest.param(None, [], id="no runtime command"),
    ],
)
def test_immutable_overrides(command: list[str] | None, want: list[str]) -> None:
    assert torchtune.immutable_overrides(command) == want


@pytest.mark.parametrize(
    ("command", "want"),
    [
        pytest.param(["tune", "run"], True, id="exactly tune run"),
        pytest.param(["tune", "run", "x"], False, id="more than tune run"),
        pytest.param(["torchrun"], False, id="another command"),
        pytest.param(None, False, id="no command"),
    ],
)
def test_is_torchtune(command: list[str] | None, want: bool) -> None:
    assert torchtune.is_torchtune(command) is want


# -- the rewritten command through the compiler -------------------------------------------------


def tune_job(runtime: str, **trainer: Any) -> Any:
    return trainjob(runtime, name="ft", trainer={"command": TUNE, **trainer})


def llama70b() -> Any:
    """The 70B model is the one torchtune runs on several nodes; no built-in runtime ships it."""
    return renamed(builtin("torchtune-llama3.2-1b"), "torchtune-llama3.3-70b")


RDZV = "--rdzv_endpoint=ft-node-0-0.ft:29500"


@pytest.mark.parametrize(
    ("runtime", "trainer", "want"),
    [
        pytest.param(
            "torchtune-llama3.2-1b",
            {},
            [RDZV, "full_finetune_distributed", "--config", "llama3_2/1B_full"],
            id="the runtime's two gpus run full distributed with rendezvous",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            {"resourcesPerNode": ONE_GPU},
            ["full_finetune_single_device", "--config", "llama3_2/1B_full_single_device"],
            id="one gpu runs single device without rendezvous",
        ),
        pytest.param(
            "torchtune-llama3.2-3b",
            {"resourcesPerNode": ONE_GPU, "args": LORA},
            ["lora_finetune_single_device", "--config", "llama3_2/3B_lora_single_device"],
            id="single device lora",
        ),
        pytest.param(
            "torchtune-llama3.2-3b",
            {"resourcesPerNode": ONE_GPU, "args": QLORA},
            ["lora_finetune_single_device", "--config", "llama3_2/3B_qlora_single_device"],
            id="single device qlora",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            {"args": LORA},
            [RDZV, "lora_finetune_distributed", "--config", "llama3_2/1B_lora"],
            id="multi-device lora",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            {"args": DORA},
            [RDZV, "lora_finetune_distributed", "--config", "llama3_2/1B_lora"],
            id="dora runs the lora recipe",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            {"numProcPerNode": 1},
            ["full_finetune_single_device", "--config", "llama3_2/1B_full_single_device"],
            id="numProcPerNode 1 on two gpus runs single device",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            {"resourcesPerNode": {"requests": {"cpu": "4"}}},
            [RDZV, "full_finetune_distributed", "--config", "llama3_2/1B_full"],
            id="four cpus without gpus run four processes with rendezvous",
        ),
    ],
)
def test_tune_run_command(runtime: str, trainer: dict[str, Any], want: list[str]) -> None:
    plan = compile(tune_job(runtime, **trainer), builtin(runtime))
    node = container_of(plan, "node", "node")
    assert node["command"] == [*TUNE, *want, *LLAMA_OVERRIDES]
    assert node.get("args") == trainer.get("args")


def test_qwen_keeps_its_merges_file_override() -> None:
    plan = compile(tune_job("torchtune-qwen2.5-1.5b"), builtin("torchtune-qwen2.5-1.5b"))
    assert container_of(plan, "node", "node")["command"] == [
        *TUNE,
        RDZV,
        "full_finetune_distributed",
        "--config",
        "qwen2_5/1.5B_full",
        "output_dir=/workspace/output",
        "tokenizer.path=/workspace/model/vocab.json",
        "tokenizer.merges_file=/workspace/model/merges.txt",
        "checkpointer.checkpoint_dir=/workspace/model",
    ]


def test_multi_node_70b_runs_the_multinode_config() -> None:
    plan = compile(tune_job("torchtune-llama3.3-70b", numNodes=2), llama70b())
    node = container_of(plan, "node", "node")
    assert node["command"] == [
        *TUNE,
        RDZV,
        "full_finetune_distributed",
        "--config",
        "llama3_3/70B_full_multinode",
        *LLAMA_OVERRIDES,
    ]


def test_tune_run_gets_no_master_envs() -> None:
    plan = compile(tune_job("torchtune-llama3.2-1b"), builtin("torchtune-llama3.2-1b"))
    env = env_of(container_of(plan, "node", "node"))
    assert list(env) == [
        c.TORCH_ENV_NUM_NODES,
        c.TORCH_ENV_NUM_PROC_PER_NODE,
        c.TORCH_ENV_NODE_RANK,
    ]
    assert env[c.TORCH_ENV_NUM_PROC_PER_NODE] == "auto"


def test_other_commands_are_not_rewritten() -> None:
    tj = trainjob("torchtune-llama3.2-1b", trainer={"command": ["tune", "ls"]})
    plan = compile(tj, builtin("torchtune-llama3.2-1b"))
    assert container_of(plan, "node", "node")["command"] == ["tune", "ls"]


# -- validation ---------------------------------------------------------------------------------


def messages(runtime: str, rt: Any = None, **trainer: Any) -> list[str]:
    return [str(e) for e in validate(tune_job(runtime, **trainer), rt or builtin(runtime))]


@pytest.mark.parametrize(
    ("runtime", "trainer", "want"),
    [
        pytest.param(
            "torchtune-mistral-7b",
            {},
            'spec.runtimeRef.name: Invalid value: "torchtune-mistral-7b": must have a supported '
            "pretrained model, invalid model configured: mistral/7B",
            id="an unsupported model",
        ),
        pytest.param(
            "torch-distributed",
            {},
            'spec.runtimeRef.name: Invalid value: "torch-distributed": must have a supported '
            "pretrained model, invalid model configured: ",
            id="a runtime name that names no model",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            {"numNodes": 2},
            "spec.trainer.numNodes: Invalid value: 2: must be 1 for llama3_2/1B model",
            id="several nodes for a small model",
        ),
        pytest.param(
            "torchtune-qwen2.5-1.5b",
            {"args": QLORA},
            'spec.runtimeRef.name: Invalid value: "torchtune-qwen2.5-1.5b": QLoRA is not '
            "supported for qwen2_5/1.5B model",
            id="qlora on qwen",
        ),
        pytest.param(
            "torchtune-qwen2.5-1.5b",
            {"args": QLORA, "resourcesPerNode": ONE_GPU},
            'spec.runtimeRef.name: Invalid value: "torchtune-qwen2.5-1.5b": QLoRA is not '
            "supported for qwen2_5/1.5B model",
            id="qlora on qwen on a single device",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            {"args": QLORA},
            'spec.trainer.numProcPerNode: Invalid value: "auto": auto runs one process per GPU '
            "(2 per node here), and QLoRA for llama3_2/1B model runs one process: set "
            "numProcPerNode to 1 or give resourcesPerNode 1 GPU",
            id="distributed qlora on llama numProcPerNode",
        ),
        pytest.param(
            "torchtune-llama3.2-3b",
            {"args": QLORA, "numProcPerNode": 2},
            "spec.trainer.numProcPerNode: Invalid value: 2: must be auto or 1 for "
            "llama3_2/3B model when using QLoRA",
            id="distributed qlora on llama with two processes",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            {"args": QLORA},
            "spec.trainer.resourcesPerNode: Invalid value: null: must have gpu resource with "
            "value 1 for llama3_2/1B model when using QLoRA",
            id="distributed qlora on llama resourcesPerNode",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            {"args": ["epochs=1", "output_dir=/tmp/out"]},
            'spec.trainer.args[1]: Invalid value: "output_dir=/tmp/out": must not set immutable '
            'config "output_dir" in trainer args; it is managed by the runtime',
            id="output_dir in args",
        ),
        pytest.param(
            "torchtune-llama3.2-1b",
            {"args": ["tokenizer.path=/t"]},
            'spec.trainer.args[0]: Invalid value: "tokenizer.path=/t": must not set immutable '
            'config "tokenizer.path" in trainer args; it is managed by the runtime',
            id="tokenizer.path in args",
        ),
        pytest.param(
            "torchtune-qwen2.5-1.5b",
            {"args": ["tokenizer.merges_file=/m"]},
            'spec.trainer.args[0]: Invalid value: "tokenizer.merges_file=/m": must not set '
            'immutable config "tokenizer.merges_file" in trainer args; it is managed by the '
            "runtime",
            id="tokenizer.merges_file in args",
        ),
        pytest.param(
            "torchtune-llama3.2-3b",
            {"args": ["checkpointer.checkpoint_dir=/c"]},
            'spec.trainer.args[0]: Invalid value: "checkpointer.checkpoint_dir=/c": must not set '
            'immutable config "checkpointer.checkpoint_dir" in trainer args; it is managed by '
            "the runtime",
            id="checkpointer.checkpoint_dir in args",
        ),
    ],
)
def test_validation_messages(runtime: str, trainer: dict[str, Any], want: str) -> None:
    rt = renamed(builtin("torchtune-llama3.2-1b"), runtime) if runtime.endswith("7b") else None
    assert want in messages(runtime, rt, **trainer)


@pytest.mark.parametrize(
    "args",
    [pytest.param(LORA, id="lora"), pytest.param(QLORA, id="qlora")],
)
def test_lora_on_several_nodes_is_rejected(args: list[str]) -> None:
    got = messages("torchtune-llama3.3-70b", llama70b(), numNodes=2, args=args)
    assert got == [
        "spec.trainer.numNodes: Invalid value: 2: LoRA fine-tuning is not supported for "
        "multi-node training in TorchTune"
    ]


@pytest.mark.parametrize(
    ("runtime", "trainer"),
    [
        pytest.param("torchtune-llama3.2-1b", {}, id="full fine-tuning"),
        pytest.param("torchtune-llama3.2-1b", {"args": LORA}, id="lora"),
        pytest.param("torchtune-llama3.2-1b", {"args": DORA}, id="dora with quantize_base"),
        pytest.param(
            "torchtune-llama3.2-3b",
            {"args": QLORA, "resourcesPerNode": ONE_GPU},
            id="qlora on one gpu",
        ),
        pytest.param(
            "torchtune-llama3.2-1b", {"args": QLORA, "numProcPerNode": 1}, id="qlora on one process"
        ),
        pytest.param("torchtune-qwen2.5-1.5b", {"args": LORA}, id="lora on qwen"),
        pytest.param("torchtune-llama3.2-1b", {"args": ["dataset.data_dir=/d"]}, id="other args"),
    ],
)
def test_valid_tune_jobs(runtime: str, trainer: dict[str, Any]) -> None:
    assert messages(runtime, **trainer) == []


def test_multi_node_70b_full_is_valid() -> None:
    assert messages("torchtune-llama3.3-70b", llama70b(), numNodes=2) == []


def test_torchtune_checks_need_tune_run() -> None:
    tj = trainjob("torchtune-llama3.2-1b", trainer={"numNodes": 2, "args": ["output_dir=/o"]})
    assert validate(tj, builtin("torchtune-llama3.2-1b")) == []


# -- golden plans -------------------------------------------------------------------------------

SDK_ARGS = ["dataset.data_dir=/workspace/dataset/data", "epochs=1", "batch_size=2"]
GOLDEN = [
    pytest.param(rt, case, trainer, id=f"{rt} {case}")
    for rt in ("torchtune-llama3.2-1b", "torchtune-llama3.2-3b", "torchtune-qwen2.5-1.5b")
    for case, trainer in (
        ("default", {}),
        ("lora", {"args": [*SDK_ARGS, *LORA, "model.lora_rank=8"]}),
        ("qlora", {"args": [*SDK_ARGS, *QLORA], "resourcesPerNode": ONE_GPU}),
    )
    if not (rt.startswith("torchtune-qwen") and case == "qlora")
]


@pytest.mark.parametrize(("runtime", "case", "trainer"), GOLDEN)
def test_golden_plan(golden: Any, runtime: str, case: str, trainer: dict[str, Any]) -> None:
    tj = trainjob(
        runtime,
        name="ft",
        trainer={"command": TUNE, **trainer},
        initializer={"dataset": {"storageUri": "hf://tatsu-lab/alpaca"}},
    )
    golden(f"plans/{runtime}__{case}.yaml", compile(tj, builtin(runtime)).to_yaml())
