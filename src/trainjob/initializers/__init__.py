"""The dataset and model initializers: fetch a dataset or a model before training starts.

Upstream Kubeflow Trainer ships them as the images ``dataset-initializer`` and
``model-initializer``; a TrainJob's ``spec.initializer.dataset|model`` runs one as the
``dataset-initializer`` / ``model-initializer`` step, before the ``node`` step. Here they are
``python -m trainjob.initializers.dataset`` and ``python -m trainjob.initializers.model``, run by a
container on a cluster or by the local backend as a process, both driven by the same env:
``STORAGE_URI`` plus the upper-cased initializer fields (``config`` parses them).

This package runs inside a container, so it imports nothing from ``trainjob.local``,
``trainjob.controller``, ``trainjob.client`` or ``trainjob.cli``; boto3 and huggingface_hub are
imported only by the source that needs them (``sources.s3``, ``sources.hf``).
"""
