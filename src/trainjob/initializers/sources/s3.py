"""The ``s3://bucket/prefix`` source: every object under a prefix, from any S3-compatible store.

Called by ``command.fetch``. Talks to AWS S3 or any S3-compatible endpoint (MinIO, Ceph, GCS
interop, ...) through boto3, configured by upstream's fields: ``ENDPOINT``, ``ACCESS_KEY_ID``,
``SECRET_ACCESS_KEY``, ``REGION``, ``ROLE_ARN``. Without keys boto3's usual chain applies (an IAM
role for the pod, ``AWS_*`` env, a profile); with no credentials at all, requests go unsigned,
which reads public buckets. With ``ROLE_ARN`` the credentials are exchanged for the role's via STS
(at ``ENDPOINT`` when set: MinIO serves STS there).

``s3://bucket/data`` fetches the objects under ``data/`` keeping their paths relative to it;
when there are none and ``data`` is itself an object, that one file. Objects are fetched in
parallel by a small thread pool. A file already present is skipped only when its content is the
object's (its size, and its ETag: the MD5 of a single-part upload, or of its parts), so a file of
the right size but wrong content is fetched again. A download cut short (Ctrl-C, a dropped
connection) keeps its ``.part`` file and the object's ETag beside it; the next run asks for the
rest with an HTTP range, ``If-Match`` that ETag, so a changed object starts over. boto3's errors
become one-line ``InitializerError``s naming the env var to fix; secrets never enter a message.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from trainjob.initializers import config, transfer

log = logging.getLogger(__name__)

WORKERS = 8
CHUNK = 1 << 20
DEFAULT_REGION = "us-east-1"
ROLE_SESSION_NAME = "trainjob-initializer"
_Error = config.InitializerError


def parse_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` as (bucket, prefix without a leading ``/``)."""
    parsed = urlparse(uri)
    if not parsed.netloc:
        raise _Error(
            f"{config.STORAGE_URI_ENV}: {uri!r} names no bucket: use s3://bucket or s3://bucket/prefix"
        )
    return parsed.netloc, parsed.path.lstrip("/")


def make_client(cfg: config.Config) -> Any:
    """A boto3 S3 client for ``cfg``: endpoint, keys or role, region, retries, pool size.

    boto3 ships no type hints, so clients are ``Any`` here.
    """
    boto3: Any = importlib.import_module("boto3")
    botocore_config: Any = importlib.import_module("botocore.config")
    botocore: Any = importlib.import_module("botocore")
    if bool(cfg.access_key_id) != bool(cfg.secret_access_key):
        missing = "SECRET_ACCESS_KEY" if cfg.access_key_id else "ACCESS_KEY_ID"
        raise _Error(f"{missing}: not set: ACCESS_KEY_ID and SECRET_ACCESS_KEY go together")
    session = boto3.session.Session(
        aws_access_key_id=cfg.access_key_id,
        aws_secret_access_key=cfg.secret_access_key,
        region_name=cfg.region,
    )
    region = cfg.region or session.region_name or DEFAULT_REGION
    options: dict[str, Any] = {
        "retries": {"max_attempts": 5, "mode": "standard"},
        "max_pool_connections": WORKERS * 2,
    }
    if cfg.endpoint:
        options["s3"] = {"addressing_style": "path"}
    if cfg.role_arn:
        session = assume_role(boto3, session, cfg, region)
    elif session.get_credentials() is None:
        options["signature_version"] = botocore.UNSIGNED
    try:
        return session.client(
            "s3",
            endpoint_url=cfg.endpoint,
            region_name=region,
            config=botocore_config.Config(**options),
        )
    except ValueError as exc:
        raise _Error(
            f"ENDPOINT: {cfg.endpoint!r} is not a valid endpoint URL ({exc}): "
            "use http(s)://host[:port]"
        ) from None


def assume_role(boto3: Any, session: Any, cfg: config.Config, region: str) -> Any:
    """A session with ``ROLE_ARN``'s temporary credentials, obtained with ``session``'s."""
    exceptions: Any = importlib.import_module("botocore.exceptions")
    sts = session.client("sts", endpoint_url=cfg.endpoint, region_name=region)
    try:
        creds = sts.assume_role(RoleArn=cfg.role_arn, RoleSessionName=ROLE_SESSION_NAME)[
            "Credentials"
        ]
    except exceptions.ClientError as exc:
        error = exc.response.get("Error", {})
        raise _Error(
            f"ROLE_ARN: cannot assume role {cfg.role_arn!r}: {error.get('Code')}: "
            f"{error.get('Message')}: check ROLE_ARN and that the credentials may assume it"
        ) from None
    except exceptions.BotoCoreError as exc:
        raise _Error(f"ROLE_ARN: cannot assume role {cfg.role_arn!r}: {exc}") from None
    return boto3.session.Session(
        aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"],
        region_name=region,
    )


