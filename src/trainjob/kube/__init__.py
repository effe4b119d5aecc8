"""A small typed, synchronous Kubernetes REST client, shared by the controller and SDK.

``Client`` (``client.py``) does get/list/watch/create/replace/apply/patch/delete on plain dict
objects; ``config.py`` reads kubeconfig files and the in-cluster service account;
``resources.py`` names the resource types; ``errors.py`` is the ApiError tree; ``retry.py`` has
backoff helpers; ``events.py`` records Events; ``watch.py`` parses watch streams.

Beside the client, the machinery a controller is built from that knows no TrainJob (client-go
keeps it apart from any controller the same way): ``informer.py`` (list+watch into a cache,
with handlers), ``queue.py`` (the rate-limited work queue), ``leader.py`` (Lease-based leader
election) and ``http.py`` (the HTTP/HTTPS server for webhooks, probes and metrics).
:mod:`trainjob.controller` holds what a TrainJob reconcile needs on top of these. ``certs.py``
makes the certificates those TLS servers (and the local backend's status server) serve with.

The client's names are imported on first use, so a process that needs only ``certs`` (a local
job's supervisor) does not load the client.
"""

from trainjob import lazy
from trainjob.kube import errors, resources

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see trainjob.lazy)
if TYPE_CHECKING:
    from trainjob.kube.client import FIELD_MANAGER, Client
    from trainjob.kube.config import Config, load

_EXPORTS = {
    "FIELD_MANAGER": "trainjob.kube.client",
    "Client": "trainjob.kube.client",
    "Config": "trainjob.kube.config",
    "load": "trainjob.kube.config",
}
__all__ = ["FIELD_MANAGER", "Client", "Config", "errors", "load", "resources"]
__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS)
