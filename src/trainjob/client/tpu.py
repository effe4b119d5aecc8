"""TPU sizing: how many nodes (hosts) a multi-slice TPU TrainJob needs (upstream's helper).

``get_tpu_num_nodes(num_slices, topology, chips_per_host=4)`` has upstream's name, arguments and
errors (``kubeflow.trainer.get_tpu_num_nodes``), so a script that sizes ``CustomTrainer(
num_nodes=...)`` with it ports unchanged. Pure; exported from ``trainjob``.
"""

from __future__ import annotations

import math


def get_tpu_num_nodes(num_slices: int, topology: str, chips_per_host: int = 4) -> int:
    """The number of nodes (TPU VM hosts) across ``num_slices`` slices of ``topology``.

    A slice of topology ``AxB`` or ``AxBxC`` has ``A*B*C`` chips; a slice smaller than one host
    takes one host, a larger one ``chips / chips_per_host`` hosts (which must divide evenly).

    Args:
        num_slices: The number of TPU slices (positive).
        topology: The slice topology, e.g. ``"2x2"``, ``"2x4"``, ``"2x2x2"``, ``"4x4"``.
        chips_per_host: TPU chips per host VM (4 by default; 8 on e.g. ct6e-standard-8t).

    Returns:
        ``num_slices`` times the hosts of one slice, e.g. ``get_tpu_num_nodes(2, "4x4") == 8``.

    Raises:
        ValueError: a non-positive count, an empty or malformed topology, or a slice whose chips
            do not divide evenly into hosts.
    """
    if num_slices <= 0:
        raise ValueError(f"num_slices must be positive, got: {num_slices}")
    if chips_per_host <= 0:
        raise ValueError(f"chips_per_host must be positive, got: {chips_per_host}")
    if not topology:
        raise ValueError("TPU topology must be specified.")
    try:
        dims = [int(part) for part in topology.lower().split("x")]
    except ValueError:
        raise ValueError(
            f"Invalid topology format: '{topology}'. Must be formatted as 'AxB' or 'AxBxC' "
            "(e.g. '2x2', '2x2x2')."
        ) from None
    if len(dims) not in (2, 3):
        raise ValueError(
            f"Invalid topology format: '{topology}'. Must contain exactly 2 or 3 dimensions "
            "(e.g. '2x2', '2x2x2')."
        )
    if min(dims) <= 0:
        raise ValueError(f"TPU topology dimensions must be positive, got: '{topology}'.")
    chips = math.prod(dims)
    if chips < chips_per_host:
        return num_slices
    if chips % chips_per_host:
        raise ValueError(
            f"Total TPU chips in slice ({chips}) must be cleanly divisible by chips_per_host "
            f"({chips_per_host})."
        )
    return num_slices * (chips // chips_per_host)