def explain(exc: Exception, cfg: config.Config, bucket: str, what: str) -> _Error:
    """A one-line ``InitializerError`` for a boto3 error met while fetching ``what``."""
    exceptions: Any = importlib.import_module("botocore.exceptions")
    where = f" at {cfg.endpoint}" if cfg.endpoint else ""
    if isinstance(exc, exceptions.ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code == "NoSuchBucket":
            return _Error(
                f"{config.STORAGE_URI_ENV}: bucket {bucket!r} does not exist{where}: "
                f"check the bucket name in {config.STORAGE_URI_ENV} (and ENDPOINT)"
            )
        if code in ("InvalidAccessKeyId", "InvalidClientTokenId"):
            return _Error(
                f"ACCESS_KEY_ID: the S3 endpoint{where} does not know this access key: "
                "check ACCESS_KEY_ID and SECRET_ACCESS_KEY"
            )
        if code == "SignatureDoesNotMatch":
            return _Error(
                f"SECRET_ACCESS_KEY: the request signature does not match{where}: "
                "check SECRET_ACCESS_KEY (and ACCESS_KEY_ID)"
            )
        if code in ("AccessDenied", "AllAccessDisabled", "403") or status == 403:
            return _Error(
                f"ACCESS_KEY_ID: access denied to {what}{where}: set ACCESS_KEY_ID and "
                "SECRET_ACCESS_KEY (or ROLE_ARN) of an identity allowed s3:ListBucket and s3:GetObject"
            )
        if code in ("NoSuchKey", "404") or status == 404:
            return _Error(
                f"{config.STORAGE_URI_ENV}: no object or prefix {what}{where}: check the URI"
            )
        return _Error(f"S3 request for {what} failed{where}: {code}: {error.get('Message', '')}")
    if isinstance(exc, exceptions.EndpointConnectionError | exceptions.ConnectTimeoutError):
        endpoint = cfg.endpoint or "the AWS S3 endpoint"
        return _Error(
            f"ENDPOINT: cannot connect to {endpoint}: check ENDPOINT (scheme, host, port)"
        )
    if isinstance(exc, exceptions.ParamValidationError):
        return _Error(f"{config.STORAGE_URI_ENV}: {cfg.storage_uri!r} is not a valid S3 URI: {exc}")
    return _Error(f"S3 request for {what} failed{where}: {exc}")


def list_items(
    client: Any, bucket: str, prefix: str, patterns: tuple[str, ...]
) -> tuple[str, list[transfer.Item]]:
    """(key prefix the items are relative to, items not ignored) for ``s3://bucket/prefix``."""
    folder = prefix if not prefix or prefix.endswith("/") else prefix + "/"
    items: list[transfer.Item] = []
    found = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=folder):
        for obj in page.get("Contents", []):
            key: str = obj["Key"]
            if key.endswith("/"):  # a "directory" marker some tools create
                continue
            found += 1
            relpath = key[len(folder) :]
            if not transfer.is_safe(relpath):
                log.warning(
                    "Skipping s3://%s/%s: its key leads outside the output dir", bucket, key
                )
            elif not transfer.is_ignored(relpath, patterns):
                items.append(transfer.Item(relpath, int(obj["Size"]), obj.get("ETag")))
    if found and not items and patterns:
        raise _Error(transfer.all_ignored(f"s3://{bucket}/{folder}", found, patterns))
    if found:
        return folder, items
    if not prefix or prefix.endswith("/"):
        raise _Error(
            f"{config.STORAGE_URI_ENV}: no objects under s3://{bucket}/{prefix}: check the prefix"
        )
    # No objects under "prefix/": maybe "prefix" is one object.
    head = client.head_object(Bucket=bucket, Key=prefix)
    parent, _, name = prefix.rpartition("/")
    folder = parent + "/" if parent else ""
    if transfer.is_ignored(name, patterns):
        raise _Error(transfer.all_ignored(f"s3://{bucket}/{prefix}", 1, patterns))
    return folder, [transfer.Item(name, int(head["ContentLength"]), head.get("ETag"))]


