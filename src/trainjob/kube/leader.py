"""Leader election on a ``coordination.k8s.io/v1`` Lease (client-go ``leaderelection`` semantics).

Only one replica reconciles at a time. A candidate takes the Lease when it is free or its holder
has not renewed it for ``lease_duration`` seconds *as observed locally* (clocks of different
machines are never compared); the leader renews every ``retry_period`` and gives up leadership
when it could not renew for ``renew_deadline``. Writes use the Lease's resourceVersion, so two
candidates cannot both win. On a clean stop the leader releases the Lease (empty holder,
1-second duration) so a successor need not wait.

Used by ``trainjob.controller.manager``.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from trainjob.core import times
from trainjob.kube import resources as r
from trainjob.kube.client import Client
from trainjob.kube.errors import ApiError, Conflict, NotFound

log = logging.getLogger(__name__)

Obj = dict[str, Any]


class LeaderElector:
    def __init__(
        self,
        client: Client,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.leading = threading.Event()
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0

    def run(
        self,
        stop: threading.Event,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
    ) -> None:
        """Block: acquire, call ``on_started_leading``, renew until lost or ``stop``, then return."""
        log.info("waiting to lead %s/%s as %s", self.namespace, self.name, self.identity)
        while not stop.is_set():
            if self.try_acquire_or_renew():
                break
            stop.wait(self.retry_period * random.uniform(1.0, 1.2))
        if stop.is_set():
            return
        self.leading.set()
        log.info("leading %s/%s as %s", self.namespace, self.name, self.identity)
        on_started_leading()
        try:
            while not stop.wait(self.retry_period):
                if not self._renew(stop):
                    log.error("lost the lease %s/%s", self.namespace, self.name)
                    break
        finally:
            self.leading.clear()
            if stop.is_set():
                self.release()
            on_stopped_leading()

    def _renew(self, stop: threading.Event) -> bool:
        deadline = time.monotonic() + self.renew_deadline
        while time.monotonic() < deadline:
            if self.try_acquire_or_renew():
                return True
            if stop.wait(self.retry_period / 2):
                return True
        return False

    def try_acquire_or_renew(self) -> bool:
        now = times.micro()
        try:
            lease = self.client.get(r.LEASES, self.name, self.namespace)
        except NotFound:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(now, now, 0),
            }
            try:
                self.client.create(r.LEASES, body, self.namespace)
            except ApiError as e:
                log.debug("creating lease %s/%s: %s", self.namespace, self.name, e)
                return False
            return True
        except ApiError as e:
            log.warning("reading lease %s/%s: %s", self.namespace, self.name, e)
            return False
        spec = lease.get("spec") or {}
        record = (
            spec.get("holderIdentity"),
            spec.get("renewTime"),
            spec.get("acquireTime"),
            spec.get("leaseTransitions"),
        )
        mono = time.monotonic()
        if record != self._observed:
            self._observed = record
            self._observed_at = mono
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and mono < self._observed_at + duration:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        if holder == self.identity:
            acquired = spec.get("acquireTime") or now
        else:
            acquired, transitions = now, transitions + 1
        lease["spec"] = self._spec(acquired, now, transitions)
        try:
            updated = self.client.replace(r.LEASES, lease)
        except Conflict:
            return False
        except ApiError as e:
            log.warning("updating lease %s/%s: %s", self.namespace, self.name, e)
            return False
        spec = updated.get("spec") or {}
        self._observed = (
            spec.get("holderIdentity"),
            spec.get("renewTime"),
            spec.get("acquireTime"),
            spec.get("leaseTransitions"),
        )
        self._observed_at = time.monotonic()
        return True

    def _spec(self, acquire: str, renew: str, transitions: int) -> Obj:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, int(self.lease_duration)),
            "acquireTime": acquire,
            "renewTime": renew,
            "leaseTransitions": transitions,
        }

    def release(self) -> None:
        """Give the Lease up now (if we still hold it), so the next leader starts at once."""
        try:
            lease = self.client.get(r.LEASES, self.name, self.namespace)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            spec.update(
                holderIdentity="",
                leaseDurationSeconds=1,
                renewTime=times.micro(),
                acquireTime=times.micro(),
            )
            lease["spec"] = spec
            self.client.replace(r.LEASES, lease)
            log.info("released the lease %s/%s", self.namespace, self.name)
        except ApiError as e:
            log.warning("releasing lease %s/%s: %s", self.namespace, self.name, e)
