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

trainjob is not on PyPI, so the line names what this install came from: the wheel file
(``pip install '/path/dist/trainjob-0.1.0-py3-none-any.whl[llm]'``) or the checkout of an
editable install (``pip install -e '/path/to/trainjob[llm]'``), read from the installed
distribution's ``direct_url.json`` (PEP 610, written by pip and uv); the wheel's file name when
that says nothing.

At the top of the package because it describes the distribution's own extras (pyproject.toml),
and its users include the initializers and trainers, which run in a container and may import no
backend. What each storage scheme needs is :data:`trainjob.initializers.sources.MODULES`.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

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


@functools.cache
def installed_from() -> str:
    """What ``pip install`` takes to add an extra to this install, without the extra: ``-e
    '/checkout`` (editable), ``'/path/trainjob-0.1.0-py3-none-any.whl`` (a wheel) or the wheel's
    file name (unknown). Its quote is left open for :func:`install_target`."""
    try:
        dist = importlib.metadata.distribution("trainjob")
        version, direct = dist.version, json.loads(dist.read_text("direct_url.json") or "{}")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        version, direct = "0.1.0", {}
    parts = urlsplit(str(direct.get("url") or ""))
    path = unquote(parts.path) if parts.scheme == "file" else ""
    if path and (direct.get("dir_info") or {}).get("editable"):
        return f"-e '{path}"
    if path.endswith(".whl"):
        return f"'{path}"
    return f"'trainjob-{version}-py3-none-any.whl"


def install_target(extras: Iterable[str]) -> str:
    """``'/path/trainjob-0.1.0-py3-none-any.whl[llm,torch]'``: this install with ``extras``."""
    return f"{installed_from()}[{','.join(sorted(extras))}]'"


def install_hint(modules: Iterable[str]) -> str:
    """``pip install '/path/trainjob-0.1.0-py3-none-any.whl[initializers]'`` (the form of
    :func:`installed_from`) for ``modules``; ``pip install NAME`` for a module of no extra."""
    extras = sorted({EXTRA_OF[m] for m in modules if m in EXTRA_OF})
    others = sorted(m for m in modules if m not in EXTRA_OF)
    parts = [f"pip install {install_target(extras)}"] if extras else []
    if others:
        parts.append("pip install " + " ".join(others))
    return " and ".join(parts)


def message(what: str, modules: Iterable[str]) -> str | None:
    """``WHAT needs X, which is not installed here: pip install '.../trainjob-...whl[E]'``, or
    None."""
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
