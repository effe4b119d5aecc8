"""Free ports named to a server before it starts (``trainjob.local.job.ports``: the local ports a job's
pods get through ``network_for``; the tests' and benchmarks' too): picked free below the kernel's ephemeral range, which the kernel hands out itself (outgoing connections'
local ports, other servers' port 0) and could give away before the pod's process binds the port;
a port taken by then is passed over; where the range leaves no room, any free port."""

from __future__ import annotations

import random
import socket
from pathlib import Path

import pytest

from trainjob.local.job import ports


def test_a_port_below_the_ephemeral_range_that_can_be_bound() -> None:
    lo, _ = ports.ephemeral_ports()
    for _ in range(20):
        port = ports.free_port()
        if lo - ports.PICK_FROM >= 1000:
            assert ports.PICK_FROM <= port < lo, (port, lo)
        with socket.socket() as s:
            s.bind(("", port))  # free indeed (nothing else bound it meanwhile, on this machine)


def test_a_port_something_already_holds_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "ephemeral_ports", lambda: (32768, 60999))
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for candidate in range(ports.PICK_FROM, 32768):  # one this test can hold
            try:
                held.bind(("", candidate))
                break
            except OSError:
                continue
        held.listen()
        real_randrange = random.randrange
        calls: list[int] = []

        def randrange(a: int, b: int) -> int:  # the held port twice, then at random
            calls.append(candidate if len(calls) < 2 else real_randrange(a, b))
            return calls[-1]

        monkeypatch.setattr(random, "randrange", randrange)
        assert not ports.port_is_free(candidate)
        port = ports.free_port()
    assert calls[:2] == [candidate, candidate] and len(calls) >= 3
    assert port == calls[-1] != candidate and ports.PICK_FROM <= port < 32768


def test_the_kernels_choice_where_the_range_leaves_no_room(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "ephemeral_ports", lambda: (1024, 65535))
    monkeypatch.setattr(random, "randrange", lambda *_: pytest.fail("no random pick expected"))
    assert 0 < ports.free_port() < 65536


def test_the_range_is_read_from_the_kernel_or_linuxs_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "ip_local_port_range"
    f.write_text("40000\t50000\n")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE", f)
    assert ports.ephemeral_ports() == (40000, 50000)
    f.write_text("garbage\n")
    assert ports.ephemeral_ports() == (32768, 60999)
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE", tmp_path / "absent")
    assert ports.ephemeral_ports() == (32768, 60999)
