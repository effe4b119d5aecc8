"""``python -m trainjob``: the same as the ``trainjob`` command."""

import sys

from trainjob.cli import main

sys.exit(main())
