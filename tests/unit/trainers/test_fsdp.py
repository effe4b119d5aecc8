"""FSDP2, pinned by the training config it produces: ``fsdp`` and its options, their defaults per
torchtune config (on for ``*_full_multinode``: KEP-2401's 70B example), transformers' ``fsdp`` /
``fsdp_config`` and accelerate's FSDP plugin arguments, and the one-line errors. The run across
two nodes is tests/e2e/test_llm_fsdp.py."""

from __future__ import annotations

from typing import Any

import pytest

from trainjob.trainers.llm import config as config_mod
from trainjob.trainers.llm import engine
from trainjob.trainers.llm.errors import TrainerError

pytest.importorskip("trl")

BASE = ["output_dir=/out", "checkpointer.checkpoint_dir=/m", "dataset.data_dir=/d"]
MULTINODE = ("full_finetune_distributed", "llama3_3/70B_full_multinode")


def build(recipe: str, config: str, *overrides: str) -> config_mod.TrainConfig:
    return config_mod.build(recipe, config, [*BASE, *overrides])


def kwargs(*overrides: str, world: int = 2, recipe: tuple[str, str] = MULTINODE) -> dict[str, Any]:
    """The TrainingArguments fields this run sets."""
    return engine.training_kwargs(build(*recipe, *overrides), cuda=False, world=world)


def plugin(monkeypatch: pytest.MonkeyPatch, *overrides: str) -> dict[str, Any]:
    """accelerate's FSDP plugin arguments, as transformers' TrainingArguments derives them from
    ``fsdp``/``fsdp_config`` (its own code; the arguments can be built only in a process group,
    so a one-process TrainingArguments gets the FSDP fields afterwards)."""
    from transformers import TrainingArguments

    monkeypatch.setenv("FSDP_CPU_RAM_EFFICIENT_LOADING", "")  # transformers sets it; undone after
    k = kwargs(*overrides)
    a = TrainingArguments(output_dir="/tmp/unused", use_cpu=True, report_to="none")
    a.fsdp, a.fsdp_config = k["fsdp"], dict(k["fsdp_config"])
    a.activation_checkpointing = False
    out: dict[str, Any] = a._process_fsdp_args()  # type: ignore[no-untyped-call]
    return out


def checkpointing_arg(k: dict[str, Any]) -> bool:
    return bool(k.get("activation_checkpointing", k.get("gradient_checkpointing")))


def test_the_multinode_config_shards_by_default_and_the_others_replicate() -> None:
    assert build(*MULTINODE).fsdp
    assert not build("full_finetune_distributed", "llama3_2/1B_full").fsdp
    assert build("full_finetune_distributed", "llama3_2/1B_full", "fsdp=True").fsdp
    assert not build(*MULTINODE, "fsdp=False").fsdp


def test_fsdp_over_two_processes_is_accelerates_fsdp2_with_a_full_state_dict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    k = kwargs()
    assert k["fsdp"] is True and k["fsdp_config"]["version"] == 2
    p = plugin(monkeypatch)
    assert p["fsdp_version"] == 2
    assert p["reshard_after_forward"] is True
    assert p["state_dict_type"] == "FULL_STATE_DICT"  # one model.safetensors, loadable anywhere
    assert p["auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP"  # each decoder layer, then the root
    assert not p.get("cpu_offload")


def test_activation_checkpointing_is_fsdps_own_under_fsdp(monkeypatch: pytest.MonkeyPatch) -> None:
    # torchtune's 70B multi-node config turns checkpointing on; under FSDP it is FSDP's (the
    # training argument would add an all-gather in the backward pass)
    assert build(*MULTINODE).activation_checkpointing
    assert not checkpointing_arg(kwargs())
    assert plugin(monkeypatch)["activation_checkpointing"] is True
    assert (
        plugin(monkeypatch, "enable_activation_checkpointing=False")["activation_checkpointing"]
        is False
    )


def test_fsdp_options_reach_the_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    p = plugin(monkeypatch, "fsdp_reshard_after_forward=False", "fsdp_cpu_offload=True")
    assert p["reshard_after_forward"] is False
    assert p["cpu_offload"] is True


def test_one_process_has_nothing_to_shard() -> None:
    k = kwargs(world=1)
    assert "fsdp" not in k and k["ddp_backend"] is None
    assert checkpointing_arg(k)  # the training argument's checkpointing, as without FSDP


def test_ddp_when_fsdp_is_off() -> None:
    k = kwargs("fsdp=False")
    assert "fsdp" not in k
    assert k["ddp_backend"] == "gloo"
    assert checkpointing_arg(k)


@pytest.mark.parametrize(
    ("recipe", "overrides", "message"),
    [
        pytest.param(
            ("full_finetune_single_device", "llama3_2/1B_full_single_device"),
            ("fsdp=True",),
            'fsdp=True shards the model over processes, but recipe "full_finetune_single_device" '
            "runs one; use full_finetune_distributed, or drop fsdp",
            id="a single-device recipe",
        ),
        pytest.param(
            ("lora_finetune_distributed", "llama3_2/1B_lora"),
            ("fsdp=True",),
            "fsdp=True shards a full fine-tune; LoRA trains with a replica",
            id="LoRA",
        ),
        pytest.param(
            ("full_finetune_distributed", "llama3_2/1B_full"),
            ("fsdp_cpu_offload=True",),
            "fsdp_cpu_offload is an FSDP option but fsdp is off; add fsdp=True",
            id="an option without fsdp",
        ),
        pytest.param(
            MULTINODE,
            ("fsdp=maybe",),
            'override fsdp="maybe" must be True or False',
            id="not a bool",
        ),
    ],
)
def test_fsdp_errors_name_the_key_and_the_fix(
    recipe: tuple[str, str], overrides: tuple[str, ...], message: str
) -> None:
    with pytest.raises(TrainerError) as err:
        build(*recipe, *overrides)
    assert message in str(err.value)
