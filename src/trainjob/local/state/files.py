"""Files under ``$TRAINJOB_HOME``: private to their user, and never reached through a link.

The home holds every job's env, logs and Secrets (the MPI private key), so it is ``0700`` and its
files ``0600`` — tightened each time they are opened, not only when created, since a home made
by hand (or by an older trainjob) with ``0755`` would show them to every local user. Nothing
inside the home is reached through a symbolic link: a link planted at ``jobs/default`` would
otherwise make ``trainjob delete`` remove the directory it points to. The home itself may be a
link (``~/.trainjob -> /data/trainjob`` is a choice the user made). Used by the store, the
executor, the supervisor, pods and volumes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from trainjob.errors import ConfigError

DIR_MODE = 0o700
FILE_MODE = 0o600


class UnsafePathError(ConfigError):
    """A path inside the home is a symbolic link (or not what it should be): never followed."""


def _link_error(path: Path, home: Path) -> UnsafePathError:
    return UnsafePathError(
        f"refusing to use {path}: it is a symbolic link, and trainjob never follows links inside "
        f"TRAINJOB_HOME ({home}); remove the link (rm {path})"
    )


def _tighten(path: Path, st: os.stat_result, mode: int) -> None:
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077:
        with contextlib.suppress(OSError):  # a read-only home: reads still work
            os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077 | (mode & 0o700))


def ensure_home(home: Path) -> None:
    """The home exists as a directory of this user's, mode 0700 (created, or tightened)."""
    try:
        st = os.stat(home)
    except FileNotFoundError:
        try:
            os.makedirs(home, mode=DIR_MODE)
        except FileExistsError:
            st = os.stat(home)
        except NotADirectoryError:
            raise ConfigError(
                f"cannot create TRAINJOB_HOME {home}: a part of that path is a file; set "
                "TRAINJOB_HOME to a directory"
            ) from None
        except OSError as e:
            raise ConfigError(
                f"cannot create TRAINJOB_HOME {home}: {e.strerror}; set TRAINJOB_HOME to a "
                "directory you can write"
            ) from None
        else:
            return
    except NotADirectoryError:
        raise ConfigError(
            f"TRAINJOB_HOME {home} is not a directory (a part of the path is a file); set "
            "TRAINJOB_HOME to a directory"
        ) from None
    except OSError as e:
        raise ConfigError(f"cannot use TRAINJOB_HOME {home}: {e.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(
            f"TRAINJOB_HOME {home} is a file, not a directory: move it away, or set "
            "TRAINJOB_HOME to a directory"
        )
    if st.st_uid != os.geteuid() and os.geteuid() != 0:
        raise ConfigError(
            f"TRAINJOB_HOME {home} belongs to another user (uid {st.st_uid}): set TRAINJOB_HOME "
            "to a directory of your own"
        )
    _tighten(home, st, DIR_MODE)


def private_dirs(home: Path, path: Path) -> Path:
    """``mkdir -p path`` below ``home``: each part a real directory (never a link), 0700."""
    cur = home
    for part in path.relative_to(home).parts:
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            try:
                os.mkdir(cur, DIR_MODE)
                continue
            except FileExistsError:
                st = os.lstat(cur)
        if stat.S_ISLNK(st.st_mode):
            raise _link_error(cur, home)
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafePathError(f"refusing to use {cur}: it is not a directory; remove it")
        _tighten(cur, st, DIR_MODE)
    return path


def open_private(path: Path, *, append: bool = True, truncate: bool = False) -> int:
    """A file descriptor of ``path`` for writing (created 0600, tightened to owner-only when
    it exists), refusing a symbolic link in its place."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    flags |= os.O_APPEND if append else 0
    flags |= os.O_TRUNC if truncate else 0
    try:
        fd = os.open(path, flags, FILE_MODE)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafePathError(
                f"refusing to write {path}: it is a symbolic link (trainjob never follows links "
                "inside its home); remove it"
            ) from None
        raise
    st = os.fstat(fd)
    if stat.S_IMODE(st.st_mode) & 0o077:
        with contextlib.suppress(OSError):
            os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o700)
    return fd


def write_private(path: Path, data: bytes, mode: int = FILE_MODE) -> None:
    """Write ``path`` whole (never through a link), with ``mode``'s owner bits only: a Secret's
    ``0640`` or a ConfigMap's ``0644`` would show the file to this machine's other users, who
    are not the pod's group."""
    fd = open_private(path, append=False, truncate=True)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        os.fchmod(f.fileno(), (mode & 0o700) | 0o400)


def tighten_file(path: Path) -> None:
    """An existing file (the store's) owner-only; a link in its place is refused."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePathError(
            f"refusing to use {path}: it is a symbolic link (trainjob never follows links "
            "inside its home); remove it"
        )
    _tighten(path, st, FILE_MODE)


def remove_tree(home: Path, path: Path) -> None:
    """``rm -r path`` below ``home``, never through a link: a link on the way is refused (an
    UnsafePathError), a link at ``path`` is removed itself, and links inside are removed, not
    followed (``shutil.rmtree`` works by file descriptors)."""
    cur = home
    parts = path.relative_to(home).parts
    for i, part in enumerate(parts):
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(st.st_mode):
            if i == len(parts) - 1:
                os.unlink(cur)
                return
            raise _link_error(cur, home)
    import shutil  # here: its compression modules load with it

    shutil.rmtree(path, ignore_errors=True)
