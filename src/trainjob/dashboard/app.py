"""The dashboard's ASGI app (Starlette): four pages, a JSON API and server-sent event streams.

Pages (one HTML frame, ``page.html``, with each page's title and script; JS shipped in the
wheel, ``static/``; no data is ever written into HTML on the server, the browser sets it as text): ``/`` the Jobs (and sweeps), ``/jobs/NS/NAME`` a job,
``/sweeps/NS/NAME`` a sweep, ``/runtimes`` the runtimes. The API, over one
:class:`~trainjob.executor.base.Executor` and one :class:`~trainjob.executor.sweeps.SweepExecutor`
(the backend the CLI uses, each opened once per worker thread):

- ``GET /api/jobs[?namespace=]`` every job's row; ``GET /api/jobs/stream`` the rows, then the
  rows that changed (phase, progress, loss, restarts...) and the jobs removed, as they change.
- ``GET /api/jobs/NS/NAME`` a job's page data (conditions, steps, events, progress);
  ``.../stream`` it again when it changes, with each new progress report (``metrics`` events);
  ``.../metrics`` the reports so far; ``.../logs?step=node-0[&follow=1]`` one step's log lines
  as events; ``.../yaml`` the TrainJob; ``.../plan`` its Plan.
- ``POST .../suspend``, ``POST .../resume``, ``DELETE /api/jobs/NS/NAME`` (the pages ask first).
- ``GET /api/sweeps[?namespace=]`` every sweep's row (``unavailable``: why there are none,
  on a backend without sweeps); ``GET /api/sweeps/NS/NAME`` a sweep's page data (its search,
  conditions, result, every trial with its parameters and objective, events).
- ``GET /api/runtimes``; ``GET /api/runtimes/KIND/NAME/yaml|plan[?namespace=&numNodes=]``: a
  runtime, and the Plan a TrainJob with only a runtimeRef (and numNodes) would get on it.

Errors are JSON ``{"error": message}`` with kubectl's wording: 404 for what is not there, 422 for
an invalid object, 400 for the rest of a user's errors.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from trainjob import text
from trainjob.api import constants as c
from trainjob.api.optimization import OptimizationJob
from trainjob.core import times
from trainjob.dashboard import security, sweep_views, views
from trainjob.dashboard.streams import Executors, event, keepalive, lines_of
from trainjob.errors import ForbiddenError, InvalidError, NotFoundError, TrainJobError
from trainjob.executor.base import Executor
from trainjob.executor.model import MetricSample, trainer_status_sample
from trainjob.executor.steps import parse_step
from trainjob.executor.sweeps import SweepExecutor

STATIC = Path(__file__).parent / "static"
log = logging.getLogger(__name__)

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


@dataclass(frozen=True)
class Listing:
    """One read of every job's row: when (monotonic), the rows, their JSON."""

    at: float
    rows: list[dict[str, Any]]
    body: str


