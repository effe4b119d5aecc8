"""``python -m trainjob.initializers``: the dataset or the model initializer, whichever this is.

One image (``localhost/trainjob/initializer``) stands in for both of upstream's
(``dataset-initializer``, ``model-initializer``), whose containers have no command: which one runs
is the first argument (``dataset`` or ``model``), else ``TRAINJOB_INITIALIZER``, else the step the
pod belongs to, read from its hostname (``<jobset>-dataset-initializer-0-0`` on a cluster's JobSet
and on the container backend alike).
"""

from __future__ import annotations

import os
import sys

from trainjob.initializers import command, config

KINDS = {"dataset": config.Kind.DATASET, "model": config.Kind.MODEL}


def which(argv: list[str], env: dict[str, str]) -> config.Kind | None:
    """The initializer to run, or None when nothing says."""
    if argv:
        return KINDS.get(argv[0])
    chosen = env.get("TRAINJOB_INITIALIZER", "")
    if chosen:
        return KINDS.get(chosen)
    host = env.get("HOSTNAME", "")
    for name, kind in KINDS.items():
        if f"-{name}-initializer-" in host:
            return kind
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    kind = which(args, dict(os.environ))
    if kind is None:
        print(
            "error: which initializer? give dataset or model (python -m trainjob.initializers "
            "dataset), or set TRAINJOB_INITIALIZER=dataset|model",
            file=sys.stderr,
        )
        return 2
    return command.run(kind)


if __name__ == "__main__":
    sys.exit(main())
