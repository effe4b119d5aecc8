"""``python -m trainjob.trainers.llm.trl METHOD ...``: the ``trl``-compatible entry point (:mod:`.launch`)."""

from __future__ import annotations

import sys

from trainjob.trainers.llm.trl import launch

if __name__ == "__main__":
    sys.exit(launch.main())