class Stopped(Exception):
    """A download abandoned because the run is stopping (Ctrl-C, another file's error)."""


ETAG_SUFFIX = ".etag"  # beside a .part file: the ETag of the object it is the start of


def download(
    client: Any,
    bucket: str,
    key: str,
    target: Path,
    size: int,
    progress: transfer.Progress | None = None,
    stop: threading.Event | None = None,
    etag: str | None = None,
) -> None:
    """Stream one object into ``target`` (through a ``.part`` file, renamed when complete);
    fail if its size is not ``size`` or, for a single-part ETag, its MD5 is not the ETag.

    A ``.part`` file left by an interrupted run for the same ``etag`` is resumed with a range
    request (``If-Match``: the object must not have changed since). Each chunk counts toward
    ``progress``; a set ``stop`` abandons the file at the next chunk (keeping its part), so Ctrl-C
    does not wait for every large object in flight to finish."""
    exceptions: Any = importlib.import_module("botocore.exceptions")
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + transfer.PART_SUFFIX)
    tag_file = part.with_name(part.name + ETAG_SUFFIX)
    have = 0
    if etag and part.is_file() and tag_file.is_file() and tag_file.read_text() == etag:
        have = part.stat().st_size
    if have >= size and size:
        have = 0  # not a start of it: the whole file again
    args: dict[str, Any] = {"Bucket": bucket, "Key": key}
    if have:
        args.update(Range=f"bytes={have}-", IfMatch=etag)
    try:
        body = client.get_object(**args)["Body"]
    except exceptions.ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if not have or code not in ("PreconditionFailed", "InvalidRange", "412", "416"):
            raise
        log.info("s3://%s/%s changed since its partial download: starting it over", bucket, key)
        have, body = 0, client.get_object(Bucket=bucket, Key=key)["Body"]
    if have:
        log.info("s3://%s/%s: resuming at %s", bucket, key, transfer.mib(have))
        if progress is not None:
            progress.add_bytes(have)
    if etag:
        tag_file.write_text(etag)
    try:
        with open(part, "ab" if have else "wb") as out:
            for chunk in body.iter_chunks(CHUNK):
                if stop is not None and stop.is_set():
                    raise Stopped(key)
                out.write(chunk)
                if progress is not None:
                    progress.add_bytes(len(chunk))
    except BaseException:
        if not etag:  # nothing tells a later run what it is the start of: no part left
            part.unlink(missing_ok=True)
        raise  # with an ETag the part stays, and the next run resumes it
    got = part.stat().st_size
    if got != size or (etag and "-" not in etag and not transfer.matches_etag(part, etag)):
        part.unlink(missing_ok=True)
        tag_file.unlink(missing_ok=True)
        what = (
            f"got {got} bytes of {size}" if got != size else "its content does not match its ETag"
        )
        raise _Error(f"s3://{bucket}/{key}: {what}: run again")
    os.replace(part, target)
    tag_file.unlink(missing_ok=True)


def same_object(item: transfer.Item, path: Path) -> bool:
    """A present file is the object only when its ETag says so (else it is fetched again)."""
    return bool(item.etag) and transfer.matches_etag(path, str(item.etag))


def fetch(cfg: config.Config) -> None:
    """Download every object under ``cfg.storage_uri`` into ``cfg.output_path``."""
    exceptions: Any = importlib.import_module("botocore.exceptions")
    boto_errors = (exceptions.BotoCoreError, exceptions.ClientError)
    bucket, prefix = parse_uri(cfg.storage_uri)
    dest = Path(cfg.output_path)
    log.info("Downloading %s to %s", cfg.storage_uri, dest)
    client = make_client(cfg)
    try:
        folder, items = list_items(client, bucket, prefix, cfg.ignore_patterns)
    except boto_errors as exc:
        raise explain(exc, cfg, bucket, cfg.storage_uri) from None
    todo, present = transfer.split_present(items, dest, same_object)
    progress = transfer.Progress(todo, present)
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="s3") as pool:
        futures = {
            pool.submit(
                download,
                client,
                bucket,
                folder + item.relpath,
                dest / item.relpath,
                item.size,
                progress,
                stop,
                item.etag,
            ): item
            for item in todo
        }
        try:
            for future in as_completed(futures):
                item = futures[future]
                try:
                    future.result()
                except boto_errors as exc:
                    what = f"s3://{bucket}/{folder}{item.relpath}"
                    raise explain(exc, cfg, bucket, what) from None
                progress.file_done(item.size, counted=True)
        except BaseException:
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    progress.finish()