class Dashboard:
    """The app's state: the executors, how often streams look again, what the pages say."""

    def __init__(
        self,
        opener: Callable[[], Executor],
        *,
        sweeps: Callable[[], SweepExecutor] | None = None,
        poll: float = 1.0,
    ) -> None:
        self.executors = Executors(opener)
        self.poll = poll
        self.backend = self.executors.first.backend
        self.keeps_history = self.executors.first.keeps_metric_history
        self._listings: dict[str | None, Listing] = {}
        self._locks: dict[str | None, asyncio.Lock] = {}
        self.sweeps: Executors[SweepExecutor] | None = None
        self.no_sweeps = "" if sweeps is not None else "this dashboard was started without sweeps"
        if sweeps is not None:
            try:
                self.sweeps = Executors(sweeps)
            except TrainJobError as e:  # a backend without sweeps: the jobs all the same
                self.no_sweeps = text.printable(str(e))

    # -- jobs -----------------------------------------------------------------------------------

    async def listing(self, namespace: str | None) -> Listing:
        """The jobs' rows, read at most :attr:`poll` seconds ago: one read of the executor per
        interval however many pages and streams ask (concurrent askers wait for the same
        read), its JSON made once."""
        lock = self._locks.setdefault(namespace, asyncio.Lock())
        async with lock:
            hit = self._listings.get(namespace)
            if hit is not None and time.monotonic() - hit.at < self.poll:
                return hit

            def read(ex: Executor) -> Listing:
                try:
                    states = ex.states(namespace, pods=False)
                except ForbiddenError:
                    if namespace is not None:
                        raise
                    # Credentials that may not list every namespace: the context's own.
                    states = ex.states(ex.default_namespace, pods=False)
                rows = [views.job_row(s) for s in states]
                body = json.dumps(rows, separators=(",", ":"))
                return Listing(time.monotonic(), rows, body)

            listing = await self.executors.call(read)
            self._listings[namespace] = listing
            return listing

    def _head(self) -> str:
        return f'{{"backend":{json.dumps(self.backend)},"now":"{times.now()}","jobs":'

    async def jobs(self, request: Request) -> Response:
        ns = request.query_params.get("namespace") or None
        listing = await self.listing(ns)
        return Response(self._head() + listing.body + "}", media_type="application/json")

    async def jobs_stream(self, request: Request) -> StreamingResponse:
        ns = request.query_params.get("namespace") or None

        async def stream() -> AsyncIterator[str]:
            last: dict[tuple[str, str], dict[str, Any]] = {}
            first = True
            quiet = 0.0
            while True:
                try:
                    listing = await self.listing(ns)
                except Exception as e:  # the store or the cluster away: say so, look again
                    yield event("failed", {"message": _problem(e)})
                    await asyncio.sleep(max(self.poll, 2.0))
                    continue
                now = {(r["namespace"], r["name"]): r for r in listing.rows}
                if first:
                    yield f"event: snapshot\ndata: {self._head()}{listing.body}}}\n\n"
                    first = False
                else:
                    changed = [r for k, r in now.items() if last.get(k) != r]
                    removed = [list(k) for k in last if k not in now]
                    if changed or removed:
                        yield event(
                            "changed", {"now": times.now(), "jobs": changed, "removed": removed}
                        )
                        quiet = 0.0
                    elif quiet >= 15:
                        yield keepalive()
                        quiet = 0.0
                last = now
                await asyncio.sleep(self.poll)
                quiet += self.poll

        return StreamingResponse(stream(), media_type="text/event-stream", headers=SSE_HEADERS)

    def _detail(self, ex: Executor, ns: str, name: str) -> dict[str, Any]:
        s = ex.state(name, ns)
        return views.job_detail(
            s,
            ex.events(name, ns),
            log_location=ex.log_location(name, ns),
            outputs=ex.outputs(name, ns),
        )

    async def job(self, request: Request) -> JSONResponse:
        ns, name = _job_key(request)
        detail = await self.executors.call(lambda ex: self._detail(ex, ns, name))
        return JSONResponse({"now": times.now(), "backend": self.backend, "job": detail})

    def _samples(self, ex: Executor, ns: str, name: str, since: int) -> list[MetricSample]:
        return ex.metric_history(name, ns, since=since)

    async def metrics(self, request: Request) -> JSONResponse:
        ns, name = _job_key(request)
        samples = await self.executors.call(lambda ex: self._samples(ex, ns, name, 0))
        return JSONResponse(
            {"keepsHistory": self.keeps_history, "points": [views.sample_point(s) for s in samples]}
        )

    async def job_stream(self, request: Request) -> StreamingResponse:
        """The job's page data when it changes, and each new progress report: every report
        from the store where the executor keeps them, else each new ``trainerStatus`` seen."""
        ns, name = _job_key(request)

        def look(ex: Executor, since: int) -> tuple[dict[str, Any], list[MetricSample]]:
            detail = self._detail(ex, ns, name)
            if self.keeps_history:
                return detail, ex.metric_history(name, ns, since=since)
            sample = trainer_status_sample(ex.state(name, ns).trainjob)
            return detail, [sample] if sample is not None else []

        async def stream() -> AsyncIterator[str]:
            last: dict[str, Any] | None = None
            seen, last_time = 0, ""
            quiet = 0.0
            while True:
                try:
                    detail, samples = await self.executors.call(functools.partial(look, since=seen))
                except NotFoundError as e:
                    yield event("gone", {"message": text.printable(str(e))})
                    return
                except Exception as e:  # the store or the cluster away: say so, look again
                    yield event("failed", {"message": _problem(e)})
                    await asyncio.sleep(max(self.poll, 2.0))
                    continue
                if not self.keeps_history:
                    samples = [s for s in samples if s.time != last_time]
                    if samples:
                        last_time = samples[-1].time
                sent = False
                if detail != last:
                    yield event("detail", {"now": times.now(), "job": detail})
                    last, sent = detail, True
                if samples:
                    seen += len(samples)
                    yield event("metrics", {"points": [views.sample_point(s) for s in samples]})
                    sent = True
                quiet = 0.0 if sent else quiet + self.poll
                if quiet >= 15:
                    yield keepalive()
                    quiet = 0.0
                await asyncio.sleep(self.poll)

        # The first look fails here, as a 404, when there is no such job.
        await self.executors.call(lambda ex: ex.state(name, ns))
        return StreamingResponse(stream(), media_type="text/event-stream", headers=SSE_HEADERS)

    async def logs(self, request: Request) -> StreamingResponse:
        """One step's log as ``lines`` events (batches), then ``end``; with ``follow=1`` as the
        lines are written, across the step's restarts, until it ends."""
        ns, name = _job_key(request)
        follow = request.query_params.get("follow") in ("1", "true")
        step = request.query_params.get("step") or ""

        def which(ex: Executor) -> tuple[str, int, int]:
            s = ex.state(name, ns)
            if not step:
                from trainjob.executor.steps import default_step

                return default_step(s)
            return parse_step(step, [p.step for p in s.pods])

        job, index, job_index = await self.executors.call(which)
        stop = threading.Event()

        def open_lines() -> Any:
            # A thread of its own, and so an executor of its own (the local store's connection).
            ex = self.executors.opener()
            return ex.logs(name, ns, job, index, follow, job_index=job_index)

        async def stream() -> AsyncIterator[str]:
            try:
                async for batch in lines_of(open_lines, stop):
                    if isinstance(batch, BaseException):
                        if isinstance(batch, TrainJobError):
                            yield event("failed", {"message": text.printable(str(batch))})
                            return
                        raise batch
                    yield event("lines", {"lines": batch}) if batch else keepalive()
                yield event("end", {})
            finally:
                stop.set()

        return StreamingResponse(stream(), media_type="text/event-stream", headers=SSE_HEADERS)

    async def yaml(self, request: Request) -> PlainTextResponse:
        ns, name = _job_key(request)

        def dump(ex: Executor) -> str:
            from trainjob.api import goyaml

            return goyaml.dump_all([ex.get(name, ns).to_dict()])

        return PlainTextResponse(await self.executors.call(dump))

    async def plan(self, request: Request) -> PlainTextResponse:
        ns, name = _job_key(request)

        def plan_of(ex: Executor) -> str:
            from trainjob.runtime import compile

            tj = ex.get(name, ns)
            tj.status = None
            ref = tj.spec.runtime_ref
            kind = ref.kind or c.CLUSTER_TRAINING_RUNTIME_KIND
            rt_ns = ns if kind == c.TRAINING_RUNTIME_KIND else None
            return compile(tj, ex.get_runtime(ref.name, kind, rt_ns)).to_yaml()

        return PlainTextResponse(await self.executors.call(plan_of))

    async def action(self, request: Request) -> JSONResponse:
        ns, name = _job_key(request)
        verb = request.path_params.get("verb", "delete")
        if verb not in ("suspend", "resume", "delete"):
            raise HTTPException(404, f"no action {verb!r}: suspend, resume or delete")

        def act(ex: Executor) -> None:
            if verb == "delete":
                ex.delete(name, ns)
            elif verb == "suspend":
                ex.suspend(name, ns)
            else:
                ex.resume(name, ns)

        await self.executors.call(act)
        self._listings.clear()  # the next look shows it
        done = {"suspend": "suspended", "resume": "resumed", "delete": "deleted"}[verb]
        return JSONResponse({"message": f"{_resource(name)} {done}"})

    # -- sweeps ---------------------------------------------------------------------------------

    def _sweeps(self) -> Executors[SweepExecutor]:
        if self.sweeps is None:
            raise HTTPException(404, f"no sweeps here: {self.no_sweeps}")
        return self.sweeps

    async def sweep_list(self, request: Request) -> JSONResponse:
        ns = request.query_params.get("namespace") or None
        head = {"backend": self.backend, "now": times.now()}
        if self.sweeps is None:
            return JSONResponse({**head, "sweeps": [], "unavailable": self.no_sweeps})

        def read(ex: SweepExecutor) -> list[OptimizationJob]:
            try:
                return ex.list(ns)
            except ForbiddenError:
                if ns is not None:
                    raise
                # Credentials that may not list every namespace: the context's own.
                return ex.list(ex.default_namespace)

        jobs = await self.sweeps.call(read)
        return JSONResponse({**head, "sweeps": [sweep_views.sweep_row(j) for j in jobs]})

    async def sweep(self, request: Request) -> JSONResponse:
        ns, name = _job_key(request)

        def detail(ex: SweepExecutor) -> dict[str, Any]:
            return sweep_views.sweep_detail(ex.get(name, ns), ex.events(name, ns))

        body = await self._sweeps().call(detail)
        return JSONResponse({"now": times.now(), "backend": self.backend, "sweep": body})

    # -- runtimes -------------------------------------------------------------------------------

    async def runtimes(self, request: Request) -> JSONResponse:
        ns = request.query_params.get("namespace") or None
        rts = await self.executors.call(lambda ex: ex.list_runtimes(ns))
        return JSONResponse({"runtimes": [views.runtime_row(r) for r in rts]})

    async def runtime_text(self, request: Request) -> PlainTextResponse:
        kind, name = request.path_params["kind"], request.path_params["name"]
        what = request.path_params["what"]
        ns = request.query_params.get("namespace") or None
        nodes_param = request.query_params.get("numNodes") or ""
        if kind not in (c.CLUSTER_TRAINING_RUNTIME_KIND, c.TRAINING_RUNTIME_KIND):
            raise HTTPException(404, f"no runtime kind {kind!r}")
        if what not in ("yaml", "plan"):
            raise HTTPException(404, f"no runtime view {what!r}: yaml or plan")
        if nodes_param and not (nodes_param.isdigit() and 0 < int(nodes_param) < 1000):
            raise HTTPException(400, "numNodes: a whole number from 1 to 999")

        def render(ex: Executor) -> str:
            from trainjob.api import goyaml
            from trainjob.api.trainer import TrainJob
            from trainjob.runtime import compile

            rt = ex.get_runtime(name, kind, ns)
            if what == "yaml":
                return goyaml.dump_all([rt.to_dict()])
            spec: dict[str, Any] = {"runtimeRef": {"name": name, "kind": kind}}
            if nodes_param:
                spec["trainer"] = {"numNodes": int(nodes_param)}
            tj = TrainJob.model_validate(
                {"metadata": {"name": "example", "namespace": ns or "default"}, "spec": spec}
            )
            return compile(tj, rt).to_yaml()

        return PlainTextResponse(await self.executors.call(render))


