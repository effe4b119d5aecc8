"""The Python SDK: ``TrainerClient`` and its types, with upstream ``kubeflow.trainer`` names.

Modules: ``types`` (trainers, initializers, returned dataclasses), ``options`` (``train``
options), ``function`` (shipping a Python function), ``builder`` (arguments -> TrainJob),
``runtimes`` (runtime objects -> ``Runtime``), ``status`` (status rule and wait loop),
``progress`` (wait display), ``config`` (backend configs and the default-backend rule),
``backends/`` (``local``, ``kubernetes``), ``client`` (the facade). Users import from
``trainjob``.
"""
