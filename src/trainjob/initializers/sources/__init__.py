"""One module per storage scheme, each with ``fetch(cfg)``: ``file``, ``s3``, ``hf``.

``command.fetch`` imports the one a ``STORAGE_URI`` names, so a source's library (boto3,
huggingface_hub) is imported only when that source runs.

This module is the one home of the set of schemes: the SDK's initializer types check a
``storage_uri`` against :data:`PREFIXES`, the initializers pick a source by :func:`scheme`, and
the local backend's preflight and the initializers name the missing extra from :data:`MODULES`.
It imports nothing, so the client reads it without loading a source.
"""

from __future__ import annotations

HF = "hf"
S3 = "s3"
FILE = "file"

MODULES: dict[str, tuple[str, ...]] = {HF: ("huggingface_hub",), S3: ("boto3",), FILE: ()}
"""Each scheme a source fetches -> what that source imports (the ``initializers`` extra)."""

PREFIXES = tuple(f"{s}://" for s in (HF, S3, FILE))
"""``("hf://", "s3://", "file://")``: the URIs the initializers fetch."""


def scheme(uri: str) -> str:
    """``hf``, ``s3`` or ``file`` (a bare absolute path is ``file``); ``""`` for anything else."""
    name, sep, _ = uri.partition("://")
    if not sep:
        return FILE if uri.startswith("/") else ""
    return name if name in MODULES else ""
