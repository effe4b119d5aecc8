"""The SDK's initializers: the dataset and model downloads that run before the trainer.

``HuggingFace*``, ``S3*`` and ``DataCacheInitializer``, each checking its ``storage_uri`` when
made (a wrong scheme is a ValueError naming the right one), and ``Initializer`` that holds one of
each. The names, fields and defaults of upstream ``kubeflow.trainer``. Exported by
:mod:`trainjob.client.types`; no Kubernetes or torch import.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from urllib.parse import urlparse

from trainjob.client import constants
from trainjob.initializers import sources


@dataclass
class BaseInitializer(abc.ABC):
    """Base class of the dataset and model initializers."""

    storage_uri: str


def _require_prefix(uri: str, prefix: str) -> None:
    if not isinstance(uri, str) or not uri.startswith(prefix):
        raise ValueError(f"storage_uri must start with '{prefix}', got {uri}")


STORAGE_SCHEMES = sources.PREFIXES
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
