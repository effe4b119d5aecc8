"""A workspace archive as an ``s3://`` object, put by the submitter (the init container gets it
with :data:`trainjob.workspace.names.UNPACK_SCRIPT`'s own signed GET, in any image).

For an archive too large for a ConfigMap, or when the user names a place
(``--workdir-uri s3://bucket/prefix``, ``Workspace(..., storage_uri=...)``), the archive is put
at ``<prefix>/<hex digest>.tar.gz`` (:func:`object_uri`): content-addressed, so a second submit
of the same folder puts nothing and a rerun of the TrainJob finds its code as long as the
object stays. The S3 client is the initializers' (:func:`trainjob.initializers.sources.s3.
make_client`): upstream's ``ENDPOINT``, ``ACCESS_KEY_ID``, ``SECRET_ACCESS_KEY``, ``REGION``,
``ROLE_ARN`` when set, else boto3's own chain (``AWS_*``, a profile, a pod's role); its errors
are one line, and no secret enters a message. Needs boto3 (trainjob's ``initializers`` extra).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from trainjob.errors import ConfigError
from trainjob.workspace import names


def object_uri(prefix: str, digest: str) -> str:
    """Where the archive of ``digest`` goes under ``prefix`` (an ``s3://bucket[/path]``)."""
    if not prefix.startswith("s3://") or not prefix[5:].split("/", 1)[0]:
        raise ConfigError(
            f"workspace storage URI {prefix!r}: must be s3://bucket or s3://bucket/prefix"
        )
    return f"{prefix.rstrip('/')}/{names.hexdigest(digest)}.tar.gz"


def _client(uri: str, env: Mapping[str, str] | None) -> tuple[Any, Any, str, str]:
    try:
        from trainjob.initializers import config
        from trainjob.initializers.sources import s3
    except ImportError as e:  # boto3 is optional
        raise ConfigError(
            f"workspace {uri}: {e}: install trainjob's initializers extra (boto3)"
        ) from None
    env = os.environ if env is None else env
    cfg = config.from_env(config.Kind.DATASET, {**env, config.STORAGE_URI_ENV: uri})
    bucket, key = s3.parse_uri(uri)
    try:
        return s3.make_client(cfg), cfg, bucket, key
    except config.InitializerError as e:
        raise ConfigError(f"workspace {uri}: {e}") from None


def _explain(exc: Exception, cfg: Any, bucket: str, uri: str) -> ConfigError:
    from trainjob.initializers.sources import s3

    return ConfigError(f"workspace {uri}: {s3.explain(exc, cfg, bucket, uri)}")


def put(uri: str, archive: bytes, digest: str, env: Mapping[str, str] | None = None) -> bool:
    """Put ``archive`` at ``uri`` unless an object is there already; whether it was put."""
    client, cfg, bucket, key = _client(uri, env)
    exceptions: Any = __import__("botocore.exceptions", fromlist=["ClientError"])
    try:
        client.head_object(Bucket=bucket, Key=key)
        return False
    except exceptions.ClientError as e:
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status != 404 and e.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey"):
            raise _explain(e, cfg, bucket, uri) from None
    except Exception as e:  # botocore's connection errors
        raise _explain(e, cfg, bucket, uri) from None
    try:
        client.put_object(Bucket=bucket, Key=key, Body=archive, Metadata={"digest": digest})
    except Exception as e:
        raise _explain(e, cfg, bucket, uri) from None
    return True
