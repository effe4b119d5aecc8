"""The initializers' entry point: read env, pick a source by URI scheme, turn errors into one line.

Called by ``dataset.main`` and ``model.main`` (``python -m trainjob.initializers.dataset|model``).
Progress goes to stdout as plain lines; an ``InitializerError`` (or a local I/O error) goes to
stderr as ``error: ...`` with exit code 1 and no traceback, with every secret env value masked.
Sources are imported only when their scheme is used, so a ``file://`` run needs neither boto3
nor huggingface_hub.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO
from urllib.parse import urlparse

from trainjob import extras
from trainjob.initializers import config, sources, transfer

log = logging.getLogger(__name__)


def fetch(cfg: config.Config) -> None:
    """Fetch ``cfg.storage_uri`` into ``cfg.output_path`` with the source its scheme names."""
    uri = cfg.storage_uri
    scheme = urlparse(uri).scheme
    missing = extras.message(f"downloading from {scheme}://", sources.MODULES.get(scheme, ()))
    if missing:
        raise config.InitializerError(f"{config.STORAGE_URI_ENV}: {missing}")
    if scheme == sources.FILE or (not scheme and uri.startswith("/")):
        from trainjob.initializers.sources import file

        file.fetch(cfg)
    elif scheme == sources.S3:
        from trainjob.initializers.sources import s3

        s3.fetch(cfg)
    elif scheme == sources.HF:
        from trainjob.initializers.sources import hf

        hf.fetch(cfg)
    else:
        shown = f"{scheme}://" if scheme else "a relative path"
        raise config.InitializerError(
            f"{config.STORAGE_URI_ENV}: unsupported {cfg.kind.value} storage URI {uri!r} "
            f"({shown}): use hf://org/repo, s3://bucket/prefix, file:///path or an absolute path"
        )


def explain_os_error(exc: OSError, cfg: config.Config | None) -> str:
    """A local I/O error as one line naming ``OUTPUT_PATH`` (writing) or ``STORAGE_URI`` (reading)."""
    reason = exc.strerror or str(exc)
    name = str(exc.filename) if exc.filename else ""
    if cfg is None or not name:
        return f"{reason}: {name}" if name else reason
    name = name.removesuffix(transfer.PART_SUFFIX)
    out = os.path.abspath(cfg.output_path)
    target = os.path.abspath(name)
    if target == out or target.startswith(out.rstrip(os.sep) + os.sep) or out.startswith(target):
        return (
            f"{config.OUTPUT_PATH_ENV}: cannot write {name}: {reason}: "
            f"set {config.OUTPUT_PATH_ENV} to a writable directory"
        )
    return (
        f"{config.STORAGE_URI_ENV}: cannot read {name}: {reason}: "
        "make it readable by the initializer, or leave it out with IGNORE_PATTERNS"
    )


def mask(text: str, env: Mapping[str, str]) -> str:
    """``text`` with the value of every secret env var replaced by ``***``."""
    for name in config.SECRET_FIELDS:
        value = env.get(name)
        if value:
            text = text.replace(value, "***")
    return text


def run(
    kind: config.Kind, env: Mapping[str, str] | None = None, stderr: TextIO | None = None
) -> int:
    """Run one initializer; return the process exit code (0 done, 1 failed)."""
    env = os.environ if env is None else env
    stderr = sys.stderr if stderr is None else stderr
    logging.basicConfig(stream=sys.stdout, format="%(message)s", level=logging.INFO)
    # huggingface_hub and boto3 log at INFO/DEBUG through the root logger; keep only ours.
    logging.getLogger("trainjob").setLevel(logging.INFO)
    for noisy in ("botocore", "boto3", "s3transfer", "urllib3", "huggingface_hub", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    cfg: config.Config | None = None
    try:
        cfg = config.from_env(kind, env)
        Path(cfg.output_path).mkdir(parents=True, exist_ok=True)
        fetch(cfg)
    except config.InitializerError as exc:
        print(f"error: {mask(str(exc), env)}", file=stderr)
        return 1
    except OSError as exc:
        print(f"error: {mask(explain_os_error(exc, cfg), env)}", file=stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted; run again to resume", file=stderr)
        return 1
    return 0
