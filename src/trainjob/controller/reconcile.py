"""Reconcile one TrainJob: named, idempotent steps, then one status write, then events.

``Reconciler.reconcile(key)`` is level-triggered: it reads the TrainJob and what it owns from the
informer caches, decides, writes, and can run again at any time with the same outcome. Steps, in
upstream's order (``pkg/controller/trainjob_controller.go``):

1. skip a deleted TrainJob, or one ``spec.managedBy`` another controller (``kueue.x-k8s.io/multikueue``);
2. an unsupported ``runtimeRef`` kind/group -> ``Failed=True/TrainingRuntimeNotSupported``;
3. unless finished (Complete/Failed): resolve the runtime through its snapshot, compile the Plan
   (``trainjob.runtime.compile``) and server-side apply it (field manager ``trainjob``). A running,
   unsuspended JobSet is left alone; the MPI Secret is only created, when the metadata-only Secret
   informer does not hold it (``AlreadyExists`` keeps the first key: the controller never reads a
   Secret's data); a PodGroup is not re-applied once it exists unless the TrainJob is suspended
   (each kind's rule is its plugin's: :mod:`trainjob.runtime.kinds`). The runtime snapshot and
   the JobSet's siblings are written at once, the JobSet after them (a running JobSet's siblings
   are not looked at again, and its pods need them). A missing runtime sets
   ``RuntimeNotFound=True`` and is retried with backoff; any failure becomes the Warning event
   ``TrainJobResourcesCreationFailed`` (upstream's message) and a retry with backoff;
4. ``Suspended`` condition from ``spec.suspend``;
5. ``Complete``/``Failed`` and ``jobsStatus`` from the JobSet (the status plugin's reading);
6. ``activeDeadlineSeconds``: past it -> ``Failed=True/DeadlineExceeded`` and the JobSet deleted
   (the plugins' terminal cleanup);
   otherwise a requeue when it runs out;
   then trainjob's phase condition (Queued, Initializing, Running, Restarting) from the JobSet's
   status (:mod:`trainjob.api.phases`; added, upstream's conditions unchanged);
7. one merge patch of ``status`` when it changed; then the events. ``status.startTime`` alone
   waits for the next change (the JobSet controller's first report of its Jobs, moments later
   in a cluster) or :data:`START_TIME_WAIT` seconds, whichever comes first, so it costs a
   TrainJob no status write of its own (upstream v2.3, which has no startTime, writes none
   until the JobSet reports); its value is when the JobSet ran unsuspended, not when written.

A finished TrainJob never applies anything again, so a JobSet deleted after it finished (JobSet
TTL, a user) is not recreated (fixing upstream issues #3737/#3779).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from trainjob.api import conditions as tc
from trainjob.api import constants as c
from trainjob.api import phases
from trainjob.api.load import parse
from trainjob.api.trainer import Runtime, TrainJob
from trainjob.controller import cache, runtimes
from trainjob.controller import status as st
from trainjob.core import conditions as cond
from trainjob.core import lifetime, times
from trainjob.errors import TrainJobError
from trainjob.executor import sshkeys
from trainjob.kube import events as kevents
from trainjob.kube import resources as r
from trainjob.kube.client import Client
from trainjob.kube.errors import AlreadyExists, ApiError, NotFound
from trainjob.kube.informer import Informer
from trainjob.runtime import kinds, registry
from trainjob.runtime.compiler import CompileOptions, compile, framework
from trainjob.runtime.plugins.jobset import owned_by
from trainjob.runtime.plugins.trainjobstatus import StatusServer

log = logging.getLogger(__name__)

Obj = dict[str, Any]
MAX_EVENT_ERROR = 950
WRITE_THREADS = 8
"""Threads shared by the reconciles for the writes of a Plan that go at once."""
START_TIME_WAIT = 15.0
"""Seconds a ``status.startTime`` with nothing else to write waits for a change to ride with."""


@dataclass(frozen=True)
class Result:
    """What the worker does next with the key: nothing, retry with backoff, or look again later."""

    retry: bool = False
    requeue_after: float | None = None
    error: str = ""


@dataclass
class Caches:
    """The informers reconcile reads from: TrainJobs, one per kind a Plan can hold (by
    (apiVersion, kind), :mod:`trainjob.runtime.kinds`; Secrets metadata only, never their data)
    and the runtimes (by plural)."""

    trainjobs: Informer
    owned: dict[tuple[str, str], Informer]
    runtimes: dict[str, Informer] = field(default_factory=dict)

    @property
    def jobsets(self) -> Informer:
        return self.owned[kinds.JOBSET.key]

    @property
    def configmaps(self) -> Informer:
        return self.owned[kinds.CONFIGMAP.key]

    @property
    def secrets(self) -> Informer | None:
        return self.owned.get(kinds.SECRET.key)


@dataclass(frozen=True)
class PendingEvent:
    type: str
    reason: str
    action: str
    note: str


def failure_message(err: BaseException) -> str:
    """Upstream's event text: ``TrainJob resources reconciliation failed: %.950v`` (+ `` ...``)."""
    text = str(err)
    msg = c.RESOURCES_RECONCILIATION_FAILED + text[:MAX_EVENT_ERROR]
    return msg + " ..." if len(text) > MAX_EVENT_ERROR else msg


