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
* :data:`UNPACK_SCRIPT`: stdlib-only Python that reads the archive (a file, or an ``s3://``
  object with a Signature V4 GET), checks the digest and every member's name (relative, no
  ``..``, files and directories only) before writing anything, so it runs in any trainer image
  with ``python3`` (``python3 -c SCRIPT SOURCE DEST DIGEST``); the local backends run the same
  code in-process (:mod:`trainjob.workspace.unpack`).
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


def s3_request(uri, env, now):
    """(url, headers) of a GET of ``uri`` (``s3://bucket/key``), signed with AWS Signature V4
    when ``env`` has keys (upstream's ``ACCESS_KEY_ID``/``SECRET_ACCESS_KEY``/``ENDPOINT``/
    ``REGION``, else ``AWS_*``); path-style at ``ENDPOINT``, virtual-hosted at AWS."""
    import hmac, urllib.parse
    bucket, _, key = uri[len("s3://"):].partition("/")
    endpoint = env.get("ENDPOINT") or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    region = (env.get("REGION") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
              or "us-east-1")
    path = "/" + urllib.parse.quote(key, safe="/-_.~")
    if endpoint:
        base, path = endpoint.rstrip("/"), "/" + urllib.parse.quote(bucket, safe="-_.~") + path
    else:
        base = f"https://{bucket}.s3.{region}.amazonaws.com"
    key_id = env.get("ACCESS_KEY_ID") or env.get("AWS_ACCESS_KEY_ID")
    secret = env.get("SECRET_ACCESS_KEY") or env.get("AWS_SECRET_ACCESS_KEY")
    if not (key_id and secret):
        return base + path, {}
    amz, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    headers = {"host": urllib.parse.urlsplit(base).netloc, "x-amz-date": amz,
               "x-amz-content-sha256": hashlib.sha256(b"").hexdigest()}
    if env.get("AWS_SESSION_TOKEN"):
        headers["x-amz-security-token"] = env["AWS_SESSION_TOKEN"]
    signed = ";".join(sorted(headers))
    canonical = "\n".join(["GET", path, "", *(f"{k}:{headers[k]}" for k in sorted(headers)), "",
                           signed, headers["x-amz-content-sha256"]])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (day, region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={key_id}/{scope}, "
                                f"SignedHeaders={signed}, Signature={signature}")
    del headers["host"]  # urllib sends it
    return base + path, headers


def read(source, env):
    """The archive's bytes: a file, or an ``s3://`` object (what the error says names no key)."""
    if not source.startswith("s3://"):
        with open(source, "rb") as f:
            return f.read()
    import datetime, urllib.error, urllib.request
    url, headers = s3_request(source, env, datetime.datetime.now(datetime.timezone.utc))
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=300) as r:
            return r.read()
    except urllib.error.HTTPError as e:
        raise ValueError(f"GET {source}: {e.code} {e.reason}: check the URI, ENDPOINT and "
                         "ACCESS_KEY_ID/SECRET_ACCESS_KEY in the trainer's env") from None
    except OSError as e:
        raise ValueError(f"GET {source}: {e}: check ENDPOINT in the trainer's env") from None


if __name__ == "__main__":
    source, dest, digest = sys.argv[1:4]
    try:
        n = extract(read(source, os.environ), dest, digest)
    except (ValueError, OSError, EOFError, tarfile.TarError) as e:
        sys.exit(f"error: workspace {digest}: {e}")
    print(f"workspace {digest}: {n} entries unpacked into {dest}")
'''
"""``python3 -c UNPACK_SCRIPT ARCHIVE|s3://BUCKET/KEY DEST DIGEST``; ``extract(data, dest, digest)``
and ``s3_request(uri, env, now)`` in-process."""
