"""TrainJobStatus: the env and volume with which a trainer reports progress (upstream
``plugins/trainjobstatus``, KEP-2779).

When the executor serves the TrainJob status endpoint (``CompileOptions.status_server``; the
controller does unless started with ``--status-server=false``), every container of the trainer
job gets upstream's env — ``KUBEFLOW_TRAINER_SERVER_URL`` (the server's base URL and the
TrainJob's path), ``KUBEFLOW_TRAINER_SERVER_CA_CERT`` and ``KUBEFLOW_TRAINER_SERVER_TOKEN`` (files
under ``/var/run/secrets/kubeflow/trainer``) — and that mount of the projected volume
``kubeflow-trainer-token``: a ServiceAccount token for the endpoint's audience (expiring after
3600 s; the kubelet renews it) and ``ca.crt``, the server's CA.

Where ``ca.crt`` comes from is trainjob's own (a deliberate difference, with the same files and
env for the trainer): upstream plans a ConfigMap ``<trainjob>-tls-config`` per TrainJob and
projects it; here the CA rides in the trainer pod template's annotation
:data:`~trainjob.core.trainerstatus.CA_ANNOTATION` and the volume projects that annotation
through the downward API. So a TrainJob costs the apiserver no ConfigMap write (in a burst of 500
it was a third of the controller's writes until the last JobSet, and admission waited behind
them), nothing is left to own, garbage-collect or recreate, and the kubelet watches no ConfigMap
per TrainJob; the JobSet and its pods carry the CA's ~1 KiB instead. A CA that rotates reaches
pods made afterwards, as upstream's ConfigMap, made once, reaches none.

Upstream injects in ``EnforceMLPolicy``; here the options reach the plugin in ``build``, which
runs before the JobSet plugin's (the registry's order) and edits the trainer pod set it then
builds from. Without ``status_server`` the plugin does nothing (upstream's feature gate off; the
local backend, whose supervisor serves the endpoint itself).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainjob.api import constants as c
from trainjob.api.trainer import TrainJob
from trainjob.core import trainerstatus as ts
from trainjob.runtime.compileoptions import StatusServer
from trainjob.runtime.info import Info, Obj, upsert_by, upsert_env
from trainjob.runtime.kinds import Kind

if TYPE_CHECKING:
    from trainjob.runtime.compileoptions import CompileOptions

__all__ = ["NAME", "StatusServer", "TrainJobStatus", "env"]

NAME = "TrainJobStatus"


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
                    "downwardAPI": {
                        "items": [
                            {
                                "path": ts.CA_CERT_FILE,
                                "fieldRef": {
                                    "apiVersion": "v1",
                                    "fieldPath": f"metadata.annotations['{ts.CA_ANNOTATION}']",
                                },
                            }
                        ]
                    }
                },
            ]
        },
    }


class TrainJobStatus:
    name = NAME

    def kinds(self) -> tuple[Kind, ...]:
        """None: the env, the volume and the CA go into the JobSet."""
        return ()

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
        pod_template = trainer.rjob["template"]["spec"]["template"]
        pod_template.setdefault("metadata", {}).setdefault("annotations", {})[ts.CA_ANNOTATION] = (
            server.ca_cert
        )
        return []
