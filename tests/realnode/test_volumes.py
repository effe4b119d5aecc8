"""A PersistentVolumeClaim of the cluster's default StorageClass (kube-controller-manager's
hostPath provisioner, whose directory is on this machine, where the real node is) is written by
one pod and read by the next, as a TrainJob's initializers write the volume its trainer reads."""

from __future__ import annotations

from typing import Any

from tests.integration.controller_harness import wait_for
from tests.realnode.conftest import RealCluster
from tests.realnode.test_node import finished, pod
from trainjob.kube import resources as r

PVCS = r.Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")


def with_volume(spec: dict[str, Any]) -> dict[str, Any]:
    spec["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    spec["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    return spec


def test_a_claim_written_by_one_pod_is_read_by_the_next(
    real_cluster: RealCluster, real_ns: str
) -> None:
    real_cluster.kube.create(
        PVCS,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": real_ns},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    write = (
        "import pathlib; pathlib.Path('/data/model.txt').write_text('weights v1'); print('wrote')"
    )
    read = "import pathlib; print('read', pathlib.Path('/data/model.txt').read_text())"
    real_cluster.kube.create(r.PODS, with_volume(pod(real_cluster, "writer", real_ns, write)))
    done = wait_for(lambda: finished(real_cluster, "writer", real_ns), timeout=120, what="writer")
    assert done["status"]["phase"] == "Succeeded", real_cluster.kube.logs("writer", real_ns)
    real_cluster.kube.create(r.PODS, with_volume(pod(real_cluster, "reader", real_ns, read)))
    done = wait_for(lambda: finished(real_cluster, "reader", real_ns), timeout=120, what="reader")
    log = "\n".join(real_cluster.kube.logs("reader", real_ns))
    assert done["status"]["phase"] == "Succeeded", log
    assert "read weights v1" in log
