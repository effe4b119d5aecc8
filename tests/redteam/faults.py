"""The faults (filled in below)."""

from __future__ import annotations

from tests.redteam.cases import Case


def cases() -> list[Case]:
    return []
