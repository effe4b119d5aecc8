"""The job model and the one executor interface every backend implements.

``model`` (JobState, PodState, Event, phases), ``base`` (the :class:`~trainjob.executor.base.
Executor` ABC, with waiting, watching and every pod's logs built once on top of it) and ``steps``
(how a pod is named to a user), and what an executor does before it compiles: ``catalog`` (the
built-in runtimes, runtime lookup, and ``admit``, the check every entry point makes) and
``sshkeys`` (an MPI job's key pair). Implementations: :mod:`trainjob.local` (processes on this
machine) and :mod:`trainjob.cluster` (a Kubernetes cluster); front ends: :mod:`trainjob.client`
(the SDK) and :mod:`trainjob.cli`. See docs/architecture.md.
"""
