"""``trainjob.options.common``: upstream's ``kubeflow.trainer.options.common`` (``Name``)."""

from __future__ import annotations

from trainjob.client.options import Name

__all__ = ["Name"]
