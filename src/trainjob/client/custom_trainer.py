"""A CustomTrainer or CustomTrainerContainer -> ``spec.trainer``, as upstream's SDK builds it.

A CustomTrainer's function becomes ``spec.trainer.command``: a ``bash -c`` script that writes the
function to a file and runs it with ``torchrun``, ``mpirun ... python`` or ``python``, after an
optional ``pip install`` (or, on the local backend, an install into a virtual environment of
the job). Every user string that reaches a shell is quoted with ``shlex.quote``. Used by
:mod:`trainjob.client.builder`.
"""

from __future__ import annotations

import os
import shlex
import textwrap
from collections.abc import Sequence
from typing import Any

from trainjob.client import constants as c
from trainjob.client import function, runtimes, types
from trainjob.client.trainer_fields import env_list, node_fields
from trainjob.local.state import home as homes

_PIP = "PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_BREAK_SYSTEM_PACKAGES=1 python -m pip install"
_PIP_SCRIPT = textwrap.dedent(
    """
    if ! [ -x "$(command -v pip)" ]; then
        python -m ensurepip || python -m ensurepip --user || apt-get install python-pip
    fi

    """
) + textwrap.dedent(
    f"""
    PACKAGES=(__PACKAGES__)
    PIP_OPTS=(__OPTS__)
    LOG_FILE=__LOG_FILE__
    rm -f "$LOG_FILE"

    if {_PIP} --quiet \\
        --no-warn-script-location "${{PIP_OPTS[@]}}" --user "${{PACKAGES[@]}}" >"$LOG_FILE" 2>&1; then
        echo "Successfully installed Python packages (user): ${{PACKAGES[*]}}"
    elif {_PIP} --quiet \\
        --no-warn-script-location "${{PIP_OPTS[@]}}" "${{PACKAGES[@]}}" >>"$LOG_FILE" 2>&1; then
        echo "Successfully installed Python packages (system-wide): ${{PACKAGES[*]}}"
    else
        echo "ERROR: Failed to install Python packages: ${{PACKAGES[*]}}" >&2
        cat "$LOG_FILE" >&2
        exit 1
    fi

    """
)


TEMP_LOG_FILE = None
"""``log_file`` for a fresh temporary file (``mktemp``), so the working directory is left alone."""


def pip_install_script(
    packages: Sequence[str], index_urls: Sequence[str], log_file: str | None = "pip_install.log"
) -> str:
    """The bash prefix that installs ``packages`` (user site first, then system-wide), logging to
    ``log_file`` (upstream's ``pip_install.log`` by default; ``TEMP_LOG_FILE``: a temp file)."""
    pkgs, opts = _pip_words(packages, index_urls)
    log = '"$(mktemp 2>/dev/null || echo pip_install.log)"' if log_file is None else _dq(log_file)
    return (
        _PIP_SCRIPT.replace("__PACKAGES__", pkgs)
        .replace("__OPTS__", opts)
        .replace("__LOG_FILE__", log)
    )


JOB_TMP_ENV = homes.ENV_JOB_TMP
"""Set by the local backend in every container: a directory inside the job's own, removed with
the job (``trainjob delete``), for what a pod writes aside (its packages' environment)."""

_VENV_SCRIPT = textwrap.dedent(
    f"""
    PACKAGES=(__PACKAGES__)
    PIP_OPTS=(__OPTS__)
    VENV_ROOT="${{{JOB_TMP_ENV}:-${{TMPDIR:-/tmp}}}}"
    mkdir -p -m 700 "$VENV_ROOT"
    VENV="$(mktemp -d "$VENV_ROOT/venv.XXXXXX")"
    LOG_FILE="$VENV.pip.log"
    __CLEANUP__
    BASE="$(python -c 'import sys; print(sys.prefix)')"
    python -m venv --system-site-packages --without-pip "$VENV"
    SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
    python -c 'import site; print("\\n".join(site.getsitepackages()))' >"$SITE/_trainjob_base.pth"
    export PIP_DISABLE_PIP_VERSION_CHECK=1
    if python -m pip --python "$VENV/bin/python" --version >/dev/null 2>&1; then
        INSTALL=(python -m pip --python "$VENV/bin/python" install --quiet --no-warn-script-location)
    elif {{ command -v uv >/dev/null 2>&1 &&
           uv pip install --quiet --python "$VENV/bin/python" pip >>"$LOG_FILE" 2>&1; }} ||
         "$VENV/bin/python" -m ensurepip --default-pip >>"$LOG_FILE" 2>&1; then
        INSTALL=("$VENV/bin/python" -m pip install --quiet --no-warn-script-location)
    else
        echo "ERROR: cannot install Python packages: no pip (>= 22.3), uv or ensurepip here" >&2
        cat "$LOG_FILE" >&2
        exit 1
    fi
    if "${{INSTALL[@]}}" "${{PIP_OPTS[@]}}" "${{PACKAGES[@]}}" >>"$LOG_FILE" 2>&1; then
        echo "Successfully installed Python packages (into this job's virtual environment $VENV, \\
    over $BASE, whose packages it reuses): ${{PACKAGES[*]}}"
    else
        echo "ERROR: Failed to install Python packages: ${{PACKAGES[*]}}" >&2
        cat "$LOG_FILE" >&2
        exit 1
    fi
    export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" PYTHONPATH="$SITE${{PYTHONPATH:+:$PYTHONPATH}}"

    """
)
_VENV_CLEANUP = (
    "trap 'rm -rf \"$VENV\" \"$LOG_FILE\"' EXIT; trap 'exit 143' TERM; trap 'exit 130' INT"
)
_VENV_KEEP = (
    'echo "Keeping the virtual environment $VENV until the job is deleted (cleanup_venv=False)"'
)


