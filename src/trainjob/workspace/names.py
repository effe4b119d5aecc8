"""The names a workspace snapshot goes by, and the script that unpacks one in a pod.

Pure data, read by the compiler's Workspace plugin (which may do no I/O), the front ends that
annotate a TrainJob, and the backends that store and unpack the archive:

* the TrainJob's annotations: :data:`DIGEST` (``sha256:<hex>`` of the archive's tar stream, the
  snapshot's name), :data:`SOURCE` (the folder it was packed from, for ``describe``) and,
  optionally, :data:`URI` (an ``s3://`` object the archive was put at, when it is too large for
  a ConfigMap or the user asks for one);
* the ConfigMap that holds the archive on a cluster (:func:`configmap_name`, key
  :data:`ARCHIVE_KEY`, owned by the TrainJob so that deleting the job collects it);
* the volumes, mount paths and init container of a trainer pod;
* :data:`UNPACK_SCRIPT`: stdlib-only Python that checks the digest and every member's name
  (relative, no ``..``, files and directories only) before writing anything, so it runs in any
  trainer image with ``python3`` (``python3 -c SCRIPT ARCHIVE DEST DIGEST``); the local backends
  run the same code in-process (:mod:`trainjob.workspace.unpack`).
"""

from __future__ import annotations

import re

DIGEST = "trainer.kubeflow.org/workspace-digest"
SOURCE = "trainer.kubeflow.org/workspace-source"
URI = "trainer.kubeflow.org/workspace-uri"

DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")

VOLUME = "trainjob-workspace"
ARCHIVE_VOLUME = "trainjob-workspace-archive"
MOUNT_PATH = "/trainjob/workspace"
ARCHIVE_MOUNT_PATH = "/trainjob/workspace-archive"
ARCHIVE_KEY = "workspace.tar.gz"
INIT_CONTAINER = "workspace"

DEFAULT_LIMIT = 100 * 1024 * 1024
"""The most a folder may hold (the sum of its files' sizes), unless ``$TRAINJOB_WORKSPACE_LIMIT``
or the option's ``max_size`` says otherwise."""
ENV_LIMIT = "TRAINJOB_WORKSPACE_LIMIT"

CONFIGMAP_LIMIT = 1024 * 1024 - 16 * 1024
"""The largest compressed archive a ConfigMap holds: the apiserver refuses more than 1 MiB of
data in one (``binaryData`` counts its decoded bytes), less room for the metadata."""


def configmap_name(trainjob_name: str) -> str:
    """The ConfigMap of a TrainJob's workspace archive."""
    return f"{trainjob_name}-workspace"


def hexdigest(digest: str) -> str:
    """``sha256:<hex>`` -> ``<hex>`` (the name of a local copy's directory)."""
    return digest.split(":", 1)[1]


UNPACK_SCRIPT = r'''
import gzip, hashlib, io, os, shutil, sys, tarfile


def extract(data, dest, digest):
    """Unpack the gzip'd tar ``data`` into the directory ``dest``, once its digest is checked."""
    raw = gzip.decompress(data)
    got = "sha256:" + hashlib.sha256(raw).hexdigest()
    if got != digest:
        raise ValueError(f"workspace archive is {got}, not {digest}: it is not the one submitted")
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        members = tar.getmembers()
        for m in members:
            parts = m.name.split("/")
            if (m.name.startswith("/") or "\\" in m.name or "\0" in m.name
                    or any(p in ("", ".", "..") for p in parts)):
                raise ValueError(f"workspace archive member {m.name!r}: must be a relative "
                                 "path inside the workspace")
            if not (m.isfile() or m.isdir()):
                raise ValueError(f"workspace archive member {m.name!r}: must be a file or a "
                                 "directory")
        os.makedirs(dest, exist_ok=True)
        root = os.path.realpath(dest)
        nofollow = getattr(os, "O_NOFOLLOW", 0)
        for m in members:
            path = os.path.join(root, *m.name.split("/"))
            parent = path if m.isdir() else os.path.dirname(path)
            os.makedirs(parent, exist_ok=True)
            if os.path.realpath(parent) != parent:
                raise ValueError(f"workspace archive member {m.name!r}: its folder is a link")
            if m.isdir():
                continue
            mode = 0o755 if m.mode & 0o111 else 0o644
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | nofollow, mode)
            with os.fdopen(fd, "wb") as out, tar.extractfile(m) as src:
                shutil.copyfileobj(src, out)
    return len(members)


if __name__ == "__main__":
    archive, dest, digest = sys.argv[1:4]
    with open(archive, "rb") as f:
        n = extract(f.read(), dest, digest)
    print(f"workspace {digest}: {n} entries unpacked into {dest}")
'''
"""``python3 -c UNPACK_SCRIPT ARCHIVE DEST DIGEST``; ``extract(data, dest, digest)`` in-process."""
