"""Katib's stdout metrics collector, inside a shipped trial function: ``name=value`` lines become
progress reports (``status.trainerStatus.metrics``).

A trial function written for Katib prints its metrics (``print(f"loss={loss}")``) and Katib's
default collector reads them from the container's stdout with the regular expression
:data:`PATTERN`. A sweep's trials report through the TrainJob status endpoint instead (KEP-2779,
``update_trainjob_status``), so the function the OptimizerClient ships
(:func:`trainjob.client.function.ship` with ``collect_metrics``) runs
:func:`collect_stdout_metrics` first: it wraps ``sys.stdout`` (every line is still printed),
and each line with matches reports every metric seen so far, latest values, in order, from a
background thread (the training never waits on a post); at exit the last report is sent before
the process ends. Rank 0 only, as upstream's reporters; a no-op outside a TrainJob.

Its source is copied into the shipped script (the trial's image need not have trainjob), so the
function is self-contained: standard library only, everything inside it.
"""

from __future__ import annotations

PATTERN = r"([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)"
"""Katib's default ``StdOut`` metrics format (``pkg/metricscollector/v1beta1/common``)."""


def collect_stdout_metrics() -> None:
    """Report ``name=value`` lines of stdout as metrics (see the module docstring)."""
    import atexit
    import contextlib
    import http.client
    import json
    import os
    import queue
    import re
    import ssl
    import sys
    import threading
    from datetime import datetime, timezone
    from urllib.parse import urlsplit

    url = os.environ.get("KUBEFLOW_TRAINER_SERVER_URL")
    if not url or os.environ.get("RANK", "0") not in ("", "0"):
        return
    pattern = re.compile(r"([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)")
    parts = urlsplit(url)
    target = parts.path or "/"
    ca = os.environ.get("KUBEFLOW_TRAINER_SERVER_CA_CERT")
    token_file = os.environ.get("KUBEFLOW_TRAINER_SERVER_TOKEN")
    reports: queue.SimpleQueue[dict[str, str] | None] = queue.SimpleQueue()
    latest: dict[str, str] = {}
    conn: list[http.client.HTTPConnection] = []

    def post(metrics: dict[str, str]) -> None:
        try:
            with open(token_file or "") as f:
                token = f.read().strip()
            if not conn:
                if parts.scheme == "https":
                    ctx = ssl.create_default_context(
                        cafile=ca if ca and os.path.exists(ca) else None
                    )
                    conn.append(
                        http.client.HTTPSConnection(
                            parts.hostname or "", parts.port, timeout=5, context=ctx
                        )
                    )
                else:
                    conn.append(
                        http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)
                    )
            body = json.dumps(
                {
                    "trainerStatus": {
                        "lastUpdatedTime": datetime.now(timezone.utc).isoformat(),  # noqa: UP017 (3.10 images)
                        "metrics": [{"name": k, "value": v} for k, v in metrics.items()][:256],
                    }
                }
            ).encode()
            c = conn[0]
            c.request(
                "POST", target, body=body,
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            )  # fmt: skip
            c.getresponse().read()
        except Exception:  # never breaks the training: the next report tries again
            if conn:
                conn.pop().close()

    def sender() -> None:
        while True:
            metrics = reports.get()
            if metrics is None:
                return
            post(metrics)

    thread = threading.Thread(target=sender, name="trainjob-stdout-metrics", daemon=True)
    thread.start()

    class Collector:
        """``sys.stdout``, with each complete line read for ``name=value`` metrics."""

        def __init__(self, stream: object) -> None:
            self._stream = stream
            self._partial = ""

        def write(self, text: str) -> int:
            n = self._stream.write(text)  # type: ignore[attr-defined]
            lines = (self._partial + text).split("\n")
            self._partial = lines.pop()[-4096:]
            for line in lines:
                self.scan(line)
            return int(n)

        def scan(self, line: str) -> None:
            found = {m[0]: m[1] for m in pattern.findall(line) if m[1] not in ("", "+", "-")}
            if found:
                latest.update(found)
                reports.put(dict(latest))

        def __getattr__(self, name: str) -> object:
            return getattr(self._stream, name)

    sys.stdout = Collector(sys.stdout)

    def finish() -> None:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        out = sys.stdout
        if isinstance(out, Collector) and out._partial:
            out.scan(out._partial)  # a last line printed without its newline
        reports.put(None)
        thread.join(timeout=10)

    atexit.register(finish)
