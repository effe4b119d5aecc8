"""``python -m trainjob.trainers.llm run ...``: the ``tune``-compatible entry point (see :mod:`.launch`)."""

from __future__ import annotations

import sys

from trainjob.trainers.llm import launch

if __name__ == "__main__":
    sys.exit(launch.main())
