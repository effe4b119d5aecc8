"""The container backend: a TrainJob's pods as containers of their images (podman or docker).

The local executor and supervisor are the same as for processes; only how a pod starts, stops and
is waited for changes (:mod:`trainjob.local.job.runner`). ``settings`` holds what is stored with a
job, ``engine`` the engine's command line, ``pod`` a pod's containers as command lines, ``runner``
the pod runner itself.
"""

from trainjob.local.job.containers import engine
from trainjob.local.job.containers.runner import ContainerRunner, clean_up_job
from trainjob.local.job.containers.settings import ContainerSettings, Mount

__all__ = ["ContainerRunner", "ContainerSettings", "Mount", "clean_up_job", "engine"]
