"""``python -m trainjob.initializers.model``: the model initializer.

Run as the ``model-initializer`` step of a TrainJob (by its container on a cluster, by the
local backend as a process). Fetches ``STORAGE_URI`` into ``OUTPUT_PATH`` (default
``/workspace/model``), skipping upstream's default weight formats (``*.bin``, ``*.pt``, ...)
unless ``IGNORE_PATTERNS`` says otherwise.
"""

from __future__ import annotations

import sys

from trainjob.initializers import command, config


def main() -> int:
    """Run the model initializer from env; return its exit code."""
    return command.run(config.Kind.MODEL)


if __name__ == "__main__":
    sys.exit(main())
