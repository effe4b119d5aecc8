"""``python -m trainjob.cli``: the same as the ``trainjob`` command."""

import sys

from trainjob.cli import main

sys.exit(main())