def venv_install_script(
    packages: Sequence[str], index_urls: Sequence[str], cleanup: bool = True
) -> str:
    """The bash prefix that installs ``packages`` into a virtual environment of this job alone,
    for the local backend (upstream's local backend also makes one per job; its Kubernetes
    backend installs into the container, which is the job's own).

    Fast where upstream's is slow: the environment sees the caller's packages (its site-packages
    through a ``.pth`` file, since ``--system-site-packages`` alone would skip a caller that is
    itself a venv: torch is reused, not downloaded again) and is filled by the caller's pip
    (``pip --python``), else by a pip of its own (seeded by ``uv`` in a second, else by
    ``ensurepip``): pip, unlike ``uv pip``, counts the caller's packages as installed. It lives
    in the job's directory (``$TRAINJOB_JOB_TMP``) and is removed when the node's process ends
    (``cleanup``), or with the job. ``python`` and ``torchrun`` both see its packages (``PATH``,
    ``PYTHONPATH``); the caller's environment is never changed.
    """
    pkgs, opts = _pip_words(packages, index_urls)
    return (
        _VENV_SCRIPT.replace("__PACKAGES__", pkgs)
        .replace("__OPTS__", opts)
        .replace("__CLEANUP__", _VENV_CLEANUP if cleanup else _VENV_KEEP)
    )


def _pip_words(packages: Sequence[str], index_urls: Sequence[str]) -> tuple[str, str]:
    """The packages and the ``--index-url``/``--extra-index-url`` options of a pip install, each
    shell-quoted (the first index is the index, the others extra ones)."""
    if not index_urls:
        raise ValueError("pip_index_urls must name at least one package index")
    pkgs = " ".join(shlex.quote(str(p)) for p in packages)
    opts = " ".join(
        [f"--index-url {shlex.quote(str(index_urls[0]))}"]
        + [f"--extra-index-url {shlex.quote(str(u))}" for u in index_urls[1:]]
    )
    return pkgs, opts


def _dq(value: str) -> str:
    """``"value"`` as upstream writes it when that is safe in bash, else shell-quoted."""
    return f'"{value}"' if shlex.quote(value) == value else shlex.quote(value)


def function_command(
    runtime: types.Runtime,
    func: Any,
    func_args: dict[str, Any] | None,
    pip_index_urls: Sequence[str],
    packages_to_install: Sequence[str] | None,
    venv: bool | None = None,
) -> list[str]:
    """The trainer container command that runs ``func(**func_args)`` on ``runtime``.

    ``venv`` (the local backend): ``packages_to_install`` go into a virtual environment of the
    job (removed when the node ends if True, kept until the job is deleted if False) instead of
    upstream's ``pip install --user`` into the container."""
    shipped = function.ship(func, func_args)
    command = runtime.trainer.command
    if not command:
        raise ValueError(f"Runtime {runtime.name} has no trainer command")
    is_mpi = command[0] == "mpirun"
    # upstream logs to ./pip_install.log; a temp file keeps a local job out of the caller's cwd
    log_file = os.path.join(c.DEFAULT_MPI_USER_HOME, "pip_install.log") if is_mpi else TEMP_LOG_FILE
    install = ""
    if packages_to_install and venv is not None and not is_mpi:
        install = venv_install_script(packages_to_install, pip_index_urls, cleanup=venv)
    elif packages_to_install:
        install = pip_install_script(packages_to_install, pip_index_urls, log_file)
    out: list[str] = []
    for part in command:
        if "{func_file}" in part:
            script = part.format(
                func_code=shlex.quote(shipped.script), func_file=shlex.quote(shipped.file_name)
            )
            out.append(install + script)
        else:
            out.append(part)
    return out


def custom_trainer(
    runtime: types.Runtime,
    trainer: types.CustomTrainer | types.CustomTrainerContainer,
    venv: bool | None = None,
) -> dict[str, Any]:
    """``spec.trainer`` for a CustomTrainer or CustomTrainerContainer (``venv``: see
    :func:`function_command`)."""
    out: dict[str, Any] = {}
    out.update(node_fields(trainer.num_nodes))
    if trainer.resources_per_node:
        out["resourcesPerNode"] = runtimes.resources_per_node(trainer.resources_per_node)
    if isinstance(trainer, types.CustomTrainer):
        out["command"] = function_command(
            runtime,
            trainer.func,
            trainer.func_args,
            trainer.pip_index_urls,
            trainer.packages_to_install,
            venv,
        )
        if trainer.image:
            out["image"] = trainer.image
    else:
        if not trainer.image:
            raise ValueError("CustomTrainerContainer needs an image")
        out["image"] = trainer.image
    env = env_list(trainer.env)
    if env:
        out["env"] = env
    return out