_NO_STORE = {"cache-control": "no-store"}


_UPLOT = (
    '<link rel="stylesheet" href="/static/vendor/uPlot.min.css">\n'
    '<script src="/static/vendor/uPlot.iife.min.js" defer></script>\n'
)


def _page(name: str, title: str, head: str = "") -> Callable[[Request], Any]:
    """A page: the one frame (``page.html``) with the page's title, script ``static/NAME.js`` and
    ``head`` (constants only: the data comes from the API, set as text by its script)."""
    html = (
        (Path(__file__).parent / "page.html")
        .read_text()
        .replace("__TITLE__", title)
        .replace("__HEAD__", head)
        .replace("__PAGE__", name)
    )

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(html, headers=_NO_STORE)

    return page


def _job_key(request: Request) -> tuple[str, str]:
    return request.path_params["namespace"], request.path_params["name"]


def _resource(name: str) -> str:
    return f"trainjob.{c.GROUP}/{name}"


def _problem(e: Exception) -> str:
    """What a live stream tells the page when a look failed: a user's error as its message,
    anything else by its type too (and logged with its traceback: it may be a bug)."""
    if isinstance(e, TrainJobError):
        return text.printable(str(e))
    log.warning("dashboard: a look at the jobs failed", exc_info=e)
    return text.printable(f"{type(e).__name__}: {e}")


