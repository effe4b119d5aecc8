"""A small typed, synchronous Kubernetes REST client (httpx), shared by the controller and SDK.

``Client`` (``client.py``) does get/list/watch/create/replace/apply/patch/delete on plain dict
objects; ``config.py`` reads kubeconfig files and the in-cluster service account;
``resources.py`` names the resource types; ``errors.py`` is the ApiError tree; ``retry.py`` has
backoff helpers; ``events.py`` records Events; ``watch.py`` parses watch streams.
"""

from trainjob.kube import errors, resources
from trainjob.kube.client import FIELD_MANAGER, Client
from trainjob.kube.config import Config, load

__all__ = ["FIELD_MANAGER", "Client", "Config", "errors", "load", "resources"]
