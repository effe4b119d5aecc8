"""``trainjob.types``: the path of upstream's ``kubeflow.trainer.types``, so that code ported by
replacing ``kubeflow.trainer`` with ``trainjob`` imports unchanged
(``from trainjob.types.types import TrainJob, Step``; ``from trainjob.types import ...`` too).

The types live in :mod:`trainjob.client.types`; these are the same objects.
"""

from __future__ import annotations

from trainjob.types.types import *  # noqa: F403
from trainjob.types.types import __all__ as __all__
