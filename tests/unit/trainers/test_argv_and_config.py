"""The ``tune run`` argv and the typed config: defaults per recipe, overrides, exact errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainjob.trainers.llm import argv, config, recipes
from trainjob.trainers.llm.errors import TrainerError

REQUIRED = ("output_dir=/out", "checkpointer.checkpoint_dir=/model", "dataset.data_dir=/data")


def build(recipe: str, cfg: str, *overrides: str) -> config.TrainConfig:
    return config.build(recipe, cfg, [*REQUIRED, *overrides])


def test_the_runtime_command_parses_into_launcher_options_recipe_config_and_overrides() -> None:
    inv = argv.parse_run(
        [
            "run",
            "--rdzv_endpoint=localhost:29500",
            "--nproc_per_node",
            "2",
            "--standalone",
            "full_finetune_distributed",
            "--config",
            "llama3_2/1B_full",
            "dataset=torchtune.datasets.instruct_dataset",
            "batch_size=2",
        ]
    )
    assert inv.launcher == (
        ("--rdzv_endpoint", "localhost:29500"),
        ("--nproc_per_node", "2"),
        ("--standalone", None),
    )
    assert inv.option("--nproc_per_node", "--nproc-per-node") == "2"
    assert (inv.recipe, inv.config) == ("full_finetune_distributed", "llama3_2/1B_full")
    assert inv.training_argv() == [
        "full_finetune_distributed",
        "--config",
        "llama3_2/1B_full",
        "dataset=torchtune.datasets.instruct_dataset",
        "batch_size=2",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["ls"], 'expected "run", got "ls"', id="not-run"),
        pytest.param(["run"], "no recipe given", id="no-recipe"),
        pytest.param(["run", "full_finetune_distributed"], "no --config given", id="no-config"),
        pytest.param(
            ["run", "full_finetune_distributed", "--config", "llama3_2/1B_full", "--nnodes=2"],
            'unknown option "--nnodes=2" after recipe full_finetune_distributed',
            id="launcher-option-after-recipe",
        ),
    ],
)
def test_a_malformed_command_line_says_what_is_wrong(args: list[str], message: str) -> None:
    with pytest.raises(TrainerError, match=r"^" + message.replace("[", r"\[")):
        argv.parse_run(args)


@pytest.mark.parametrize(
    ("recipe", "cfg", "method", "distributed", "want"),
    [
        # torchtune 0.6.1's files say these (tests/unit/trainers/test_defaults.py checks all)
        (
            "full_finetune_distributed",
            "llama3_2/1B_full",
            "full",
            True,
            dict(batch_size=4, gradient_accumulation_steps=8, lr=2e-5, lr_scheduler=None),
        ),
        (
            "full_finetune_single_device",
            "qwen2_5/1.5B_full_single_device",
            "full",
            False,
            dict(batch_size=4, gradient_accumulation_steps=1, lr=2e-5, lr_scheduler=None),
        ),
        (
            "lora_finetune_distributed",
            "llama3_2/1B_lora",
            "lora",
            True,
            dict(batch_size=4, gradient_accumulation_steps=8, lr=3e-4, warmup_steps=100),
        ),
        (
            "lora_finetune_single_device",
            "llama3_2/1B_qlora_single_device",
            "lora",
            False,
            dict(batch_size=4, gradient_accumulation_steps=8, lr=3e-4, warmup_steps=100),
        ),
    ],
)
def test_recipe_and_config_give_the_method_and_torchtunes_defaults(
    recipe: str, cfg: str, method: str, distributed: bool, want: dict[str, object]
) -> None:
    c = build(recipe, cfg)
    assert (c.recipe.method, c.recipe.distributed) == (method, distributed)
    assert {k: getattr(c, k) for k in want} == want
    assert c.epochs == 1 and c.max_steps_per_epoch is None
    assert c.lora.quantize_base is cfg.endswith("qlora_single_device")
    if method == "lora":
        assert c.lr_scheduler is not None and not c.save_adapter_weights_only
        assert (c.lora.lora_rank, c.lora.lora_alpha) == (64, 128.0)


def test_the_sdk_overrides_land_in_typed_fields() -> None:
    c = build(
        "lora_finetune_distributed",
        "llama3_2/1B_lora",
        "dtype=DataType.BF16",
        "batch_size=8",
        "epochs=3",
        "max_steps_per_epoch=5",
        "gradient_accumulation_steps=2",
        "optimizer.lr=1e-3",
        "seed=7",
        "loss=torchtune.modules.loss.CEWithChunkedOutputLoss",
        "model.lora_attn_modules=[q_proj,k_proj,output_proj]",
        "model.apply_lora_to_mlp=False",
        "model.apply_lora_to_output=True",
        "model.lora_rank=8",
        "model.lora_alpha=16",
        "model.lora_dropout=0.1",
        "model.use_dora=True",
        "dataset=torchtune.datasets.instruct_dataset",
        "dataset.source=parquet",
        "dataset.split=train[:90%]",
        "dataset.train_on_input=True",
        "dataset.new_system_prompt=Be brief.",
        "dataset.column_map={'input': 'question', 'output': 'answer'}",
        "tokenizer.path=/model/original/tokenizer.model",
        "tokenizer.max_seq_len=512",
    )
    assert (c.dtype, c.batch_size, c.epochs, c.max_steps_per_epoch) == ("bf16", 8, 3, 5)
    assert (c.gradient_accumulation_steps, c.lr, c.seed) == (2, 1e-3, 7)
    assert c.lora == config.LoraConfig(
        lora_attn_modules=("q_proj", "k_proj", "output_proj"),
        apply_lora_to_mlp=False,
        apply_lora_to_output=True,
        lora_rank=8,
        lora_alpha=16.0,
        lora_dropout=0.1,
        use_dora=True,
        quantize_base=False,
    )
    assert c.dataset == config.DatasetConfig(
        source="parquet",
        data_dir="/data",
        split="train[:90%]",
        column_map={"input": "question", "output": "answer"},
        train_on_input=True,
        new_system_prompt="Be brief.",
    )
    assert (c.tokenizer_path, c.max_seq_len, c.output_dir) == (
        "/model/original/tokenizer.model",
        512,
        "/out",
    )


def test_an_unknown_override_names_the_key_and_the_known_ones() -> None:
    with pytest.raises(TrainerError) as err:
        build("full_finetune_distributed", "llama3_2/1B_full", "foo.bar=1")
    assert str(err.value).startswith('unknown override "foo.bar"; known: epochs, batch_size, ')


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("batch_size=two", 'override batch_size="two" must be an integer'),
        ("epochs=0", 'override epochs="0" must be an integer >= 1'),
        ("dtype=fp64", 'override dtype="fp64" must be fp32 or bf16'),
        (
            "dataset.source=xml",
            'override dataset.source="xml" must be one of json, jsonl, csv, parquet',
        ),
        (
            "dataset.train_on_input=maybe",
            'override dataset.train_on_input="maybe" must be True or False',
        ),
        ("batch_size", 'override "batch_size" is not key=value (e.g. batch_size=2)'),
        (
            "loss=torch.nn.MSELoss",
            'override loss="torch.nn.MSELoss" must be one of '
            "torchtune.modules.loss.CEWithChunkedOutputLoss, torch.nn.CrossEntropyLoss (cross-entropy)",
        ),
    ],
)
def test_a_malformed_override_value_says_what_it_must_be(override: str, message: str) -> None:
    with pytest.raises(TrainerError) as err:
        build("lora_finetune_distributed", "llama3_2/1B_lora", override)
    assert str(err.value) == message


def test_lora_settings_on_a_full_recipe_point_at_the_lora_recipe() -> None:
    with pytest.raises(TrainerError) as err:
        build("full_finetune_distributed", "llama3_2/1B_full", "model.lora_rank=8")
    assert str(err.value) == (
        'override "model.lora_rank" is for LoRA, but recipe "full_finetune_distributed" is a full '
        'fine-tune; use lora_finetune_distributed --config llama3_2/1B_lora, or drop "model.lora_rank"'
    )


def test_unknown_recipe_and_config_and_a_mismatch_are_one_line_errors() -> None:
    with pytest.raises(TrainerError, match=r'^unknown recipe "ppo_full_finetune"; known: full_'):
        recipes.parse("ppo_full_finetune", "llama3_2/1B_full")
    with pytest.raises(TrainerError, match=r'^unknown --config "llama9/1B_full"; expected'):
        recipes.parse("full_finetune_distributed", "llama9/1B_full")
    with pytest.raises(TrainerError) as err:
        recipes.parse("full_finetune_single_device", "llama3_2/1B_lora")
    assert str(err.value) == (
        '--config llama3_2/1B_lora is a lora config but recipe "full_finetune_single_device" is a '
        "full fine-tune; use --config llama3_2/1B_full_single_device"
    )


def test_missing_required_paths_and_dataset_say_which_key_to_set() -> None:
    with pytest.raises(TrainerError, match=r"^output_dir is not set; add output_dir=<dir>"):
        config.build(
            "full_finetune_distributed", "llama3_2/1B_full", ["checkpointer.checkpoint_dir=/m"]
        )
    with pytest.raises(TrainerError, match=r"^no dataset: set dataset.data_dir=<dir>"):
        config.build(
            "full_finetune_distributed",
            "llama3_2/1B_full",
            ["checkpointer.checkpoint_dir=/m", "output_dir=/o"],
        )
    with pytest.raises(TrainerError, match=r'^model.lora_attn_modules has unknown module "o_proj"'):
        build("lora_finetune_distributed", "llama3_2/1B_lora", "model.lora_attn_modules=[o_proj]")


def test_without_a_dataset_override_the_dataset_initializer_s_directory_is_read(
    tmp_path: Path,
) -> None:
    """The SDK passes no dataset.data_dir for an S3 dataset: the trainer reads /workspace/dataset,
    beside the model dir, when the initializer filled it; an explicit override still wins."""
    (tmp_path / "model").mkdir()
    args = [f"checkpointer.checkpoint_dir={tmp_path / 'model'}", "output_dir=/o"]
    (tmp_path / "dataset").mkdir()  # empty: nothing to read, still an error
    with pytest.raises(TrainerError, match=r"^no dataset"):
        config.build("full_finetune_distributed", "llama3_2/1B_full", args)
    (tmp_path / "dataset" / "train.json").write_text("[]")
    cfg = config.build("full_finetune_distributed", "llama3_2/1B_full", args)
    assert cfg.dataset.data_dir == str(tmp_path / "dataset")
    cfg = config.build(
        "full_finetune_distributed", "llama3_2/1B_full", [*args, "dataset.data_files=/d.json"]
    )
    assert cfg.dataset.data_dir is None and cfg.dataset.data_files == ("/d.json",)