async def _error(request: Request, exc: Exception) -> JSONResponse:
    """A user's error as JSON, kubectl's words; the control characters of a message escaped."""
    if isinstance(exc, HTTPException):
        return JSONResponse({"error": exc.detail}, status_code=exc.status_code)
    status = 400
    if isinstance(exc, NotFoundError):
        status = 404
    elif isinstance(exc, InvalidError):
        status = 422
    elif isinstance(exc, ForbiddenError):
        status = 403
    return JSONResponse({"error": text.printable(str(exc))}, status_code=status)


def create_app(
    opener: Callable[[], Executor],
    *,
    sweeps: Callable[[], SweepExecutor] | None = None,
    token: str | None = None,
    loopback_only: bool = True,
    poll: float = 1.0,
) -> security.ASGIApp:
    """The dashboard over the executors ``opener`` makes (one per worker thread), and the sweep
    executors ``sweeps`` makes (None: no sweeps shown). ``token``: required of every request
    when given; ``loopback_only``: answer only as localhost."""
    d = Dashboard(opener, sweeps=sweeps, poll=poll)
    job = "/api/jobs/{namespace}/{name}"
    routes = [
        Route("/", _page("jobs", "Jobs"), methods=["GET"]),
        Route("/jobs/{namespace}/{name}", _page("job", "Job", _UPLOT), methods=["GET"]),
        Route("/sweeps/{namespace}/{name}", _page("sweep", "Sweep"), methods=["GET"]),
        Route("/runtimes", _page("runtimes", "Runtimes"), methods=["GET"]),
        Route("/api/jobs", d.jobs, methods=["GET"]),
        Route("/api/jobs/stream", d.jobs_stream, methods=["GET"]),
        Route(job, d.job, methods=["GET"]),
        Route(job, d.action, methods=["DELETE"]),
        Route(job + "/stream", d.job_stream, methods=["GET"]),
        Route(job + "/metrics", d.metrics, methods=["GET"]),
        Route(job + "/logs", d.logs, methods=["GET"]),
        Route(job + "/yaml", d.yaml, methods=["GET"]),
        Route(job + "/plan", d.plan, methods=["GET"]),
        Route(job + "/{verb}", d.action, methods=["POST"]),
        Route("/api/sweeps", d.sweep_list, methods=["GET"]),
        Route("/api/sweeps/{namespace}/{name}", d.sweep, methods=["GET"]),
        Route("/api/runtimes", d.runtimes, methods=["GET"]),
        Route("/api/runtimes/{kind}/{name}/{what}", d.runtime_text, methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={TrainJobError: _error, HTTPException: _error},
    )
    app.state.dashboard = d
    return security.Guard(app, token=token, loopback_only=loopback_only)
