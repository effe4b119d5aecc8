"""The SDK's trainers: what ``TrainerClient.train(trainer=...)`` takes, as upstream names them.

``CustomTrainer`` (a function shipped as source), ``CustomTrainerContainer`` (an image's own
command), ``BuiltinTrainer`` with ``TorchTuneConfig`` or ``TRLConfig`` (trainjob's LLM trainer)
and ``ConfigTrainer``; the names, fields and defaults of upstream ``kubeflow.trainer``. Exported
by :mod:`trainjob.client.types`; no Kubernetes or torch import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

from trainjob.client import constants


@dataclass
class ElasticPolicy:
    """An elastic node count (KEP-2903), given as a trainer's ``num_nodes``.

    Args:
        min_nodes: The fewest nodes the job trains on; below it the job fails.
        max_nodes: The most nodes; the job starts with this many.
        max_restarts: torchrun's restart budget per node (each membership change costs one).
        metrics: autoscaling/v2 ``MetricSpec`` dicts for a HorizontalPodAutoscaler (a cluster's).

    ``CustomTrainer(func=train, num_nodes=ElasticPolicy(min_nodes=2, max_nodes=4))`` runs the
    function under torchrun's elastic agent (see docs/elastic.md for what the function must do).
    """

    min_nodes: int
    max_nodes: int
    max_restarts: int | None = None
    metrics: list[dict[str, Any]] | None = None


@dataclass
class CustomTrainer:
    """Run a self-contained Python function as the training process on every node.

    Args:
        func: The function that runs the whole training. It is shipped as source: it must be a
            ``def`` at the top level of a file or notebook cell, import what it uses inside its
            body, and not refer to variables of its module or of an enclosing function.
        func_args: Keyword arguments for ``func`` (Python literals: numbers, strings, lists...).
        image: A container image that replaces the runtime's (Kubernetes backend).
        packages_to_install: Python packages to ``pip install`` before ``func`` runs.
        pip_index_urls: Package index URLs; the first is ``--index-url``, the others
            ``--extra-index-url``.
        num_nodes: Number of training nodes (the runtime's number when not set), or an
            :class:`ElasticPolicy` for an elastic job.
        resources_per_node: Resources of each node, e.g. ``{"cpu": 2, "memory": "4Gi", "gpu": 1}``.
        env: Environment variables added to the training nodes' environment.

    Fields are in upstream's order (SDK v0.5), so positional arguments mean the same.
    """

    func: Callable[..., Any]
    func_args: dict[str, Any] | None = None
    image: str | None = None
    packages_to_install: list[str] | None = None
    pip_index_urls: list[str] = field(
        default_factory=lambda: list(constants.DEFAULT_PIP_INDEX_URLS)
    )
    num_nodes: int | ElasticPolicy | None = None
    resources_per_node: dict[str, Any] | None = None
    env: dict[str, str] | None = None


@dataclass
class CustomTrainerContainer:
    """Run a container image that holds the whole training process.

    Args:
        image: The container image.
        num_nodes: Number of training nodes.
        resources_per_node: Resources of each node.
        env: Environment variables added to the training nodes' environment.

    The command and arguments come from the ``TrainerCommand`` and ``TrainerArgs`` options.
    """

    image: str
    num_nodes: int | ElasticPolicy | None = None
    resources_per_node: dict[str, Any] | None = None
    env: dict[str, str] | None = None


class Loss(Enum):
    """Loss function for the TorchTune LLM Trainer."""

    CEWithChunkedOutputLoss = "torchtune.modules.loss.CEWithChunkedOutputLoss"


class DataType(Enum):
    """Data type for the TorchTune LLM Trainer."""

    BF16 = "bf16"
    FP32 = "fp32"


class DataFormat(Enum):
    """Data file type for the TorchTune LLM Trainer."""

    JSON = "json"
    CSV = "csv"
    PARQUET = "parquet"
    ARROW = "arrow"
    TEXT = "text"
    XML = "xml"


@dataclass
class TorchTuneInstructDataset:
    """An instruct dataset (user prompts and model responses) for the TorchTune LLM Trainer.

    Args:
        source: Data file type.
        split: The split to use, e.g. ``"train[:10%]"`` (default ``train``).
        train_on_input: Whether the model is trained on the user prompt too.
        new_system_prompt: A system message prepended to every sample.
        column_map: Maps the expected ``input``/``output`` columns to the dataset's columns.
    """

    source: DataFormat | None = None
    split: str | None = None
    train_on_input: bool | None = None
    new_system_prompt: str | None = None
    column_map: dict[str, str] | None = None


@dataclass
class LoraConfig:
    """LoRA, QLoRA (``quantize_base=True``) or DoRA (``use_dora=True``) fine-tuning.

    Args:
        apply_lora_to_mlp: Apply LoRA to the MLP of each transformer layer.
        apply_lora_to_output: Apply LoRA to the final output projection.
        lora_attn_modules: Attention projections to adapt (``q_proj``, ``k_proj``, ``v_proj``,
            ``output_proj``).
        lora_rank: Rank of the low-rank decomposition.
        lora_alpha: Scaling factor of the low-rank update.
        lora_dropout: Dropout probability on the low-rank update.
        quantize_base: Quantize the base model (QLoRA).
        use_dora: Use DoRA.
    """

    apply_lora_to_mlp: bool | None = None
    apply_lora_to_output: bool | None = None
    lora_attn_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "v_proj", "output_proj"]
    )
    lora_rank: int | None = None
    lora_alpha: int | None = None
    lora_dropout: float | None = None
    quantize_base: bool | None = None
    use_dora: bool | None = None


@dataclass
class TorchTuneConfig:
    """Parameters of the TorchTune LLM Trainer (the fine-tuning recipe is built in).

    Args:
        dtype: Data type of model and optimizer parameters (``bf16`` or ``fp32``).
        batch_size: Samples per optimizer step.
        epochs: Passes over the dataset.
        loss: The loss function.
        num_nodes: Number of training nodes.
        peft_config: LoRA/QLoRA/DoRA configuration.
        dataset_preprocess_config: Instruct dataset preprocessing.
        resources_per_node: Resources of each node.

    trainjob adds (after upstream's fields, each a torchtune config key, so upstream's torchtune
    image reads them too; unset keeps the config file's value):
        learning_rate: Peak learning rate (``optimizer.lr``).
        gradient_accumulation_steps: Micro-batches per optimizer step.
        max_steps_per_epoch: Stop each epoch after this many optimizer steps.
        max_seq_len: Truncate (or, packed, pack) sequences to this many tokens
            (``tokenizer.max_seq_len``).
        warmup_steps: Linear warmup steps of the cosine schedule
            (``lr_scheduler.num_warmup_steps``).
        overrides: Any other ``key=value`` config overrides, e.g.
            ``["dataset.packed=True", "save_every_n_steps=50"]`` (docs/fine-tuning.md lists them).
    """

    dtype: DataType | None = None
    batch_size: int | None = None
    epochs: int | None = None
    loss: Loss | None = None
    num_nodes: int | None = None
    peft_config: LoraConfig | None = None
    dataset_preprocess_config: TorchTuneInstructDataset | None = None
    resources_per_node: dict[str, Any] | None = None
    learning_rate: float | None = None
    gradient_accumulation_steps: int | None = None
    max_steps_per_epoch: int | None = None
    max_seq_len: int | None = None
    warmup_steps: int | None = None
    overrides: list[str] | None = None


class TRLMethod(Enum):
    """A TRL post-training method; the value is the ``trl`` subcommand (KEP-626)."""

    SFT = "sft"
    DPO = "dpo"
    GRPO = "grpo"


@dataclass
class TRLConfig:
    """Hugging Face TRL post-training (KEP-626's ``TRLConfig``): rendered as
    ``trl <method> --flag value ...`` for a runtime labelled ``trainer.kubeflow.org/framework:
    trl`` (trainjob's ``trl-distributed``).

    Args:
        method: SFT, DPO or GRPO.
        model_name_or_path: The model: a Hub name or a path. When it names what the model
            initializer fetches (``hf://<name>``, or the same URI), the initializer's copy in
            ``/workspace/model`` is trained.
        dataset_name: The dataset, likewise (``/workspace/dataset`` for the initializer's copy).
        learning_rate, per_device_train_batch_size, num_train_epochs, bf16: TRL's flags.
        use_peft, lora_r, lora_alpha, lora_target_modules: LoRA through peft.
        beta, max_prompt_length: DPO only.
        reward_funcs, num_generations: GRPO only (reward_funcs required for GRPO).
        extra_args: Any other flags of the TRL script, e.g. ``["--gradient_accumulation_steps",
            "4", "--max_length", "512"]``; they follow the TRL version of the runtime.

    trainjob adds (not rendered as flags, as ``TorchTuneConfig`` has them):
        num_nodes: Number of training nodes.
        resources_per_node: Resources of each node.

    Raises:
        ValueError: a field set that does not apply to the method, or GRPO without reward_funcs.
    """

    framework: ClassVar[str] = "trl"
    command: ClassVar[tuple[str, ...]] = ("trl",)

    method: TRLMethod
    model_name_or_path: str
    dataset_name: str

    learning_rate: float | None = None
    per_device_train_batch_size: int | None = None
    num_train_epochs: int | None = None
    bf16: bool | None = None
    use_peft: bool | None = None
    lora_r: int | None = None
    lora_alpha: int | None = None
    lora_target_modules: list[str] | None = None

    beta: float | None = None
    max_prompt_length: int | None = None
    reward_funcs: list[str] | None = None
    num_generations: int | None = None

    extra_args: list[str] | None = None

    num_nodes: int | None = None
    resources_per_node: dict[str, Any] | None = None

    _METHOD_SCOPED_FIELDS: ClassVar[dict[str, frozenset[str]]] = {
        "beta": frozenset({"dpo"}),
        "max_prompt_length": frozenset({"dpo"}),
        "reward_funcs": frozenset({"grpo"}),
        "num_generations": frozenset({"grpo"}),
    }
    _NOT_FLAGS: ClassVar[frozenset[str]] = frozenset(
        {"method", "extra_args", "num_nodes", "resources_per_node"}
    )

    def __post_init__(self) -> None:
        if not isinstance(self.method, TRLMethod):
            try:
                self.method = TRLMethod(self.method)
            except ValueError:
                raise ValueError(
                    f"method must be one of {', '.join(m.value for m in TRLMethod)}, "
                    f"got {self.method!r}"
                ) from None
        for name, methods in self._METHOD_SCOPED_FIELDS.items():
            if getattr(self, name) is not None and self.method.value not in methods:
                raise ValueError(
                    f"'{name}' applies to {sorted(methods)}, not method={self.method.value}"
                )
        if self.method is TRLMethod.GRPO and not self.reward_funcs:
            raise ValueError("method=grpo requires at least one entry in 'reward_funcs'")

    def to_args(self) -> list[str]:
        """``[<method>, --flag, value, ...]`` for the ``trl`` command: True is a bare flag,
        a list follows its flag item by item, ``extra_args`` come last as given."""
        import dataclasses

        args: list[str] = [self.method.value]
        for f in dataclasses.fields(self):
            if f.name in self._NOT_FLAGS:
                continue
            value = getattr(self, f.name)
            if value is None:
                continue
            if value is True:
                args.append(f"--{f.name}")
            elif isinstance(value, list):
                args.append(f"--{f.name}")
                args.extend(str(item) for item in value)
            else:
                args += [f"--{f.name}", str(value)]
        if self.extra_args:
            args.extend(self.extra_args)
        return args


@dataclass
class BuiltinTrainer:
    """A trainer whose training logic is built into the runtime; only parameters are given.

    Args:
        config: The configuration of the built-in trainer: ``TorchTuneConfig`` (a ``torchtune``
            runtime) or ``TRLConfig`` (a ``trl`` runtime).
    """

    config: TorchTuneConfig | TRLConfig


@dataclass(kw_only=True)
class ConfigTrainer:
    """KEP-626's config-driven trainer: a ``TRLConfig`` (or ``TorchTuneConfig``) plus the
    nodes it runs on. Without a runtime, ``train()`` picks the one runtime whose framework
    label is the config's.

    Args:
        config: What to train.
        num_nodes: Number of training nodes (default: the config's, else the runtime's).
        resources_per_node: Resources of each node.
        image: The trainer image (default: the runtime's).
    """

    config: TorchTuneConfig | TRLConfig
    num_nodes: int | None = None
    resources_per_node: dict[str, Any] | None = None
    image: str | None = None


AnyTrainer = CustomTrainer | CustomTrainerContainer | BuiltinTrainer | ConfigTrainer
"""What ``TrainerClient.train(trainer=...)`` takes."""
