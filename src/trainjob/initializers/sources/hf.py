"""The ``hf://org/repo[/path]`` source: a Hugging Face Hub repo, via ``snapshot_download``.

Called by ``command.fetch``. The dataset initializer fetches dataset repos, the model
initializer model repos, as upstream's images do; the token comes from ``ACCESS_TOKEN`` and is
passed to the call (never written to disk, unlike ``huggingface_hub.login``). ``HF_ENDPOINT``
(a mirror) and the other ``HF_*`` env vars of huggingface_hub apply as usual.

Upstream's choices kept here: the model initializer fetches only ``*.json``, ``*.safetensors``,
``*.model`` and ``*.txt`` files, minus ``IGNORE_PATTERNS`` (by default the other weight
formats). One extension: ``hf://org/repo/path`` fetches only ``path`` (a file, or a folder's
contents) where upstream fetches the whole repo; the files land at the same place,
``OUTPUT_PATH/path``, which is where the torchtune trainer's ``dataset.data_dir|data_files``
point. Hub errors become one-line ``InitializerError``s naming the env var to fix.

A file already in ``OUTPUT_PATH`` counts only with the Hub's hash of it (the SHA-256 of an LFS
file, the git blob id of another): huggingface_hub trusts its download metadata when the file's
time has not moved, so a file of the right size but other bytes would be kept; such a file is
removed first (:func:`verify_present`) and fetched again. A partial download is resumed by
huggingface_hub itself (its ``.incomplete`` files, with an HTTP range).
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from trainjob.initializers import config, transfer

log = logging.getLogger(__name__)

# Upstream's model initializer fetches these file types only.
MODEL_ALLOW_PATTERNS = ("*.json", "*.safetensors", "*.model", "*.txt")

# The HTTP clients huggingface_hub versions use; their errors mean the Hub was not reached.
HTTP_LIBRARIES = ("httpx", "httpx2", "httpcore", "requests", "urllib3")

_Error = config.InitializerError


@dataclass(frozen=True)
class Request:
    """The arguments of one ``snapshot_download`` call, derived from a ``Config``."""

    repo_id: str
    repo_type: str
    local_dir: str
    allow_patterns: tuple[str, ...] | None
    ignore_patterns: tuple[str, ...] | None
    token: str | None


def parse_uri(uri: str) -> tuple[str, str]:
    """``hf://org/repo[/path]`` as (``org/repo``, ``path`` or ``""``); ``hf://repo`` (a repo with
    no owner, e.g. a canonical dataset name the Hub still serves) as (``repo``, ``""``): the SDK
    accepts it, as upstream's does (whose initializer then fails on it with an IndexError)."""
    parsed = urlparse(uri)
    parts = [part for part in parsed.path.split("/") if part]
    if not parsed.netloc:
        raise _Error(
            f"{config.STORAGE_URI_ENV}: {uri!r} names no repo: use hf://org/repo or hf://org/repo/path"
        )
    if not parts:
        return parsed.netloc, ""
    if any(part in (".", "..") for part in parts):
        raise _Error(
            f"{config.STORAGE_URI_ENV}: {uri!r} has a '.' or '..' path segment: "
            "name the file or folder inside the repo, e.g. hf://org/repo/data"
        )
    return f"{parsed.netloc}/{parts[0]}", "/".join(parts[1:])


def request(cfg: config.Config) -> Request:
    """The ``snapshot_download`` arguments for ``cfg``."""
    repo_id, path = parse_uri(cfg.storage_uri)
    allow: tuple[str, ...] | None = None
    if cfg.kind is config.Kind.MODEL:
        allow = MODEL_ALLOW_PATTERNS
    if path:
        # A file itself, or everything under a folder; for models, of the allowed types only.
        allow = (path, f"{path}/*") if allow is None else tuple(f"{path}/{p}" for p in allow)
    return Request(
        repo_id=repo_id,
        repo_type="dataset" if cfg.kind is config.Kind.DATASET else "model",
        local_dir=cfg.output_path,
        allow_patterns=allow,
        ignore_patterns=cfg.ignore_patterns or None,
        token=cfg.access_token,
    )


