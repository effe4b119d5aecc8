"""Pack a folder into a workspace snapshot: a deterministic archive named by its digest.

What goes in: every regular file under the folder, less what its ``.gitignore`` files (each
applied below its own directory, git's rules through ``pathspec``), the exclude list and
:data:`ALWAYS_EXCLUDED` leave out. A symlink is followed only while it stays inside the folder
(its target is packed as a file or directory of its own; a link out of the folder is an error,
never followed); a directory is entered once per path (no loops). Sockets, pipes and devices are
skipped. The sum of the files' sizes may not pass the limit (:data:`names.DEFAULT_LIMIT`,
``$TRAINJOB_WORKSPACE_LIMIT``): the error names the size, the limit and the largest entries.

The archive is a tar stream of files and directories only, sorted by path, with zero times,
owners and normalised modes (0644, or 0755 when executable), so the same content gives the same
bytes on any machine; its digest is the SHA-256 of that stream (``sha256:<hex>``); the stream is
gzip'd with a zero timestamp. Every problem is one line (:class:`trainjob.errors.ConfigError`)
naming the path. File contents are never logged. Called by the CLI's ``run --workdir`` and the
SDK's :class:`trainjob.client.workspace.Workspace` option.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from trainjob.errors import ConfigError
from trainjob.workspace import names

ALWAYS_EXCLUDED = (".git/", "__pycache__/", "*.pyc")
"""Left out of every snapshot: a repository's history and Python's caches."""


@dataclass(frozen=True)
class Snapshot:
    """A packed folder: ``archive`` (gzip'd tar) whose tar stream's digest is ``digest``."""

    digest: str
    archive: bytes = field(repr=False)
    source: str
    size: int
    """The sum of the files' sizes (what the limit counts)."""
    files: int

    def annotations(self, uri: str | None = None) -> dict[str, str]:
        """The TrainJob annotations that record this snapshot (and where it is stored)."""
        out = {names.DIGEST: self.digest, names.SOURCE: self.source}
        if uri:
            out[names.URI] = uri
        return out


def human(n: int) -> str:
    """Bytes as ``12.3 MiB``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def limit_from(env: Mapping[str, str] | None = None) -> int:
    """The size limit: ``$TRAINJOB_WORKSPACE_LIMIT`` (bytes, or a quantity such as ``500Mi``),
    else :data:`names.DEFAULT_LIMIT`."""
    value = (os.environ if env is None else env).get(names.ENV_LIMIT, "").strip()
    if not value:
        return names.DEFAULT_LIMIT
    return parse_size(value, names.ENV_LIMIT)


def parse_size(value: str, what: str) -> int:
    from trainjob.api import quantity

    try:
        n = int(quantity.parse(value).amount)
    except (ValueError, TypeError):
        n = -1
    if n <= 0:
        raise ConfigError(f"{what}: Invalid value: {value!r}: must be a size such as 200Mi")
    return n


@dataclass
class _Entry:
    rel: str  # posix path inside the folder
    path: str  # real path on this host
    is_dir: bool
    size: int
    executable: bool


class _Walker:
    def __init__(self, root: Path, exclude: Sequence[str], label: str) -> None:
        self.root = root
        self.label = label
        self.specs: list[tuple[str, pathspec.GitIgnoreSpec]] = [
            ("", pathspec.GitIgnoreSpec.from_lines([*ALWAYS_EXCLUDED, *exclude]))
        ]

    def fail(self, rel: str, what: str) -> ConfigError:
        return ConfigError(f"workspace {self.label}: {rel}: {what}")

    def ignored(
        self, rel: str, is_dir: bool, specs: list[tuple[str, pathspec.GitIgnoreSpec]]
    ) -> bool:
        for base, spec in specs:
            sub = rel[len(base) + 1 :] if base else rel
            if spec.match_file(sub + "/" if is_dir else sub):
                return True
        return False

    def gitignore(self, real_dir: str, rel_dir: str) -> pathspec.GitIgnoreSpec | None:
        path = os.path.join(real_dir, ".gitignore")
        if not os.path.isfile(path):
            return None
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return pathspec.GitIgnoreSpec.from_lines(f.read().splitlines())
        except OSError as e:
            raise self.fail(f"{rel_dir}/.gitignore" if rel_dir else ".gitignore", _why(e)) from None

    def walk(
        self,
        real_dir: str,
        rel_dir: str,
        specs: list[tuple[str, pathspec.GitIgnoreSpec]],
        seen: frozenset[str],
    ) -> Iterator[_Entry]:
        own = self.gitignore(real_dir, rel_dir)
        if own is not None:
            specs = [*specs, (rel_dir, own)]
        try:
            with os.scandir(real_dir) as it:
                listing = sorted(it, key=lambda d: d.name)
        except OSError as e:
            raise self.fail(rel_dir or ".", f"cannot list the folder: {_why(e)}") from None
        for d in listing:
            rel = f"{rel_dir}/{d.name}" if rel_dir else d.name
            real = d.path
            if d.is_symlink():
                if self.ignored(rel, False, specs) or self.ignored(rel, True, specs):
                    continue  # excluded: never followed
                real = os.path.realpath(d.path)
                if not _inside(real, str(self.root)):
                    raise self.fail(
                        rel,
                        f"a symlink out of the folder (to {os.readlink(d.path)}): remove it, "
                        "or exclude it (.gitignore, --workdir-exclude)",
                    )
            try:
                st = os.stat(real)
            except FileNotFoundError:
                raise self.fail(rel, "a broken symlink: remove it or exclude it") from None
            except OSError as e:
                raise self.fail(rel, f"cannot read it: {_why(e)}") from None
            is_dir = stat.S_ISDIR(st.st_mode)
            if self.ignored(rel, is_dir, specs):
                continue
            if is_dir:
                if real in seen:  # a link back up the tree
                    continue
                yield _Entry(rel, real, True, 0, False)
                yield from self.walk(real, rel, specs, seen | {real})
            elif stat.S_ISREG(st.st_mode):
                yield _Entry(rel, real, False, st.st_size, bool(st.st_mode & 0o111))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _why(e: OSError) -> str:
    return e.strerror or str(e)


def _largest(entries: list[_Entry], n: int = 3) -> str:
    top: dict[str, int] = {}
    for e in entries:
        if not e.is_dir:
            head = e.rel.split("/", 1)[0]
            top[head] = top.get(head, 0) + e.size
    ranked = sorted(top.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return ", ".join(f"{name} {human(size)}" for name, size in ranked)


def pack(
    folder: str | os.PathLike[str],
    exclude: Sequence[str] = (),
    max_size: int | None = None,
) -> Snapshot:
    """Pack ``folder`` (see the module docstring); ConfigError, one line, for a folder that is
    missing, too large, or holds a symlink out of it or a file that cannot be read."""
    label = str(folder)
    root_path = Path(folder).expanduser()
    if not root_path.exists():
        raise ConfigError(f"workspace {label}: no such folder")
    if not root_path.is_dir():
        raise ConfigError(f"workspace {label}: not a folder")
    root = Path(os.path.realpath(root_path))
    limit = limit_from() if max_size is None else max_size
    walker = _Walker(root, exclude, label)
    entries: list[_Entry] = []
    total = 0
    walk = walker.walk(str(root), "", [*walker.specs], frozenset({str(root)}))
    for entry in walk:
        entries.append(entry)
        total += entry.size
        if total > limit:
            for more in walk:  # the whole size, for the message (sizes only: nothing is read)
                entries.append(more)
                total += more.size
            raise ConfigError(
                f"workspace {label}: {human(total)} is over the limit of {human(limit)} "
                f"(largest: {_largest(entries)}): exclude what the job does not need "
                f"(.gitignore, --workdir-exclude) or raise the limit ({names.ENV_LIMIT})"
            )
    stream = io.BytesIO()
    with tarfile.open(fileobj=stream, mode="w:", format=tarfile.PAX_FORMAT) as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry.rel)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if entry.is_dir:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
                continue
            try:
                with open(entry.path, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise walker.fail(entry.rel, f"cannot read it: {_why(e)}") from None
            info.size = len(data)
            info.mode = 0o755 if entry.executable else 0o644
            tar.addfile(info, io.BytesIO(data))
    raw = stream.getvalue()
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    return Snapshot(
        digest=digest,
        archive=gzip.compress(raw, compresslevel=6, mtime=0),
        source=str(root),
        size=total,
        files=sum(1 for e in entries if not e.is_dir),
    )
