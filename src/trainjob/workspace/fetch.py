"""``python3 -m trainjob.workspace.fetch URI DEST DIGEST``: the init container of an ``s3://`` workspace.

Gets the archive (:mod:`trainjob.workspace.s3`), checks its digest and unpacks it into ``DEST``
(:mod:`trainjob.workspace.unpack`); one line on success, ``error: ...`` and exit code 1
otherwise. Planned by ``runtime/plugins/workspace.py`` when the TrainJob names a URI.
"""

from __future__ import annotations

import sys
from pathlib import Path

from trainjob.errors import TrainJobError
from trainjob.workspace import s3, unpack


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print("usage: python3 -m trainjob.workspace.fetch URI DEST DIGEST", file=sys.stderr)
        return 2
    uri, dest, digest = args
    try:
        n = unpack.extract(s3.get(uri), Path(dest), digest)
    except TrainJobError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"workspace {digest}: {n} entries unpacked into {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
