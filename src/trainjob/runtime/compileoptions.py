"""What the compiler is handed beside a TrainJob and its runtime: :class:`CompileOptions`.

A module of its own, below the compiler, the framework and the plugins, because all three read
it: the plugins' ``build`` steps take the options, and the compiler passes them on. Importing
nothing of ``trainjob.runtime`` keeps the compiler and its plugins free of an import circle.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StatusServer:
    """Where the executor serves the endpoint: ``base_url`` (``https://host:port``) and the PEM
    CA certificate its serving certificate chains to."""

    base_url: str
    ca_cert: str


@dataclass(frozen=True)
class CompileOptions:
    """Inputs that are not part of the TrainJob or the runtime.

    ``ssh_private_key``/``ssh_public_key``: the MPI key pair the executor generated (the compiler
    itself draws no randomness). Without them the MPI Secret is planned with empty data and the
    executor must fill it before applying.
    """

    ssh_private_key: str | None = None
    ssh_public_key: str | None = None
    status_server: StatusServer | None = None
    """Where the executor serves the TrainJob status endpoint, for the TrainJobStatus plugin
    (None: no endpoint env or volume, as upstream with its feature gate off)."""
    resume_env: bool = False
    """Whether the Resume plugin gives a restartable JobSet's trainer ``$TRAINJOB_RESTART_ATTEMPT``
    and ``$TRAINJOB_CHECKPOINT_DIR`` (the controller: True; the local backend sets its own)."""
