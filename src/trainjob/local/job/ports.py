"""Free TCP ports of this machine, for a server that is named its port before it starts (a pod's
process that other pods must reach, a foreign binary whose configuration names its port), picked
where nothing else is likely to take them meanwhile.

Used by the local backend's runner (:mod:`trainjob.local.job.runner`: each declared
``containerPort`` of each pod), whose room it lives in, and by the tests' controller harnesses. A
server that can bind port 0 itself and report its port back needs none of this.
"""

from __future__ import annotations

from pathlib import Path

# Where a pod's local ports are picked: below the kernel's ephemeral range, which the kernel
# draws from itself (an outgoing connection's local port, any server's port 0). A port found free
# by binding port 0 comes from that range, and on a busy machine one of those could take it
# before the pod's process binds it (a torch rendezvous then fails with EADDRINUSE); below the
# range only a server configured with that very port can.
PICK_FROM = 20000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_ports() -> tuple[int, int]:
    """The kernel's ephemeral port range (Linux's default where it cannot be read)."""
    try:
        lo, hi = (int(v) for v in EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999
    return lo, hi


def port_is_free(port: int) -> bool:
    """Whether ``port`` can be bound on every interface right now."""
    import socket  # here: every reader of a job's liveness imports local/state/procs, and so this

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A TCP port nobody listens on right now (on every interface), picked at random between
    :data:`PICK_FROM` and the ephemeral range (see there why); any free port the kernel gives
    where that leaves fewer than 1,000 (a machine whose ephemeral range starts lower)."""
    import random
    import socket

    below = min(ephemeral_ports()[0], 65536)
    if below - PICK_FROM >= 1000:
        for _ in range(100):
            port = random.randrange(PICK_FROM, below)
            if port_is_free(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def free_ports(n: int) -> list[int]:
    """``n`` free ports, no two alike: each is checked by a socket closed before the next
    check, so the same port could otherwise be handed out twice (two servers then collide)."""
    out: list[int] = []
    while len(out) < n:
        port = free_port()
        if port not in out:
            out.append(port)
    return out
