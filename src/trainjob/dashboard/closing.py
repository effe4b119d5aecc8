"""End the dashboard's open streams when it is told to stop, so Ctrl-C is quiet and quick.

A browser on the dashboard holds server-sent-event streams open (the jobs table, a job's page,
its logs) that never end by themselves. Stopping uvicorn waits for every request to finish, so
with a page open it waited ``timeout_graceful_shutdown`` seconds, then cancelled the streams
itself and logged an ``ERROR:`` line and a traceback for each: on a normal Ctrl-C. Here each
stream runs as a task this middleware can cancel: :class:`Server` (uvicorn's, told of the
signal) calls :meth:`EndStreams.close`, which cancels them; the middleware then ends each
response properly (its last, empty body chunk), and uvicorn finds nothing left to wait for.
Plain requests are left to finish as uvicorn lets them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

STREAMS = ("/stream", "/logs")
"""The ends of the paths whose responses are endless streams (app.py's SSE routes)."""


class EndStreams:
    """ASGI middleware: the streams run as tasks :meth:`close` cancels, each ending cleanly."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.tasks: set[asyncio.Task[None]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closing = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).endswith(STREAMS):
            await self.app(scope, receive, send)
            return
        self.loop = asyncio.get_running_loop()
        said = {"started": False, "ended": False}

        async def tracked(message: Message) -> None:
            if message["type"] == "http.response.start":
                said["started"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                said["ended"] = True
            await send(message)

        task: asyncio.Task[None] = asyncio.ensure_future(self.app(scope, receive, tracked))
        self.tasks.add(task)
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:  # uvicorn cancelled this request: the stream with it
            task.cancel()
            raise
        finally:
            self.tasks.discard(task)
        if not (task.cancelled() and self.closing):
            task.result()  # its own end, or its own error, as without this middleware
            return
        if not said["started"]:
            await send({"type": "http.response.start", "status": 503, "headers": []})
        if not said["ended"]:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    def close(self) -> None:
        """End every open stream (from the signal handler: the loop does the cancelling)."""
        self.closing = True
        if self.loop is not None:
            self.loop.call_soon_threadsafe(lambda: [t.cancel() for t in list(self.tasks)])


class Server(uvicorn.Server):
    """uvicorn's server, which on Ctrl-C (or SIGTERM) also ends the open streams."""

    def __init__(self, config: uvicorn.Config, streams: EndStreams) -> None:
        super().__init__(config)
        self.streams = streams

    def handle_exit(self, sig: int, frame: Any) -> None:
        super().handle_exit(sig, frame)
        self.streams.close()
