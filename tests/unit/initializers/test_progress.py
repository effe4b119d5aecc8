"""Progress lines say the rate and the time left, as pip does, once there is a rate to tell."""

from __future__ import annotations

import logging

import pytest

from trainjob.initializers import transfer

MIB = 2**20


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_lines_carry_the_rate_and_the_eta_then_the_rate(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    items = [transfer.Item("a.bin", 4 * MIB), transfer.Item("b.bin", 8 * MIB)]
    with caplog.at_level(logging.INFO, logger=transfer.__name__):
        progress = transfer.Progress(items, [], interval=0.0, clock=clock)
        clock.t += 0.1
        progress.add_bytes(MIB)  # a.bin's first MiB: too early for a rate
        clock.t += 1.9
        progress.add_bytes(3 * MIB)
        progress.file_done(4 * MIB, counted=True)  # 4 MiB in 2 s
        clock.t += 2.0
        progress.file_done(8 * MIB)
    assert caplog.messages[1:] == [
        "0/2 files, 1.0/12.0 MiB",
        "0/2 files, 4.0/12.0 MiB, 2.0 MiB/s, ETA 0:04",
        "1/2 files, 4.0/12.0 MiB, 2.0 MiB/s, ETA 0:04",
        "2/2 files, 12.0/12.0 MiB, 3.0 MiB/s",
    ]


@pytest.mark.parametrize(
    ("seconds", "want"), [(4.4, "0:04"), (750, "12:30"), (3723, "1:02:03"), (-1, "0:00")]
)
def test_eta_reads_as_pip_writes_it(seconds: float, want: str) -> None:
    assert transfer.eta(seconds) == want