class Reconciler:
    def __init__(
        self,
        client: Client,
        caches: Caches,
        recorder: kevents.EventRecorder,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.caches = caches
        self.recorder = recorder
        self.clock = clock
        # where the TrainJob status endpoint is served (the manager sets it; None: off)
        self.status_server: Callable[[], StatusServer | None] = lambda: None
        self._writers: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def reconcile(self, key: str) -> Result:
        cached = self.caches.trainjobs.get(key)
        if cached is None:
            return Result()
        meta = cached.get("metadata") or {}
        spec = cached.get("spec") or {}
        if meta.get("deletionTimestamp"):
            return Result()
        managed_by = spec.get("managedBy")
        if managed_by and managed_by != c.MANAGED_BY_TRAINER:
            log.debug("%s: managed by %s, skipping", key, managed_by)
            return Result()

        tj: Obj = cache.copy_json(cached)
        old_status = tj.get("status") or {}
        conditions: list[Obj] = cache.copy_json(old_status.get("conditions") or [])
        before: list[Obj] = cache.copy_json(conditions)
        pending: list[PendingEvent] = []
        failure = ""

        gk = runtimes.group_kind(tj)
        if gk not in runtimes.SUPPORTED:
            cond.set_condition(
                conditions,
                c.CONDITION_FAILED,
                cond.TRUE,
                c.REASON_RUNTIME_NOT_SUPPORTED,
                f"unsupported runtime: {gk}",
            )
        elif not tc.is_finished(conditions):
            failure = self.reconcile_objects(key, tj, conditions, pending)

        tc.set_suspended(conditions, bool(spec.get("suspend")))
        jobs = self.jobs_status(key, tj, conditions)
        runtime = self._runtime_defaults(tj, gk)
        requeue_after = self.check_deadline(key, tj, conditions, runtime)
        self.phase_condition(key, tj, conditions, jobs)
        run_times = self.run_times(key, tj, conditions)
        start_left = self.write_status(
            key, tj, before, conditions, old_status.get("jobsStatus"), jobs, run_times
        )
        for ev in pending:
            self.recorder.event(tj, ev.type, ev.reason, ev.action, ev.note)
        if failure:
            return Result(retry=True, error=failure)
        ttl_left = self.check_ttl(key, tj, conditions, runtime)
        for left in (ttl_left, start_left):
            if left is not None:
                requeue_after = left if requeue_after is None else min(requeue_after, left)
        return Result(requeue_after=requeue_after)

    def _runtime_defaults(self, tj: Obj, gk: object) -> Obj | None:
        """The runtime (from the cache) when the TrainJob leaves a ``runPolicy`` default to it."""
        spec = tj.get("spec") or {}
        if gk not in runtimes.SUPPORTED or (
            spec.get("activeDeadlineSeconds") is not None
            and spec.get("ttlSecondsAfterFinished") is not None
        ):
            return None
        return self.cached_runtime(tj)

    # -- KEP-2899 times and TTL ---------------------------------------------------------------------
    def run_times(self, key: str, tj: Obj, conditions: list[Obj]) -> Obj:
        """``startTime`` (when the JobSet first ran unsuspended: its creation, or the resume
        that came after it) and ``completionTime`` (the Complete condition's time, as a Job's)
        to add to the status; {} when nothing changes."""
        status = tj.get("status") or {}
        out: Obj = {}
        jobset = self.caches.jobsets.get(key)
        running = jobset is not None or tc.is_finished(conditions)
        if not status.get("startTime") and not (tj.get("spec") or {}).get("suspend") and running:
            out["startTime"] = _started_at(jobset, conditions) or times.now()
        complete = cond.find(conditions, c.CONDITION_COMPLETE)
        if (
            not status.get("completionTime")
            and complete is not None
            and complete.get("status") == cond.TRUE
        ):
            out["completionTime"] = complete.get("lastTransitionTime") or times.now()
        return out

    def check_ttl(
        self, key: str, tj: Obj, conditions: list[Obj], runtime: Obj | None
    ) -> float | None:
        """A finished TrainJob past its ``ttlSecondsAfterFinished`` (else its runtime's
        ``runPolicy``'s), counted from its Complete/Failed condition, is deleted (its JobSet and
        pods follow by owner; PVCs JobSet keeps stay); else the seconds left, for a requeue. The
        count is the status's, so a restarted controller deletes it on time too."""
        obj = {"spec": tj.get("spec") or {}, "status": {"conditions": conditions}}
        left = lifetime.ttl_remaining(obj, runtime, self.clock())
        if left is None or left > 0:
            return left
        meta = tj["metadata"]
        log.info("TrainJob %s finished more than its ttlSecondsAfterFinished ago: deleting", key)
        try:
            self.client.delete(
                r.TRAINJOBS,
                meta["name"],
                meta["namespace"],
                preconditions={"uid": meta["uid"]} if meta.get("uid") else None,
                ignore_not_found=True,
            )
        except ApiError as e:
            log.warning("deleting %s after its TTL: %s", key, e)
            return 5.0
        return None

    # -- step 3: the Plan's objects --------------------------------------------------------------
    def reconcile_objects(
        self, key: str, tj: Obj, conditions: list[Obj], pending: list[PendingEvent]
    ) -> str:
        """Build and apply the Plan; '' on success, else the failure message (already evented)."""
        suspend = bool((tj.get("spec") or {}).get("suspend"))
        jobset = self.caches.jobsets.get(key)
        if jobset is not None and not suspend and not _suspended(jobset):
            # Upstream JobSet plugin: a running JobSet gets no updates (nor do its siblings,
            # whose inputs are immutable while the TrainJob runs).
            cond.remove(conditions, tc.CONDITION_RUNTIME_NOT_FOUND)
            return ""
        try:
            runtime, snapshot = self.resolve_runtime(tj)
            try:
                model = parse({k: tj[k] for k in ("apiVersion", "kind", "metadata", "spec")})
                assert isinstance(model, TrainJob)
                plan = compile(model, runtime, self.compile_options(tj, runtime))
            except TrainJobError:
                if snapshot is not None:  # made before the build, as upstream's
                    self._create_snapshot(snapshot)
                raise
            self.apply_plan(key, plan.objects, suspend, jobset, snapshot)
        except runtimes.RuntimeNotFoundError as e:
            cond.set_condition(
                conditions,
                tc.CONDITION_RUNTIME_NOT_FOUND,
                cond.TRUE,
                tc.REASON_RUNTIME_NOT_FOUND,
                str(e),
            )
            return self._failed(key, e, pending)
        except TrainJobError as e:
            return self._failed(key, e, pending)
        cond.remove(conditions, tc.CONDITION_RUNTIME_NOT_FOUND)
        return ""

    def _failed(self, key: str, err: BaseException, pending: list[PendingEvent]) -> str:
        msg = failure_message(err)
        log.warning("reconciling TrainJob %s: %s", key, err)
        pending.append(
            PendingEvent(
                kevents.WARNING,
                c.EVENT_RESOURCES_CREATION_FAILED,
                c.EVENT_ACTION_RECONCILING,
                msg,
            )
        )
        return msg

    def resolve_runtime(self, tj: Obj) -> tuple[Runtime, Obj | None]:
        """The runtime from the snapshot; on first use, from the cluster, with the snapshot
        ConfigMap to create (:meth:`apply_plan` creates it beside the JobSet's siblings)."""
        ns = tj["metadata"]["namespace"]
        name = runtimes.snapshot_name(tj)
        if self.caches.configmaps.get(f"{ns}/{name}") is not None:
            cm = self.client.get_or_none(r.CONFIGMAPS, name, ns)
            if cm is not None:
                return runtimes.to_model(runtimes.runtime_from_snapshot(tj, cm)), None
        runtime = self.cached_runtime(tj) or runtimes.fetch_runtime(self.client, tj)
        return runtimes.to_model(runtime), runtimes.snapshot_configmap(tj, runtime)

    def _create_snapshot(self, snapshot: Obj) -> None:
        # AlreadyExists (another reconcile, or a cache lagging behind, made it first: that one
        # is the truth, and this Plan was built without it) is an ApiError: the TrainJob is
        # retried, before its JobSet is applied, and the next build reads the snapshot.
        created = self.client.create(r.CONFIGMAPS, snapshot)
        self.caches.configmaps.update_if_newer(created)

    def cached_runtime(self, tj: Obj) -> Obj | None:
        """The runtime from the informer cache (None on a miss: the caller asks the apiserver)."""
        resource = runtimes.SUPPORTED[runtimes.group_kind(tj)]
        informer = self.caches.runtimes.get(resource.plural)
        if informer is None:
            return None
        name = str(((tj.get("spec") or {}).get("runtimeRef") or {}).get("name", ""))
        key = name if not resource.namespaced else f"{tj['metadata']['namespace']}/{name}"
        return informer.get(key)

    def compile_options(self, tj: Obj, runtime: Runtime) -> CompileOptions:
        """A fresh SSH key pair for MPI runtimes (about a millisecond) whose Secret the metadata
        cache does not hold: the Secret is only created, and AlreadyExists keeps the first key."""
        status_server = self.status_server()
        policy = runtime.spec.ml_policy
        if policy is None or policy.mpi is None or self._mpi_secret_exists(tj):
            return CompileOptions(status_server=status_server, resume_env=True)
        private, public = sshkeys.generate_ssh_key_pair()
        return CompileOptions(
            ssh_private_key=private,
            ssh_public_key=public,
            status_server=status_server,
            resume_env=True,
        )

    def _mpi_secret_exists(self, tj: Obj) -> bool:
        if self.caches.secrets is None:
            return False
        meta = tj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}{c.MPI_SSH_AUTH_SECRET_SUFFIX}"
        secret = self.caches.secrets.get(key)
        return secret is not None and owned_by(secret, tj)

    def apply_plan(
        self,
        key: str,
        objects: tuple[Obj, ...],
        suspend: bool,
        jobset: Obj | None,
        snapshot: Obj | None = None,
    ) -> None:
        """Apply each object as its kind says (:class:`trainjob.runtime.kinds.Apply`).

        The JobSet goes last, once every other object (and the runtime ``snapshot`` to create)
        is written: a running JobSet's siblings are never looked at again, and its pods need
        them. Those others are written at the same time, one round trip in all."""
        writes: list[Callable[[], None]] = (
            [] if snapshot is None else [lambda: self._create_snapshot(snapshot)]
        )
        last: list[Callable[[], None]] = []
        for obj in objects:
            try:
                kind = registry.kind_of(obj)
            except KeyError:
                raise TrainJobError(
                    f"no runtime plugin declares {obj.get('apiVersion')}, Kind={obj.get('kind')}"
                ) from None
            write = self._write(kind, obj, suspend)
            if write is not None:
                (last if kind is kinds.JOBSET else writes).append(write)
        if len(writes) > 1:
            for future in [self._pool().submit(w) for w in writes]:
                future.result()  # each one done; the first failure raised
        else:
            for w in writes:
                w()
        for w in last:
            w()
        log.debug("%s: applied %d objects", key, len(objects))

    def _write(self, kind: kinds.Kind, obj: Obj, suspend: bool) -> Callable[[], None] | None:
        """What writing ``obj`` takes (None: nothing to write now)."""
        informer = self.caches.owned.get(kind.key)
        current = informer.get(kind.resource.key(obj)) if informer is not None else None
        if kind.apply is kinds.Apply.CREATE_ONCE:
            # Created when absent (also again after a delete: the watch brings the TrainJob
            # back); an existing one is kept. Compiled without generated data (the cache
            # holds the object), it is not sent.
            if current is not None or not obj.get("data"):
                return None

            def create() -> None:
                with contextlib.suppress(AlreadyExists):
                    created = self.client.create(kind.resource, obj)
                    if informer is not None:
                        informer.update_if_newer(created)

            return create
        # Upstream's JobSet plugin: a running object gets no updates (its inputs are
        # immutable while the TrainJob runs); it is applied again while suspended.
        if (
            kind.apply is kinds.Apply.WHILE_SUSPENDED
            and current is not None
            and not suspend
            and not _suspended(current)
        ):
            return None

        def apply() -> None:
            applied = self.client.apply(obj, resource=kind.resource)
            if informer is not None:  # (a metadata informer keeps its metadata)
                informer.update_if_newer(applied)

        return apply

    def _pool(self) -> ThreadPoolExecutor:
        """Threads for a reconcile's writes that go at once (made on first use)."""
        with self._pool_lock:
            if self._writers is None:
                self._writers = ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="write")
            return self._writers

    # -- step 5: status from the JobSet -----------------------------------------------------------
    def jobs_status(self, key: str, tj: Obj, conditions: list[Obj]) -> list[Obj] | None:
        """The new ``jobsStatus`` (None: leave as is), after the status plugin (the JobSet's)
        read the TrainJob's objects into ``conditions``."""
        owned: dict[tuple[str, str], Obj] = {}
        for kind_key, informer in self.caches.owned.items():
            obj = informer.get(key)
            if obj is not None:
                owned[kind_key] = obj
        return framework().trainjob_status(tj, owned, conditions)

    # -- step 6: active deadline ------------------------------------------------------------------
    def check_deadline(
        self, key: str, tj: Obj, conditions: list[Obj], runtime: Obj | None = None
    ) -> float | None:
        remaining = st.deadline(tj, conditions, self.clock(), runtime)
        if remaining is None:
            return None
        if remaining > 0:
            return remaining
        log.info("TrainJob %s exceeded its active deadline, failing it", key)
        cond.set_condition(
            conditions,
            c.CONDITION_FAILED,
            cond.TRUE,
            c.REASON_DEADLINE_EXCEEDED,
            c.MESSAGE_DEADLINE_EXCEEDED,
        )
        meta = tj["metadata"]
        for kind, name in framework().terminal_cleanup(tj):
            try:
                self.client.delete(kind.resource, name, meta["namespace"], ignore_not_found=True)
            except ApiError as e:
                log.warning(
                    "deleting the %s of %s after its deadline: %s", kind.resource.kind, key, e
                )
        return None

    def phase_condition(
        self, key: str, tj: Obj, conditions: list[Obj], jobs: list[Obj] | None
    ) -> None:
        """trainjob's phase condition (Queued, Initializing, Running, Restarting:
        :mod:`trainjob.api.phases`) from the JobSet's status: its Jobs' counts and restarts."""
        jobset = self.caches.jobsets.get(key) if jobs is not None else None
        restarts = ((jobset or {}).get("status") or {}).get("restarts") or 0
        labels = (tj.get("metadata") or {}).get("labels") or {}
        ph = phases.phase(
            conditions,
            jobset,
            jobs,
            suspended=bool((tj.get("spec") or {}).get("suspend")),
            queue=labels.get(phases.KUEUE_QUEUE_LABEL),
            restarts=int(restarts),
        )
        phases.set_phase(conditions, ph)

    # -- step 7: one status write -----------------------------------------------------------------
    def write_status(
        self,
        key: str,
        tj: Obj,
        before: list[Obj],
        conditions: list[Obj],
        jobs_before: list[Obj] | None,
        jobs: list[Obj] | None,
        run_times: Obj | None = None,
    ) -> float | None:
        """Write what changed in one merge patch; the seconds until a ``startTime`` held back
        (the only change: it waits for company, :data:`START_TIME_WAIT`) is due, else None."""
        patch: Obj = dict(run_times or {})
        if conditions != before:
            patch["conditions"] = conditions
        if jobs is not None and (jobs or None) != (jobs_before or None):
            patch["jobsStatus"] = jobs or None
        if not patch:
            return None
        if patch.keys() == {"startTime"}:
            started = times.parse(patch["startTime"])
            left = (started or 0.0) + START_TIME_WAIT - self.clock()
            if started is not None and left > 0:
                return left
        meta = tj["metadata"]
        try:
            updated = self.client.patch_status(r.TRAINJOBS, meta["name"], meta["namespace"], patch)
        except NotFound:
            return None
        self.caches.trainjobs.update_if_newer(updated)
        log.debug("%s: status written (%s)", key, ", ".join(sorted(patch)))
        return None


def _suspended(jobset: Obj) -> bool:
    return bool((jobset.get("spec") or {}).get("suspend"))


def _started_at(jobset: Obj | None, conditions: list[Obj]) -> str | None:
    """When the JobSet began to run unsuspended: its creation, or the TrainJob's last resume
    (``Suspended=False``) when that came later; None when neither is known."""
    created = ((jobset or {}).get("metadata") or {}).get("creationTimestamp")
    suspended = cond.find(conditions, c.CONDITION_SUSPENDED)
    resumed = (
        suspended.get("lastTransitionTime")
        if suspended is not None and suspended.get("status") == cond.FALSE
        else None
    )
    known = [(t, v) for v in (created, resumed) if v and (t := times.parse(v)) is not None]
    return max(known)[1] if known else None
