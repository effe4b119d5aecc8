"""The compiler: TrainJob + runtime -> Plan, through upstream's runtime plugins.

Pure and deterministic: no I/O, no clock, no randomness. Shared by the local executor, the
Kubernetes controller and the admission webhooks.

Names are imported on first use, so that ``trainjob.runtime.plan`` (plain dicts) loads without
the API models (the local supervisor starts faster).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainjob import lazy

if TYPE_CHECKING:
    from trainjob.runtime.compileoptions import CompileOptions
    from trainjob.runtime.compiler import compile, validate
    from trainjob.runtime.plan import Plan

_EXPORTS = {
    "CompileOptions": "trainjob.runtime.compileoptions",
    "compile": "trainjob.runtime.compiler",
    "validate": "trainjob.runtime.compiler",
    "Plan": "trainjob.runtime.plan",
}

__all__ = ["CompileOptions", "Plan", "compile", "validate"]


__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS)
