"""Which pip extra of trainjob brings which optional module, and one check that says which to add.

    trainjob[torch]         torch, numpy, mpi4py     real distributed runs (torchrun, mpirun ranks)
    trainjob[initializers]  boto3, huggingface_hub   s3:// and hf:// downloads (file:// needs none)
    trainjob[llm]           transformers, peft,      the built-in LLM trainer (tune run) and its
                            safetensors, pyarrow     demo
    trainjob[dashboard]     starlette, uvicorn       trainjob dashboard

A missing one is found before work starts (the local backend's preflight, the initializers, the
LLM trainer and its demo) and reported as one line naming the extra, instead of a bare
``ModuleNotFoundError`` or a chained traceback. Pure and cheap: ``importlib.util.find_spec``,
no import of the modules themselves. Used by ``local``, ``initializers`` and ``trainers``.

At the top of the package because it describes the distribution's own extras (pyproject.toml),
and its users include the initializers and trainers, which run in a container and may import no
backend. What each storage scheme needs is :data:`trainjob.initializers.sources.MODULES`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

from trainjob.errors import ConfigError

EXTRA_OF = {
    "torch": "torch",
    "numpy": "torch",
    "mpi4py": "torch",
    "boto3": "initializers",
    "huggingface_hub": "initializers",
    "transformers": "llm",
    "peft": "llm",
    "safetensors": "llm",
    "pyarrow": "llm",
    "starlette": "dashboard",
    "uvicorn": "dashboard",
    "trl": "llm",
    "datasets": "llm",
}
"""Module -> the extra that installs it (pyproject.toml's ``[project.optional-dependencies]``)."""

DASHBOARD = ("starlette", "uvicorn")
"""What ``trainjob dashboard`` serves with."""

LLM_TRAINER = ("torch", "transformers", "peft", "safetensors")
"""What ``python -m trainjob.trainers.llm`` imports (pyarrow only for parquet data)."""


class MissingExtraError(ConfigError):
    """Modules a piece of trainjob needs are not installed; the message names the extra."""


def missing(modules: Iterable[str]) -> list[str]:
    """The ``modules`` that cannot be imported here."""
    out = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append(name)
    return out


def install_hint(modules: Iterable[str]) -> str:
    """``pip install 'trainjob[initializers]'`` (or ``'trainjob[torch,llm]'``) for ``modules``."""
    extras = sorted({EXTRA_OF[m] for m in modules if m in EXTRA_OF})
    others = sorted(m for m in modules if m not in EXTRA_OF)
    parts = [f"pip install 'trainjob[{','.join(extras)}]'"] if extras else []
    if others:
        parts.append("pip install " + " ".join(others))
    return " and ".join(parts)


def message(what: str, modules: Iterable[str]) -> str | None:
    """``WHAT needs X, which is not installed here: pip install 'trainjob[E]'``, or None."""
    absent = missing(modules)
    if not absent:
        return None
    names = ", ".join(absent)
    verb = "is" if len(absent) == 1 else "are"
    return f"{what} needs {names}, which {verb} not installed here: {install_hint(absent)}"


def require(what: str, modules: Iterable[str]) -> None:
    """Raise :class:`MissingExtraError` when any of ``modules`` is missing."""
    msg = message(what, modules)
    if msg:
        raise MissingExtraError(msg)