def _no_files_matched(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("No files matched")


def snapshot_download(req: Request) -> None:
    """Call ``huggingface_hub.snapshot_download`` for ``req``, with its progress bars off."""
    hub: Any = importlib.import_module("huggingface_hub")
    importlib.import_module("huggingface_hub.utils").disable_progress_bars()
    # fetch() says "nothing downloaded", with the setting to change, in the one error line.
    logging.getLogger("huggingface_hub._snapshot_download").addFilter(_no_files_matched)
    # First ask for the repo: snapshot_download, when the Hub answers "not found" (or cannot be
    # reached) and local_dir exists, returns local_dir as it is instead of raising.
    hub.HfApi().repo_info(repo_id=req.repo_id, repo_type=req.repo_type, token=req.token)
    verify_present(hub, req)
    hub.snapshot_download(
        repo_id=req.repo_id,
        repo_type=req.repo_type,
        local_dir=req.local_dir,
        allow_patterns=list(req.allow_patterns) if req.allow_patterns else None,
        ignore_patterns=list(req.ignore_patterns) if req.ignore_patterns else None,
        token=req.token,
    )


def _digest(path: Path, algorithm: str, prefix: bytes = b"") -> str:
    digest = hashlib.new(algorithm, prefix, usedforsecurity=False)
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def git_blob_id(path: Path) -> str:
    """The git object id of a file's content, as the Hub gives it for files not in LFS."""
    return _digest(path, "sha1", b"blob %d\0" % path.stat().st_size)


def verify_present(hub: Any, req: Request) -> None:
    """Remove every requested file already in ``req.local_dir`` whose bytes are not the Hub's
    (size, then SHA-256 for LFS files or the git blob id), with its download metadata, so that
    ``snapshot_download`` fetches it again instead of trusting it."""
    root = Path(req.local_dir)
    if not root.is_dir():
        return
    api = hub.HfApi()
    entries = api.list_repo_tree(
        req.repo_id, repo_type=req.repo_type, recursive=True, token=req.token
    )
    files = [e for e in entries if hasattr(e, "blob_id")]
    utils: Any = importlib.import_module("huggingface_hub.utils")
    wanted = utils.filter_repo_objects(
        files,
        allow_patterns=list(req.allow_patterns) if req.allow_patterns else None,
        ignore_patterns=list(req.ignore_patterns) if req.ignore_patterns else None,
        key=lambda e: e.path,
    )
    folder: Any = importlib.import_module("huggingface_hub._local_folder")
    for entry in wanted:
        path = root / entry.path
        if not transfer.is_safe(entry.path) or not path.is_file():
            continue
        lfs = getattr(entry, "lfs", None)
        same = path.stat().st_size == entry.size and (
            _digest(path, "sha256") == lfs.sha256 if lfs else git_blob_id(path) == entry.blob_id
        )
        if same:
            continue
        log.info("%s: present with other content than the Hub's: downloading it again", entry.path)
        path.unlink()
        metadata = folder.get_local_download_paths(root, entry.path).metadata_path
        Path(metadata).unlink(missing_ok=True)


def explain(exc: Exception, req: Request, uri: str) -> _Error | None:
    """A one-line ``InitializerError`` for a huggingface_hub error, or None if not one of its."""
    errors: Any = importlib.import_module("huggingface_hub.errors")
    kind = req.repo_type
    if isinstance(exc, errors.GatedRepoError):
        return _Error(
            f"ACCESS_TOKEN: {kind} repo {req.repo_id!r} is gated: accept its terms on the Hub, "
            "then set ACCESS_TOKEN to a token of that account"
        )
    if isinstance(exc, errors.RepositoryNotFoundError):
        hint = (
            "check the repo id in STORAGE_URI, or check ACCESS_TOKEN"
            if req.token
            else ("check the repo id in STORAGE_URI; if the repo is private, set ACCESS_TOKEN")
        )
        return _Error(f"{config.STORAGE_URI_ENV}: {kind} repo {req.repo_id!r} not found: {hint}")
    if isinstance(exc, errors.RevisionNotFoundError | errors.EntryNotFoundError):
        return _Error(f"{config.STORAGE_URI_ENV}: {uri!r} not found in the repo: check the path")
    if isinstance(exc, errors.HfHubHTTPError):
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status == 401:
            return _Error("ACCESS_TOKEN: the Hub rejected the token: set a valid ACCESS_TOKEN")
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return _Error(f"Hugging Face Hub request for {req.repo_id!r} failed: {first}")
    if isinstance(exc, errors.LocalEntryNotFoundError):
        endpoint = importlib.import_module("huggingface_hub.constants").ENDPOINT
        return _Error(
            f"cannot reach the Hugging Face Hub at {endpoint}: check the network, "
            "or set HF_ENDPOINT to a reachable mirror"
        )
    if type(exc).__module__.split(".")[0] in HTTP_LIBRARIES:
        endpoint = importlib.import_module("huggingface_hub.constants").ENDPOINT
        return _Error(
            f"cannot reach the Hugging Face Hub at {endpoint} ({type(exc).__name__}): "
            "check the network, or set HF_ENDPOINT to a reachable mirror"
        )
    if isinstance(exc, errors.HFValidationError):
        return _Error(f"{config.STORAGE_URI_ENV}: {uri!r} is not a valid repo id: {exc}")
    return None


def count_files(root: Path, partial: bool = False) -> tuple[int, int]:
    """(files, bytes) under ``root``, leaving out huggingface_hub's ``.cache`` folder.

    With ``partial``, bytes of the ``.incomplete`` files huggingface_hub is writing there count too
    (not as files): the progress of a download still running.
    """
    files = size = 0
    for path in root.rglob("*"):
        try:
            if not path.is_file():
                continue
            in_cache = ".cache" in path.relative_to(root).parts
            if not in_cache:
                files += 1
            if not in_cache or (partial and path.name.endswith(".incomplete")):
                size += path.stat().st_size
        except OSError:  # renamed or removed by the download meanwhile
            continue
    return files, size


PROGRESS_INTERVAL = 10.0
"""Seconds between two progress lines while huggingface_hub downloads (its bars are off)."""


def watch(root: Path, interval: float, done: threading.Event) -> None:
    """Log ``N files, X MiB so far`` every ``interval`` seconds until ``done`` is set."""
    while not done.wait(interval):
        files, size = count_files(root, partial=True)
        log.info("%d files, %s so far", files, transfer.mib(size))


def nothing_matched(req: Request, uri: str) -> str:
    """The error for a download that fetched no file: which patterns left everything out."""
    kept = f"only {', '.join(req.allow_patterns)} are fetched" if req.allow_patterns else ""
    dropped = f"IGNORE_PATTERNS={','.join(req.ignore_patterns)!r}" if req.ignore_patterns else ""
    why = " and ".join(x for x in (kept, dropped) if x) or "the repo has no files"
    fix = "narrow IGNORE_PATTERNS" if req.ignore_patterns else "check the path"
    return f"nothing downloaded from {uri}: {why}; {fix}"


def fetch(
    cfg: config.Config,
    download: Callable[[Request], None] = snapshot_download,
    interval: float = PROGRESS_INTERVAL,
) -> None:
    """Download ``cfg.storage_uri`` into ``cfg.output_path`` with ``download`` (the Hub's)."""
    req = request(cfg)
    log.info("Downloading %s to %s", cfg.storage_uri, cfg.output_path)
    start = time.monotonic()
    done = threading.Event()
    watcher = threading.Thread(
        target=watch, args=(Path(cfg.output_path), interval, done), name="hf-progress", daemon=True
    )
    watcher.start()
    try:
        download(req)
    except Exception as exc:
        error = explain(exc, req, cfg.storage_uri)
        if error is None:
            raise
        raise error from None
    finally:
        done.set()
        watcher.join()
    files, size = count_files(Path(cfg.output_path))
    if files == 0:
        raise _Error(nothing_matched(req, cfg.storage_uri))
    log.info(
        "Downloaded %d files (%s) in %.1f s", files, transfer.mib(size), time.monotonic() - start
    )
