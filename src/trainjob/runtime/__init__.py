"""The compiler: TrainJob + runtime -> Plan, through upstream's runtime plugins.

Pure and deterministic: no I/O, no clock, no randomness. Shared by the local executor, the
Kubernetes controller and the admission webhooks.
"""

from trainjob.runtime.compiler import CompileOptions, compile, validate
from trainjob.runtime.plan import Plan

__all__ = ["CompileOptions", "Plan", "compile", "validate"]
