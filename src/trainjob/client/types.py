"""The SDK's data types, with the names, fields and defaults of upstream ``kubeflow.trainer``.

Users build trainers and initializers from these and get ``Runtime``, ``TrainJob``, ``Step`` and
``Event`` back from :class:`trainjob.TrainerClient`. Called by the builder (``client.builder``)
and both backends. No Kubernetes or torch import here: the module is cheap.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum, StrEnum
from typing import Any, ClassVar
from urllib.parse import urlparse

from trainjob.client import constants

# ---------------------------------------------------------------------------------------------
# Trainers


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
        num_nodes: Number of training nodes (the runtime's number when not set).
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
    num_nodes: int | None = None
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
    num_nodes: int | None = None
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
        method: SFT, DPO or GRPO (trainjob's trainer runs SFT and DPO).
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


class TrainerType(Enum):
    CUSTOM_TRAINER = "CustomTrainer"
    BUILTIN_TRAINER = "BuiltinTrainer"


class RuntimeKind(StrEnum):
    CLUSTER_TRAINING_RUNTIME = "ClusterTrainingRuntime"
    TRAINING_RUNTIME = "TrainingRuntime"


# ---------------------------------------------------------------------------------------------
# What the client returns


@dataclass
class RuntimeTrainer:
    """The trainer of a runtime: its type, framework, image, nodes and devices."""

    trainer_type: TrainerType
    framework: str
    image: str
    num_nodes: int = 1
    device: str = constants.UNKNOWN
    device_count: str = constants.UNKNOWN
    _command: tuple[str, ...] = field(init=False, repr=False, default=())

    @property
    def command(self) -> tuple[str, ...]:
        return self._command

    def set_command(self, command: tuple[str, ...]) -> None:
        self._command = tuple(command)


@dataclass
class Runtime:
    """A training runtime (ClusterTrainingRuntime or TrainingRuntime) as the SDK sees it.

    Fields in upstream's order (SDK v0.5: ``name, trainer, kind, pretrained_model``); ``kind``
    keeps a default so that older code passing only ``name`` and ``trainer`` still works.
    """

    name: str
    trainer: RuntimeTrainer
    kind: RuntimeKind = RuntimeKind.CLUSTER_TRAINING_RUNTIME
    pretrained_model: str | None = None


@dataclass
class Step:
    """One pod of a TrainJob: ``dataset-initializer``, ``model-initializer`` or ``node-N``.

    ``status`` is the pod phase: Pending, Running, Succeeded or Failed.
    """

    name: str
    status: str | None
    pod_name: str
    device: str = constants.UNKNOWN
    device_count: str = constants.UNKNOWN


@dataclass
class TrainerStatus:
    """What the job's training last reported (``status.trainerStatus``, KEP-2779), through
    ``trainjob.update_trainjob_status``, the Kubeflow SDK's helper or transformers'
    ``KubeflowCallback``.

    Attributes:
        progress_percentage: 0-100, None when not reported.
        estimated_remaining_seconds: The ETA at ``last_updated_time``, None when not reported.
        metrics: Metric name -> value, as reported (strings).
        last_updated_time: When it was reported.
    """

    progress_percentage: int | None = None
    estimated_remaining_seconds: int | None = None
    metrics: dict[str, str] = field(default_factory=dict)
    last_updated_time: datetime | None = None


@dataclass
class TrainJob:
    """A TrainJob as the SDK reports it; ``status`` is Created, Running, Complete or Failed.

    ``outputs`` (filled by ``get_job``): what the job produced that outlives it, name ->
    location: ``output_dir`` (the trainer's) and each kept volume, a directory on this machine
    or ``persistentvolumeclaim/NAME`` on a cluster; ``delete_job(name, purge=True)`` removes them.
    ``trainer_status``: the progress its training last reported (None before any report).
    """

    name: str
    runtime: Runtime
    steps: list[Step]
    num_nodes: int
    creation_timestamp: datetime
    status: str = constants.UNKNOWN
    outputs: dict[str, str] = field(default_factory=dict)
    trainer_status: TrainerStatus | None = None


@dataclass
class Event:
    """An event about a TrainJob or one of its pods.

    Attributes:
        involved_object_kind: Kind of the object the event is about (``TrainJob``, ``Pod``...).
        involved_object_name: Name of that object.
        message: Human-readable description.
        reason: Short machine-readable reason.
        event_time: When the event was first recorded.
    """

    involved_object_kind: str
    involved_object_name: str
    message: str
    reason: str
    event_time: datetime


# ---------------------------------------------------------------------------------------------
# Initializers


@dataclass
class BaseInitializer(abc.ABC):
    """Base class of the dataset and model initializers."""

    storage_uri: str


def _require_prefix(uri: str, prefix: str) -> None:
    if not isinstance(uri, str) or not uri.startswith(prefix):
        raise ValueError(f"storage_uri must start with '{prefix}', got {uri}")


STORAGE_SCHEMES = ("hf://", "s3://", "file://")
"""The schemes trainjob's initializers fetch (``python -m trainjob.initializers.dataset|model``)."""


def _check_storage_uri(uri: str, kind: str) -> None:
    """Any scheme the initializers fetch, in any initializer type (upstream's types each allow
    one): the initializer picks its source by scheme, so ``HuggingFaceModelInitializer(
    storage_uri="file:///models/llama")`` copies a local checkpoint (offline runs, tests).
    ``hf://`` needs a repo (``<user>/<name>``, or a name alone: a dataset or model with no user,
    which upstream's types accept too), ``s3://`` a bucket, ``file://`` an absolute path."""
    if not isinstance(uri, str) or not uri.startswith(STORAGE_SCHEMES):
        raise ValueError(
            "storage_uri must start with 'hf://', 's3://' or 'file://' (the schemes trainjob's "
            f"initializers fetch), got {uri!r}"
        )
    parsed = urlparse(uri)
    if uri.startswith("hf://") and not parsed.netloc:
        raise ValueError(
            f"storage_uri must name a {kind} ('hf://<{kind}_name>' or "
            f"'hf://<user_name>/<{kind}_name>'), got {uri}"
        )
    if uri.startswith("s3://") and not parsed.netloc:
        raise ValueError(f"storage_uri: must name a bucket, 's3://<bucket>[/<path>]', got {uri}")
    if uri.startswith("file://") and (parsed.netloc or not parsed.path.startswith("/")):
        raise ValueError(
            f"storage_uri: must be an absolute local path, 'file:///<path>' (three slashes), "
            f"got {uri}"
        )


@dataclass
class HuggingFaceDatasetInitializer(BaseInitializer):
    """Download a dataset from the Hugging Face Hub (``hf://<user>/<dataset>[/<path>]``, or
    ``hf://<dataset>`` for a dataset with no user, as upstream accepts).

    Args:
        storage_uri: ``hf://`` URI of the dataset (``s3://`` and ``file:///path``, a local copy,
            are fetched too).
        ignore_patterns: File patterns not to download.
        access_token: Hub token for private datasets.
    """

    ignore_patterns: list[str] | None = None
    access_token: str | None = None

    def __post_init__(self) -> None:
        _check_storage_uri(self.storage_uri, "dataset")


@dataclass
class HuggingFaceModelInitializer(BaseInitializer):
    """Download a model from the Hugging Face Hub (``hf://<user>/<model>``).

    Args:
        storage_uri: ``hf://`` URI of the model (``s3://`` and ``file:///path``, a local copy
            such as ``save_pretrained`` writes, are fetched too).
        ignore_patterns: File patterns not to download (weights in other formats by default).
        access_token: Hub token for gated or private models.
    """

    ignore_patterns: list[str] | None = field(
        default_factory=lambda: list(constants.INITIALIZER_DEFAULT_IGNORE_PATTERNS)
    )
    access_token: str | None = None

    def __post_init__(self) -> None:
        _check_storage_uri(self.storage_uri, "model")


@dataclass
class _S3Initializer(BaseInitializer):
    """What the S3 dataset and model initializers share: their fields and the ``s3://`` check."""

    ignore_patterns: list[str] | None = None
    endpoint: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    region: str | None = None
    role_arn: str | None = None

    def __post_init__(self) -> None:
        _check_storage_uri(self.storage_uri, "repo")


@dataclass
class S3DatasetInitializer(_S3Initializer):
    """Download a dataset from S3-compatible storage (``s3://bucket/path``).

    Args:
        storage_uri: ``s3://`` URI (``hf://`` and ``file:///path`` are fetched too).
        ignore_patterns: File patterns not to download.
        endpoint: A custom S3 endpoint URL.
        access_key_id: Access key.
        secret_access_key: Secret key.
        region: Region.
        role_arn: ARN of a role to assume.
    """


@dataclass
class S3ModelInitializer(_S3Initializer):
    """Download a model from S3-compatible storage (``s3://bucket/path``); fields as the dataset's
    (``ignore_patterns`` defaults to weights in other formats)."""

    ignore_patterns: list[str] | None = field(
        default_factory=lambda: list(constants.INITIALIZER_DEFAULT_IGNORE_PATTERNS)
    )


@dataclass
class DataCacheInitializer(BaseInitializer):
    """A distributed data cache (``cache://<SCHEMA_NAME>/<TABLE_NAME>``).

    Args:
        storage_uri: ``cache://`` URI.
        metadata_loc: Metadata file path of an Iceberg table.
        num_data_nodes: Number of data nodes (more than 1).
        head_cpu: CPU of the cache's head node.
        head_mem: Memory of the cache's head node.
        worker_cpu: CPU of each cache worker node.
        worker_mem: Memory of each cache worker node.
        iam_role: IAM role for reading ``metadata_loc``.
    """

    metadata_loc: str
    num_data_nodes: int
    head_cpu: str | None = None
    head_mem: str | None = None
    worker_cpu: str | None = None
    worker_mem: str | None = None
    iam_role: str | None = None

    def __post_init__(self) -> None:
        if self.num_data_nodes <= 1:
            raise ValueError(f"num_data_nodes must be greater than 1, got {self.num_data_nodes}")
        _require_prefix(self.storage_uri, "cache://")
        if len(self.storage_uri[len("cache://") :].split("/")) != 2:
            raise ValueError(
                "storage_uri must be in format 'cache://<SCHEMA_NAME>/<TABLE_NAME>', "
                f"got {self.storage_uri}"
            )


@dataclass
class Initializer:
    """Dataset and model initializers that run before the trainer.

    Args:
        dataset: One of the dataset initializers.
        model: One of the model initializers.
    """

    dataset: HuggingFaceDatasetInitializer | S3DatasetInitializer | DataCacheInitializer | None = (
        None
    )
    model: HuggingFaceModelInitializer | S3ModelInitializer | None = None


@dataclass
class TrainJobTemplate:
    """A reusable TrainJob: ``client.train(**template)`` works.

    Args:
        trainer: The CustomTrainer.
        runtime: A runtime or runtime name (the default runtime when not set).
        initializer: Dataset and model initializers.
    """

    trainer: CustomTrainer
    runtime: str | Runtime | None = None
    initializer: Initializer | None = None

    def keys(self) -> list[str]:
        return ["trainer", "runtime", "initializer"]

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)
