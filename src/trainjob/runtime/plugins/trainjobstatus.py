"""TrainJobStatus: the env and volume with which a trainer reports progress (upstream
``plugins/trainjobstatus``, KEP-2779).

When the executor serves the TrainJob status endpoint (``CompileOptions.status_server``; the
controller does unless started with ``--status-server=false``), every container of the trainer
job gets upstream's env — ``KUBEFLOW_TRAINER_SERVER_URL`` (the server's base URL and the
TrainJob's path), ``KUBEFLOW_TRAINER_SERVER_CA_CERT`` and ``KUBEFLOW_TRAINER_SERVER_TOKEN`` (files
under ``/var/run/secrets/kubeflow/trainer``) — and that mount of the projected volume
``kubeflow-trainer-token``: a ServiceAccount token for the endpoint's audience (expiring after
3600 s; the kubelet renews it) and ``ca.crt`` from the ConfigMap ``<trainjob>-tls-config``, which
``build`` plans (the server's CA, owned by the TrainJob).

Upstream injects in ``EnforceMLPolicy``; here the options reach the plugin in ``build``, which
runs before the JobSet plugin's (the registry's order) and edits the trainer pod set it then
builds from. Without ``status_server`` the plugin does nothing (upstream's feature gate off; the
local backend, whose supervisor serves the endpoint itself).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainjob.api import constants as c
from trainjob.api.trainer import TrainJob
from trainjob.core import trainerstatus as ts
from trainjob.runtime.info import Info, Obj, upsert_by, upsert_env
from trainjob.runtime.kinds import CONFIGMAP, Kind
from trainjob.runtime.plugins.jobset import owned_meta

if TYPE_CHECKING:
    from trainjob.runtime.compiler import CompileOptions

NAME = "TrainJobStatus"


@dataclass(frozen=True)
class StatusServer:
    """Where the executor serves the endpoint: ``base_url`` (``https://host:port``) and the PEM
    CA certificate its serving certificate chains to."""

    base_url: str
    ca_cert: str


def env(trainjob: TrainJob, server: StatusServer) -> list[Obj]:
    ns, name = trainjob.metadata.namespace or "default", trainjob.metadata.name or ""
    return [
        {"name": ts.ENV_SERVER_URL, "value": server.base_url.rstrip("/") + ts.path(ns, name)},
        {"name": ts.ENV_CA_CERT, "value": f"{ts.MOUNT_PATH}/{ts.CA_CERT_FILE}"},
        {"name": ts.ENV_TOKEN, "value": f"{ts.MOUNT_PATH}/{ts.TOKEN_FILE}"},
    ]


def volume(trainjob: TrainJob) -> Obj:
    ns, name = trainjob.metadata.namespace or "default", trainjob.metadata.name or ""
    return {
        "name": ts.TOKEN_VOLUME,
        "projected": {
            "sources": [
                {
                    "serviceAccountToken": {
                        "audience": ts.audience(ns, name),
                        "expirationSeconds": ts.TOKEN_EXPIRY_SECONDS,
                        "path": ts.TOKEN_FILE,
                    }
                },
                {
                    "configMap": {
                        "name": ts.tls_config_map(name),
                        "items": [{"key": ts.CA_CERT_KEY, "path": ts.CA_CERT_FILE}],
                    }
                },
            ]
        },
    }


class TrainJobStatus:
    name = NAME

    def kinds(self) -> tuple[Kind, ...]:
        """The CA ConfigMap (applied like every ConfigMap of a Plan)."""
        return (CONFIGMAP,)

    def build(self, info: Info, trainjob: TrainJob, options: CompileOptions) -> list[Obj]:
        server = options.status_server
        if server is None:
            return []
        trainer = info.pod_set_by_ancestor(c.ANCESTOR_TRAINER)
        if trainer is None:
            return []
        mount = {"name": ts.TOKEN_VOLUME, "mountPath": ts.MOUNT_PATH, "readOnly": True}
        for ctr in trainer.containers:
            upsert_env(ctr.setdefault("env", []), *env(trainjob, server))
            upsert_by(ctr.setdefault("volumeMounts", []), "name", mount)
        upsert_by(trainer.pod_spec.setdefault("volumes", []), "name", volume(trainjob))
        return [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": owned_meta(trainjob, ts.tls_config_map(trainjob.metadata.name or "")),
                "data": {ts.CA_CERT_KEY: server.ca_cert},
            }
        ]
