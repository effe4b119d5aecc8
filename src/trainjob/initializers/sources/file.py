"""The ``file://`` source: copy a local file or directory tree into the output directory.

Called by ``command.fetch`` for ``file:///path`` and for absolute paths. Useful on the local
backend and for volumes already mounted into the initializer's pod. A file lands as
``OUTPUT_PATH/<its name>``; a directory's contents land under ``OUTPUT_PATH`` keeping their
relative paths. Ignore patterns, the resume check (a present file counts when it has the same
bytes, not only the same size) and progress lines are those of ``transfer``.
"""

from __future__ import annotations

import filecmp
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlparse

from trainjob.initializers import config, transfer

log = logging.getLogger(__name__)


def source_path(uri: str) -> Path:
    """The local path a ``file://`` URI or an absolute path names."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return Path(uri)
    if parsed.netloc not in ("", "localhost"):
        raise config.InitializerError(
            f"{config.STORAGE_URI_ENV}: file URI {uri!r} names host {parsed.netloc!r}: "
            "use file:///absolute/path (three slashes) for a path on this machine"
        )
    return Path(unquote(parsed.path))


def list_items(src: Path, patterns: tuple[str, ...], skip: Path) -> list[transfer.Item]:
    """Every regular file under directory ``src`` not ignored, as items relative to ``src``.

    ``skip`` (the output directory, when it lies inside ``src``) is not descended into.
    """
    items: list[transfer.Item] = []

    def unreadable(exc: OSError) -> None:
        # os.walk skips a directory it cannot list unless told otherwise: a silent partial copy.
        raise config.InitializerError(
            f"{config.STORAGE_URI_ENV}: cannot list {exc.filename}: {exc.strerror or exc}: "
            "make it readable by the initializer, or leave it out with IGNORE_PATTERNS"
        )

    for root, dirs, files in os.walk(src, onerror=unreadable):
        here = Path(root)
        # Ignored folders are not even listed, so an unreadable one can be left out.
        dirs[:] = sorted(
            d
            for d in dirs
            if (here / d).resolve() != skip
            and not transfer.is_ignored((here / d).relative_to(src).as_posix() + "/", patterns)
        )
        for name in sorted(files):
            path = here / name
            relpath = path.relative_to(src).as_posix()
            if not path.is_file() or transfer.is_ignored(relpath, patterns):
                continue
            items.append(transfer.Item(relpath, path.stat().st_size))
    return items


def fetch(cfg: config.Config) -> None:
    """Copy ``cfg.storage_uri`` into ``cfg.output_path``, skipping files already there."""
    src = source_path(cfg.storage_uri)
    if not src.is_absolute():
        raise config.InitializerError(
            f"{config.STORAGE_URI_ENV}: {str(src)!r} is not an absolute path: "
            "use file:///absolute/path"
        )
    if not src.exists():
        raise config.InitializerError(
            f"{config.STORAGE_URI_ENV}: {src} does not exist: check the path "
            "(on a cluster, that the volume holding it is mounted into the initializer)"
        )
    dest = Path(cfg.output_path)
    log.info("Downloading %s to %s", cfg.storage_uri, dest)
    if src.is_dir():
        base = src
        items = list_items(src, cfg.ignore_patterns, dest.resolve())
    else:
        base = src.parent
        items = (
            []
            if transfer.is_ignored(src.name, cfg.ignore_patterns)
            else [transfer.Item(src.name, src.stat().st_size)]
        )
    if not items:
        _check_not_empty(src, cfg)

    def same(item: transfer.Item, path: Path) -> bool:  # a present copy: byte for byte
        return filecmp.cmp(base / item.relpath, path, shallow=False)

    todo, present = transfer.split_present(items, dest, same)
    progress = transfer.Progress(todo, present)
    for item in todo:
        origin = base / item.relpath

        def copy(tmp: Path, origin: Path = origin) -> None:
            shutil.copyfile(origin, tmp)
            shutil.copystat(origin, tmp)

        transfer.write_atomically(dest / item.relpath, copy)
        progress.file_done(item.size)
    progress.finish()


def _check_not_empty(src: Path, cfg: config.Config) -> None:
    """No file to fetch: an error saying whether the patterns left all out or there is none."""
    listed = 1 if src.is_file() else sum(1 for p in _walk_quietly(src) if p.is_file())
    if listed and cfg.ignore_patterns:
        raise config.InitializerError(
            transfer.all_ignored(cfg.storage_uri, listed, cfg.ignore_patterns)
        )
    raise config.InitializerError(
        f"{config.STORAGE_URI_ENV}: {src} has no files: nothing to download; check the path"
    )


def _walk_quietly(src: Path) -> Iterator[Path]:
    """Every path under ``src``, skipping what cannot be listed (only counted, never copied)."""
    for root, dirs, files in os.walk(src):
        for name in (*dirs, *files):
            yield Path(root) / name
