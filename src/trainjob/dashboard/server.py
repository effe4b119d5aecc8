"""Serve the dashboard: bind, say where (and the token when bound beyond this machine), run.

The socket is bound before anything is printed, so the URL printed is one that answers (with
the port the system chose for ``--port 0``), and a port in use is a one-line error. uvicorn
serves the app in this process; Ctrl-C stops it, ending the open streams at once and quietly
(:mod:`trainjob.dashboard.closing`).
"""

from __future__ import annotations

import os
import socket
import threading
import webbrowser
from collections.abc import Callable

from trainjob.dashboard import security
from trainjob.dashboard.app import create_app
from trainjob.errors import ConfigError
from trainjob.executor.base import Executor
from trainjob.executor.sweeps import SweepExecutor

DEFAULT_PORT = 8090
TOKEN_ENV = "TRAINJOB_DASHBOARD_TOKEN"
"""A token of the user's choice (the environment, not a flag: a flag shows in the process
table); otherwise one is made at each start when the dashboard is bound beyond loopback."""


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; ConfigError naming the fix when it cannot be had."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise ConfigError(f"--host {host}: cannot resolve it: {e.strerror}") from None
    family, _, _, _, addr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
        sock.listen(128)
    except OSError as e:
        sock.close()
        hint = " (--port 0 picks a free port)" if e.errno == 98 else ""
        raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror}{hint}") from None
    sock.set_inheritable(False)
    return sock


def url_of(host: str, port: int, token: str | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = socket.gethostname()
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def serve(
    opener: Callable[[], Executor],
    *,
    sweeps: Callable[[], SweepExecutor] | None = None,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    open_browser: bool = False,
    say: Callable[[str], None] = print,
) -> None:
    """Run the dashboard until interrupted: the jobs of the executors ``opener`` makes, the
    sweeps of those ``sweeps`` makes."""
    import uvicorn

    from trainjob.dashboard.closing import EndStreams, Server

    loopback = security.is_loopback(host)
    token = os.environ.get(TOKEN_ENV) or (None if loopback else security.new_token())
    app = EndStreams(create_app(opener, sweeps=sweeps, token=token, loopback_only=loopback))
    sock = bind(host, port)
    port = sock.getsockname()[1]
    url = url_of(host, port, token)
    backend = opener().backend
    say(f"trainjob dashboard ({backend} backend): {url}")
    if not loopback:
        say(
            f"Listening on {host}:{port}, beyond this machine: every request needs the token "
            f"above (or ${TOKEN_ENV}). Anyone with it can delete your jobs."
        )
    say("Press Ctrl-C to stop.")
    if open_browser:
        threading.Timer(0.5, webbrowser.open, args=(url,)).start()
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=2,
    )
    try:
        Server(config, app).run(sockets=[sock])
    finally:
        sock.close()
