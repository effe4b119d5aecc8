"""TRLConfig (KEP-626): rendering per method, method-scoped fields, the TrainJob the SDK builds
for a ``trl`` runtime, runtime auto-selection by framework label, and what is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trainjob import (
    BuiltinTrainer,
    ConfigTrainer,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    LocalProcessBackendConfig,
    TorchTuneConfig,
    TrainerClient,
    TRLConfig,
    TRLMethod,
)
from trainjob.client import builder, runtimes
from trainjob.executor.catalog import builtin_runtimes

TRL = runtimes.runtime_from_cr(builtin_runtimes()["trl-distributed"].to_dict())
TORCHTUNE = runtimes.runtime_from_cr(builtin_runtimes()["torchtune-llama3.2-1b"].to_dict())


def test_a_dpo_config_renders_keps_flags_in_field_order() -> None:
    config = TRLConfig(
        method=TRLMethod.DPO,
        model_name_or_path="Qwen/Qwen2.5-0.5B",
        dataset_name="trl-lib/ultrafeedback_binarized",
        learning_rate=5e-7,
        use_peft=True,
        lora_target_modules=["q_proj", "v_proj"],
        beta=0.1,
        bf16=False,
        extra_args=["--max_length", "512"],
    )
    assert config.to_args() == [
        "dpo",
        "--model_name_or_path",
        "Qwen/Qwen2.5-0.5B",
        "--dataset_name",
        "trl-lib/ultrafeedback_binarized",
        "--learning_rate",
        "5e-07",
        "--bf16",
        "False",
        "--use_peft",
        "--lora_target_modules",
        "q_proj",
        "v_proj",
        "--beta",
        "0.1",
        "--max_length",
        "512",
    ]
    assert (TRLConfig.framework, TRLConfig.command) == ("trl", ("trl",))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param(
            {"method": TRLMethod.SFT, "beta": 0.1},
            "'beta' applies to ['dpo'], not method=sft",
            id="beta is DPO's",
        ),
        pytest.param(
            {"method": TRLMethod.DPO, "num_generations": 4},
            "'num_generations' applies to ['grpo'], not method=dpo",
            id="num_generations is GRPO's",
        ),
        pytest.param(
            {"method": TRLMethod.GRPO},
            "method=grpo requires at least one entry in 'reward_funcs'",
            id="GRPO needs a reward",
        ),
        pytest.param(
            {"method": "ppo"},
            "method must be one of sft, dpo, grpo, got 'ppo'",
            id="an unknown method",
        ),
    ],
)
def test_fields_that_do_not_apply_to_the_method_are_refused(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as err:
        TRLConfig(model_name_or_path="m", dataset_name="d", **kwargs)
    assert str(err.value) == message


def test_a_method_given_as_its_name_is_the_enum() -> None:
    assert TRLConfig(method="sft", model_name_or_path="m", dataset_name="d").method is (  # type: ignore[arg-type]
        TRLMethod.SFT
    )


def test_what_the_initializers_fetch_is_trained_from_their_copies_and_outputs_go_to_the_volume() -> (
    None
):
    init = Initializer(
        model=HuggingFaceModelInitializer(storage_uri="hf://Qwen/Qwen2.5-0.5B"),
        dataset=HuggingFaceDatasetInitializer(storage_uri="hf://trl-lib/ultrafeedback_binarized"),
    )
    config = TRLConfig(
        method=TRLMethod.DPO,
        model_name_or_path="Qwen/Qwen2.5-0.5B",
        dataset_name="trl-lib/ultrafeedback_binarized",
        num_nodes=2,
        resources_per_node={"cpu": 2},
    )
    spec = builder.builtin_trainer(TRL, BuiltinTrainer(config=config), init)
    assert spec["command"] == ["trl"]
    assert spec["args"] == [
        "dpo",
        "--model_name_or_path",
        "/workspace/model",
        "--dataset_name",
        "/workspace/dataset",
        "--output_dir",
        "/workspace/output",
    ]
    assert spec["numNodes"] == 2
    assert spec["resourcesPerNode"] == {"limits": {"cpu": 2}, "requests": {"cpu": 2}}
    # a name the initializers did not fetch is passed through; an output_dir given is kept
    other = TRLConfig(
        method=TRLMethod.SFT,
        model_name_or_path="gpt2",
        dataset_name="/data/x.jsonl",
        extra_args=["--output_dir=/elsewhere"],
    )
    args = builder.builtin_trainer(TRL, BuiltinTrainer(config=other), init)["args"]
    assert args == [
        "sft",
        "--model_name_or_path",
        "gpt2",
        "--dataset_name",
        "/data/x.jsonl",
        "--output_dir=/elsewhere",
    ]


def test_a_config_trainer_carries_the_nodes_and_image() -> None:
    trainer = ConfigTrainer(
        config=TRLConfig(method=TRLMethod.SFT, model_name_or_path="m", dataset_name="d"),
        num_nodes=3,
        image="example.com/trainer:1",
    )
    spec = builder.builtin_trainer(TRL, trainer)
    assert (spec["numNodes"], spec["image"]) == (3, "example.com/trainer:1")


def test_a_config_for_another_framework_than_the_runtimes_is_refused() -> None:
    with pytest.raises(ValueError) as err:
        builder.builtin_trainer(TORCHTUNE, BuiltinTrainer(config=TRLConfig("sft", "m", "d")))  # type: ignore[arg-type]
    assert str(err.value) == (
        "TRLConfig supports frameworks ('trl',), but runtime 'torchtune-llama3.2-1b' has "
        "framework 'torchtune'"
    )
    with pytest.raises(ValueError, match="TorchTuneConfig supports frameworks"):
        builder.builtin_trainer(TRL, BuiltinTrainer(config=TorchTuneConfig()))


def test_the_trl_runtime_is_a_builtin_trainer_runtime_running_trl() -> None:
    assert TRL.trainer.trainer_type.value == "BuiltinTrainer"
    assert (TRL.trainer.framework, TRL.trainer.command) == ("trl", ("trl",))


def test_without_a_runtime_a_trl_config_takes_the_one_trl_runtime(tmp_path: Path) -> None:
    client = TrainerClient(LocalProcessBackendConfig(home=tmp_path / "home", cwd=str(tmp_path)))
    trainer = ConfigTrainer(
        config=TRLConfig(method=TRLMethod.SFT, model_name_or_path="m", dataset_name="d")
    )
    assert client._runtime_for(trainer).name == "trl-distributed"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(
            TRLConfig(method=TRLMethod.SFT, model_name_or_path="m", dataset_name="d", lora_r="8"),  # type: ignore[arg-type]
            "TRLConfig lora_r must be an integer, got str '8'",
            id="lora_r as a string",
        ),
        pytest.param(
            TRLConfig(
                method=TRLMethod.SFT,
                model_name_or_path="m",
                dataset_name="d",
                extra_args="--max_length 8",  # type: ignore[arg-type]
            ),
            "TRLConfig extra_args must be a list of strings (for example ['--max_length 8']), "
            "got str '--max_length 8'",
            id="extra_args as one string",
        ),
        pytest.param(
            TRLConfig(method=TRLMethod.SFT, model_name_or_path="", dataset_name="d"),
            "TRLConfig model_name_or_path must be a non-empty string, got str ''",
            id="no model",
        ),
    ],
)
def test_a_bad_field_is_one_clear_error_before_anything_is_submitted(
    tmp_path: Path, config: TRLConfig, message: str
) -> None:
    client = TrainerClient(LocalProcessBackendConfig(home=tmp_path / "home", cwd=str(tmp_path)))
    with pytest.raises(TypeError) as err:
        client.train(trainer=BuiltinTrainer(config=config))
    assert str(err.value) == message
    assert client.list_jobs() == []


def test_on_a_runtime_running_a_trl_script_under_torchrun_the_method_picks_the_script() -> None:
    # KEP-2839's TRL runtime: `command: [torchrun, -m, trl.scripts.sft]`, the flags as args
    cr = builtin_runtimes()["trl-distributed"].to_dict()
    cr["metadata"]["name"] = "trl-torchrun"
    for rjob in cr["spec"]["template"]["spec"]["replicatedJobs"]:
        for ctr in rjob["template"]["spec"]["template"]["spec"]["containers"]:
            if ctr["name"] == "node":
                ctr["command"] = ["torchrun", "-m", "trl.scripts.sft"]
    runtime = runtimes.runtime_from_cr(cr)
    assert runtime.trainer.command == ("torchrun", "-m", "trl.scripts.sft")
    config = TRLConfig(method=TRLMethod.DPO, model_name_or_path="m", dataset_name="d", beta=0.2)
    spec = builder.builtin_trainer(runtime, BuiltinTrainer(config=config))
    assert spec["command"] == ["torchrun", "-m", "trl.scripts.dpo"]
    assert spec["args"] == [
        "--model_name_or_path",
        "m",
        "--dataset_name",
        "d",
        "--beta",
        "0.2",
        "--output_dir",
        "/workspace/output",
    ]
    sft = TRLConfig(method=TRLMethod.SFT, model_name_or_path="m", dataset_name="d")
    assert builder.builtin_trainer(runtime, ConfigTrainer(config=sft))["command"] == [
        "torchrun",
        "-m",
        "trl.scripts.sft",
    ]
