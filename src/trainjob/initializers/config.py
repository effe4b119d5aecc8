"""The initializers' settings, read from env exactly as upstream's images read them.

Called by ``command.run`` once per process. The SDK and the TrainJob API turn each optional
initializer field into an env var named after it, upper-cased, lists joined with ``,``
(``ignore_patterns`` -> ``IGNORE_PATTERNS="*.bin,*.pt"``); ``STORAGE_URI`` names the source.
``OUTPUT_PATH`` overrides where files go (the local backend points it at the job's workspace).

``InitializerError`` is the one error the sources raise on purpose: its message is a single line
that names the env var at fault and what to change. ``command.run`` prints it as ``error: ...``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from trainjob.errors import TrainJobError

STORAGE_URI_ENV = "STORAGE_URI"
OUTPUT_PATH_ENV = "OUTPUT_PATH"

# Upstream's paths inside the initializer and trainer containers.
WORKSPACE_PATH = "/workspace"
DATASET_PATH = f"{WORKSPACE_PATH}/dataset"
MODEL_PATH = f"{WORKSPACE_PATH}/model"

# Upstream's HuggingFaceModelInitializer / S3ModelInitializer default: weights in formats other
# than safetensors.
MODEL_IGNORE_PATTERNS = ("*.msgpack", "*.h5", "*.bin", "*.pt", "*.pth")

# Env vars whose values are never printed; ``command.run`` masks them in any message too.
SECRET_FIELDS = ("ACCESS_TOKEN", "SECRET_ACCESS_KEY")


class Kind(StrEnum):
    """What an initializer fetches; decides the default output path and ignore patterns."""

    DATASET = "dataset"
    MODEL = "model"


class InitializerError(TrainJobError):
    """A download cannot be done as configured; the message is one line naming the env var to fix."""


@dataclass(frozen=True)
class Config:
    """One initializer run: where from, where to, and the optional fields of every source."""

    kind: Kind
    storage_uri: str
    output_path: str
    ignore_patterns: tuple[str, ...] = ()
    access_token: str | None = None
    endpoint: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    region: str | None = None
    role_arn: str | None = None

    def __repr__(self) -> str:
        # Dataclass reprs would show the secrets; this one says only whether they are set.
        token = "set" if self.access_token else None
        secret = "set" if self.secret_access_key else None
        return (
            f"Config(kind={self.kind.value!r}, storage_uri={self.storage_uri!r}, "
            f"output_path={self.output_path!r}, ignore_patterns={self.ignore_patterns!r}, "
            f"access_token={token!r}, endpoint={self.endpoint!r}, "
            f"access_key_id={self.access_key_id!r}, secret_access_key={secret!r}, "
            f"region={self.region!r}, role_arn={self.role_arn!r})"
        )


def default_output_path(kind: Kind, env: Mapping[str, str]) -> str:
    """``OUTPUT_PATH`` when set, else upstream's ``/workspace/dataset`` or ``/workspace/model``."""
    return env.get(OUTPUT_PATH_ENV) or (DATASET_PATH if kind is Kind.DATASET else MODEL_PATH)


def parse_patterns(value: str) -> tuple[str, ...]:
    """``IGNORE_PATTERNS`` as upstream splits it: on ``,``, items stripped, empty items dropped."""
    return tuple(item.strip() for item in value.split(",") if item.strip())


def from_env(kind: Kind, env: Mapping[str, str] | None = None) -> Config:
    """Read a ``Config`` for ``kind`` from ``env`` (default ``os.environ``).

    An unset or empty optional var is ``None``, as upstream's ``get_config_from_env`` makes it.
    ``IGNORE_PATTERNS`` unset means the kind's default (none for datasets, upstream's list for
    models); set but empty means no patterns.
    """
    env = os.environ if env is None else env
    storage_uri = env.get(STORAGE_URI_ENV, "").strip()
    if not storage_uri:
        raise InitializerError(
            f"{STORAGE_URI_ENV} is not set: set it to the {kind.value} to fetch, "
            "e.g. hf://org/repo, s3://bucket/prefix or file:///path"
        )
    if "IGNORE_PATTERNS" in env:
        patterns = parse_patterns(env["IGNORE_PATTERNS"])
    else:
        patterns = MODEL_IGNORE_PATTERNS if kind is Kind.MODEL else ()

    def optional(name: str) -> str | None:
        return env.get(name) or None

    return Config(
        kind=kind,
        storage_uri=storage_uri,
        output_path=default_output_path(kind, env),
        ignore_patterns=patterns,
        access_token=optional("ACCESS_TOKEN"),
        endpoint=optional("ENDPOINT"),
        access_key_id=optional("ACCESS_KEY_ID"),
        secret_access_key=optional("SECRET_ACCESS_KEY"),
        region=optional("REGION"),
        role_arn=optional("ROLE_ARN"),
    )
