"""Unpack a workspace archive into a directory, in this process: the init container's own code.

:data:`trainjob.workspace.names.UNPACK_SCRIPT` is what a trainer pod's init container runs
(stdlib only, for any image with ``python3``); the local and container backends run the same
function here, so both check the digest and every member's name the same way before anything
is written (no member lands outside ``dest``: absolute names, ``..``, links and devices are
refused). Called by ``local/client/workspaces.py``.
"""

from __future__ import annotations

import functools
import tarfile
from collections.abc import Callable
from pathlib import Path

from trainjob.errors import ConfigError
from trainjob.workspace import names


@functools.cache
def _extract() -> Callable[[bytes, str, str], int]:
    fn = script()["extract"]
    assert callable(fn)
    return fn


@functools.cache
def script() -> dict[str, object]:
    """The names :data:`names.UNPACK_SCRIPT` defines (``extract``, ``read``, ``s3_request``)."""
    scope: dict[str, object] = {"__name__": "trainjob_workspace_unpack"}
    exec(compile(names.UNPACK_SCRIPT, "<workspace-unpack>", "exec"), scope)
    return scope


def extract(data: bytes, dest: Path, digest: str) -> int:
    """Unpack ``data`` (a gzip'd tar whose tar stream has ``digest``) into ``dest``; the number
    of entries. ConfigError (one line) for an archive that is not the one named or holds a
    member that would land outside ``dest``."""
    try:
        return _extract()(data, str(dest), digest)
    except (ValueError, OSError, EOFError, tarfile.TarError) as e:
        raise ConfigError(f"workspace {digest}: cannot unpack: {e}") from None
