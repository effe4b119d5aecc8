"""A small typed, synchronous Kubernetes REST client.

Example::

    from trainjob.kube import Client, resources as r
    kube = Client.from_config()                      # kubeconfig or in-cluster
    js = kube.get(r.JOBSETS, "my-job", "team-a")
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {...}, "data": {...}})
    for event in kube.watch(r.TRAINJOBS, resource_version=rv):
        ...

Objects are plain dicts (the JSON the apiserver speaks). Every error answer becomes a
:mod:`trainjob.kube.errors` class; transport failures become ``Unreachable`` (``Timeout`` when
no answer came in time). One client is safe to share between threads (its HTTP layer,
:mod:`trainjob.kube.transport`, keeps a pool of keep-alive connections). Server-side apply uses the field manager ``trainjob`` and forces ownership, as the
upstream controller does with its own manager.

Used by the controller, the webhooks, the SDK's kubernetes backend, the integration tests and
benchmarks.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from trainjob.kube import config as kconfig
from trainjob.kube import resources
from trainjob.kube import transport as _transport
from trainjob.kube.errors import NotFound, Timeout, Unreachable, from_status
from trainjob.kube.resources import Resource
from trainjob.kube.watch import Watch, error_of

if TYPE_CHECKING:
    import httpx

Obj = dict[str, Any]
ObjList = list[Obj]

FIELD_MANAGER = "trainjob"
JSON = "application/json"
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
PATCH_TYPES = {"merge": MERGE_PATCH, "json": JSON_PATCH, "strategic": STRATEGIC_PATCH}
# Metadata-only reads: the apiserver answers with PartialObjectMetadata(List) (no spec, no data).
METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
MAX_RETRY_AFTER = 10.0


class Client:
    """A connection to one apiserver.

    **Parameters:**
    * config - a :class:`trainjob.kube.config.Config` (see :meth:`from_config`).
    * timeout - (optional) seconds for each non-watch request; default 30.
    * transport - (optional) an httpx transport, e.g. ``httpx.MockTransport`` in unit tests.
    * max_connections - (optional) the connection pool size; default 64.
    * max_retries - (optional) how often a request answered 429/5xx with ``Retry-After`` is sent
      again after that wait (as client-go does); default 10.
    """

    def __init__(
        self,
        config: kconfig.Config,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        max_connections: int = 64,
        user_agent: str = "trainjob",
        max_retries: int = 10,
    ) -> None:
        self.config = config
        self.timeout = timeout
        self.max_retries = max_retries
        self._http = _transport.for_config(
            config,
            max_connections=max_connections,
            user_agent=user_agent,
            timeout=timeout,
            transport=transport,
        )

    @classmethod
    def from_config(
        cls, kubeconfig: str | None = None, context: str | None = None, **kwargs: Any
    ) -> Client:
        """A client for the cluster ``kubectl`` would talk to (or the given kubeconfig/context)."""
        return cls(kconfig.load(kubeconfig, context), **kwargs)

    @property
    def namespace(self) -> str:
        """The default namespace of the kubeconfig context (or of the pod, in a cluster)."""
        return self.config.namespace

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- raw requests ----------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        accept: str = JSON,
        timeout: float | None = None,
    ) -> Any:
        """Send one request; return the decoded JSON answer or raise its ApiError."""
        headers = {"Accept": accept, **self.config.auth_headers()}
        content: bytes | None = None
        if body is not None:
            headers["Content-Type"] = content_type
            if isinstance(body, bytes):
                content = body
            elif isinstance(body, str):
                content = body.encode()
            else:
                content = json.dumps(body).encode()
        query = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        for attempt in range(self.max_retries + 1):
            try:
                resp = self._http.request(
                    method,
                    path,
                    query,
                    [*headers.items(), *self.config.impersonation_headers()],
                    content,
                    timeout if timeout is not None else self.timeout,
                )
            except _transport.TransportError as e:
                raise _unreachable(e, method, self.config.server, path) from e
            wait = _retry_after(resp)
            if wait is None or attempt == self.max_retries:
                break
            # The apiserver did not process the request and said when to come back (client-go
            # retries these too): throttling, or "storage is (re)initializing".
            time.sleep(min(wait, MAX_RETRY_AFTER))
        try:
            decoded: Any = json.loads(resp.content) if resp.content else None
        except ValueError:
            decoded = resp.content.decode("utf-8", "replace")
        if resp.status >= 400:
            raise from_status(resp.status, decoded, method, path)
        return decoded

    # -- reads -----------------------------------------------------------------------------------
    def get(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        metadata_only: bool = False,
    ) -> Obj:
        path = resource.path(self._ns(resource, namespace), name, subresource)
        result: Obj = self.request("GET", path, accept=METADATA if metadata_only else JSON)
        return result

    def get_or_none(
        self, resource: Resource, name: str, namespace: str | None = None, **kwargs: Any
    ) -> Obj | None:
        """Like :meth:`get`, but None when the object does not exist."""
        try:
            return self.get(resource, name, namespace, **kwargs)
        except NotFound:
            return None

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
        metadata_only: bool = False,
    ) -> Obj:
        """One page of a list (``items`` and ``metadata.resourceVersion``/``continue``)."""
        params = {
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "limit": limit,
            "continue": continue_token,
            "resourceVersion": resource_version,
        }
        result: Obj = self.request(
            "GET",
            resource.path(namespace if resource.namespaced else None),
            params=params,
            accept=METADATA_LIST if metadata_only else JSON,
        )
        return result

    def list_all(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        page_size: int = 500,
        **kwargs: Any,
    ) -> tuple[ObjList, str]:
        """Every object (following ``continue``) and the list's resourceVersion."""
        items: ObjList = []
        token: str | None = None
        while True:
            page = self.list(resource, namespace, limit=page_size, continue_token=token, **kwargs)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            token = meta.get("continue") or None
            if not token:
                return items, str(meta.get("resourceVersion") or "")

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
        metadata_only: bool = False,
    ) -> Watch:
        """A watch from ``resource_version`` (iterate it; ``stop()`` it from another thread)."""
        params = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true" if allow_bookmarks else None,
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "timeoutSeconds": str(timeout_seconds),
        }
        headers = {"Accept": METADATA if metadata_only else JSON, **self.config.auth_headers()}
        return Watch(
            self._http,
            resource.path(namespace if resource.namespaced else None),
            {k: v for k, v in params.items() if v is not None},
            [*headers.items(), *self.config.impersonation_headers()],
            self.timeout,
            timeout_seconds + 30.0,
        )

    def logs(
        self,
        name: str,
        namespace: str | None = None,
        *,
        container: str | None = None,
        follow: bool = False,
        tail_lines: int | None = None,
        previous: bool = False,
        timestamps: bool = False,
    ) -> Iterator[str]:
        """The lines of a pod's log; with ``follow``, until the container ends (no read timeout).
        ``tail_lines``, ``previous``, ``timestamps``: the pod log API's parameters."""
        path = resources.PODS.path(self._ns(resources.PODS, namespace), name, "log")
        params = {
            "container": container,
            "follow": "true" if follow else None,
            "tailLines": None if tail_lines is None else str(tail_lines),
            "previous": "true" if previous else None,
            "timestamps": "true" if timestamps else None,
        }
        headers = {"Accept": "*/*", **self.config.auth_headers()}
        try:
            stream = self._http.stream(
                "GET",
                path,
                {k: v for k, v in params.items() if v is not None},
                [*headers.items(), *self.config.impersonation_headers()],
                self.timeout,
                None if follow else self.timeout,
            )
            try:
                if stream.status >= 400:
                    raise error_of(stream, "GET", path)
                yield from stream.iter_lines()
            finally:
                stream.close()
        except _transport.TransportError as e:
            raise _unreachable(e, "GET", self.config.server, path) from e

    # -- writes ----------------------------------------------------------------------------------
    def create(
        self, resource: Resource | None, obj: Obj, namespace: str | None = None, **kw: Any
    ) -> Obj:
        res = resource or resources.for_object(obj)
        path = res.path(self._ns(res, namespace, obj))
        result: Obj = self.request("POST", path, params=_write_params(**kw), body=obj)
        return result

    def replace(self, resource: Resource | None, obj: Obj, **kw: Any) -> Obj:
        """PUT the whole object; its ``metadata.resourceVersion`` guards against lost updates."""
        res = resource or resources.for_object(obj)
        meta = obj.get("metadata") or {}
        path = res.path(self._ns(res, None, obj), meta["name"], kw.pop("subresource", None))
        result: Obj = self.request("PUT", path, params=_write_params(**kw), body=obj)
        return result

    def apply(
        self,
        obj: Obj,
        *,
        resource: Resource | None = None,
        field_manager: str = FIELD_MANAGER,
        force: bool = True,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        """Server-side apply ``obj`` (an apply configuration: only the fields we own)."""
        res = resource or resources.for_object(obj)
        meta = obj.get("metadata") or {}
        path = res.path(self._ns(res, None, obj), meta["name"], subresource)
        params = {"fieldManager": field_manager, "force": "true" if force else None}
        if dry_run:
            params["dryRun"] = "All"
        # The apply body is parsed as YAML, whose parser refuses JSON's \uD83C-style surrogate
        # escapes: characters past the BMP (an emoji in a script) go as UTF-8 instead.
        body = json.dumps(obj, ensure_ascii=False)
        result: Obj = self.request(
            "PATCH", path, params=params, body=body, content_type=APPLY_PATCH
        )
        return result

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = FIELD_MANAGER,
    ) -> Obj:
        """A merge (default), JSON or strategic-merge patch of one object (or subresource)."""
        path = resource.path(self._ns(resource, namespace), name, subresource)
        result: Obj = self.request(
            "PATCH",
            path,
            params={"fieldManager": field_manager},
            body=patch,
            content_type=PATCH_TYPES[patch_type],
        )
        return result

    def patch_status(
        self, resource: Resource, name: str, namespace: str | None, status: Obj
    ) -> Obj:
        """Merge-patch the ``status`` subresource (keys set to None are removed)."""
        return self.patch(resource, name, {"status": status}, namespace, subresource="status")

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = "Background",
        preconditions: dict[str, str] | None = None,
        ignore_not_found: bool = False,
    ) -> Obj | None:
        """Delete one object (dependents go with it in the background, like ``kubectl``)."""
        body: Obj = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation_policy:
            body["propagationPolicy"] = propagation_policy
        if preconditions:
            body["preconditions"] = preconditions
        try:
            result: Obj = self.request(
                "DELETE", resource.path(self._ns(resource, namespace), name), body=body
            )
        except NotFound:
            if ignore_not_found:
                return None
            raise
        return result

    # -- helpers ---------------------------------------------------------------------------------
    def _ns(self, resource: Resource, namespace: str | None, obj: Obj | None = None) -> str | None:
        if not resource.namespaced:
            return None
        if namespace:
            return namespace
        if obj is not None and (obj.get("metadata") or {}).get("namespace"):
            return str(obj["metadata"]["namespace"])
        return self.config.namespace


def _retry_after(resp: _transport.Response) -> float | None:
    """Seconds to wait before sending the same request again, when the server asked for it."""
    if resp.status != 429 and not 500 <= resp.status < 600:
        return None
    value = resp.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _unreachable(e: _transport.TransportError, method: str, server: str, path: str) -> Unreachable:
    cls = Timeout if e.timeout else Unreachable
    return cls(f"{method} {server}{path}: {e or type(e).__name__}", method=method, url=path)


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _write_params(
    field_manager: str | None = FIELD_MANAGER, dry_run: bool = False
) -> dict[str, Any]:
    return {"fieldManager": field_manager, "dryRun": "All" if dry_run else None}
