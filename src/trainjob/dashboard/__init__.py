"""``trainjob dashboard``: a web app over the executor interface (either backend).

``app`` (the Starlette app: pages, JSON API, server-sent event streams), ``views`` (the job
model as the pages show it, pure), ``streams`` (SSE and blocking iterators read from async
code), ``security`` (loopback by default, a token beyond it, CSP, no CSRF), ``server`` (bind,
print the URL, run uvicorn). The pages are static files under ``static/`` with uPlot (MIT,
``static/vendor/``) for the curves: shipped inside the wheel, nothing fetched from a CDN, no
build step. Like the CLI and the SDK it acts through :class:`trainjob.executor.base.Executor`
only, so it knows no backend (``.importlinter``).
"""
