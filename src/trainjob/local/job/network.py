"""A JobSet's endpoints and ports mapped onto this host.

A pod's DNS name ``<jobset>-<job>-<jobIndex>-<index>.<subdomain>`` (with any ``.<ns>.svc...``
suffix) becomes ``127.0.0.1`` and each declared ``containerPort`` of each pod a free local port, so
that two jobs, or two pods of one job, never collide. A bare port number as an env value
(``PET_MASTER_PORT=29500``) is the first pod's that declares it; ``host:port`` is the given
host's; ``localhost:port`` the pod's own. Pure; used through :mod:`trainjob.local.job.pods`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from trainjob.local.job.templates import Obj, PodTemplate, subdomain
from trainjob.runtime.plan import Plan


def _declared_ports(spec: Obj) -> list[int]:
    out: list[int] = []
    for ctr in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        for p in ctr.get("ports") or ():
            port = p.get("containerPort")
            if isinstance(port, int) and port not in out:
                out.append(port)
    return out


@dataclass(frozen=True)
class Network:
    """Endpoints and ports of one run of a JobSet, mapped onto this host."""

    subdomain: str
    hosts: tuple[str, ...]
    ports: Mapping[tuple[str, int], int] = field(default_factory=dict)

    def _pattern(self) -> re.Pattern[str]:
        hosts = "|".join(re.escape(h) for h in sorted(self.hosts, key=len, reverse=True))
        return re.compile(
            rf"(?<![\w.-])(?P<host>{hosts})\.{re.escape(self.subdomain)}"
            r"(?:\.[a-z0-9-]+\.svc(?:\.[a-z0-9-]+)*|\.svc(?:\.[a-z0-9-]+)*)?"
            r"(?::(?P<port>\d+))?(?![\w-])"
        )

    def port_of(self, host: str, port: int) -> int:
        return self.ports.get((host, port), port)

    def first_port(self, port: int) -> int | None:
        """The local port of the first pod that declares ``port``."""
        for h in self.hosts:
            if (h, port) in self.ports:
                return self.ports[(h, port)]
        return None

    def rewrite(self, text: str, own_host: str = "") -> str:
        """Endpoints -> 127.0.0.1 (with their mapped port); ``localhost:p`` -> own port."""
        if self.hosts:

            def endpoint(m: re.Match[str]) -> str:
                port = m.group("port")
                if port is None:
                    return "127.0.0.1"
                return f"127.0.0.1:{self.port_of(m.group('host'), int(port))}"

            text = self._pattern().sub(endpoint, text)
        if own_host:

            def local(m: re.Match[str]) -> str:
                return f"{m.group(1)}:{self.port_of(own_host, int(m.group(2)))}"

            text = re.sub(r"(?<![\w.-])(localhost|127\.0\.0\.1|0\.0\.0\.0):(\d+)\b", local, text)
        return text

    def rewrite_env(self, value: str, own_host: str) -> str:
        """As :meth:`rewrite`, and a bare declared port becomes the first declaring pod's."""
        if value.isdigit():
            mapped = self.first_port(int(value))
            if mapped is not None:
                return str(mapped)
        return self.rewrite(value, own_host)


def network_for(
    plan: Plan, pods: list[PodTemplate], free_port: Callable[[], int] | None = None
) -> Network:
    """Map every declared container port of every pod to a free local port, no two alike:
    each probe of ``free_port`` is closed before the next one binds, so the kernel may hand a
    port back twice (two pods of the job would then collide on it)."""
    ports: dict[tuple[str, int], int] = {}
    for pod in pods:
        for port in _declared_ports(pod.spec):
            local = port
            if free_port is not None:
                local = free_port()
                while local in ports.values():
                    local = free_port()
            ports[(pod.hostname, port)] = local
    return Network(subdomain(plan), tuple(p.hostname for p in pods), ports)


def extended(
    net: Network, pods: list[PodTemplate], free_port: Callable[[], int] | None = None
) -> Network:
    """``net`` with pods added (an elastic job's scale up): the others keep their ports, so the
    new pods reach the same rendezvous endpoint."""
    ports = dict(net.ports)
    for pod in pods:
        for port in _declared_ports(pod.spec):
            local = port
            if free_port is not None:
                local = free_port()
                while local in ports.values():
                    local = free_port()
            ports[(pod.hostname, port)] = local
    hosts = net.hosts + tuple(p.hostname for p in pods if p.hostname not in net.hosts)
    return Network(net.subdomain, hosts, ports)
