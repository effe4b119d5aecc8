"""Every red-team case, by id: the inputs and the faults."""

from __future__ import annotations

from functools import cache

from tests.redteam import faults, inputs
from tests.redteam.cases import Case


@cache
def all_cases() -> dict[str, Case]:
    out: dict[str, Case] = {}
    for case in [*inputs.cases(), *faults.cases()]:
        assert case.id not in out, f"two cases named {case.id}"
        out[case.id] = case
    return out
