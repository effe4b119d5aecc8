"""``python -m trainjob.initializers.dataset``: the dataset initializer.

Run as the ``dataset-initializer`` step of a TrainJob (by its container on a cluster, by the
local backend as a process). Fetches ``STORAGE_URI`` into ``OUTPUT_PATH`` (default
``/workspace/dataset``); ``hf://`` repos are dataset repos here.
"""

from __future__ import annotations

import sys

from trainjob.initializers import command, config


def main() -> int:
    """Run the dataset initializer from env; return its exit code."""
    return command.run(config.Kind.DATASET)


if __name__ == "__main__":
    sys.exit(main())
