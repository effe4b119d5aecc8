"""The client side of the local backend: what the CLI, the SDK and the dashboard call.

``executor`` (:class:`~trainjob.local.client.executor.LocalExecutor`, the entry point) over its
parts: ``admission`` (what a submit checks, the first rows), ``launch`` (starting the supervisor),
``liveness`` (a supervisor that died), ``views`` (stored rows as the job model), ``follow``
(following a log across restarts), ``deletion``, ``runtimes`` (built-in and stored) and ``limits``.
It may use the job side's pod model (:mod:`trainjob.local.job`: a submit checks pods the way the
supervisor will run them) and the state both share (:mod:`trainjob.local.state`); the job side
never imports this package (``.importlinter``).
"""
