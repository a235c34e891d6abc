"""A thin, generic, async REST client for the Kubernetes API.

With :mod:`united.kube.library`, the only module that imports ``kubernetes_asyncio``. It borrows the library's
configuration loading (kubeconfig, later in-cluster) and its ``ApiClient`` transport
(TLS, bearer tokens, aiohttp session), but not its generated typed APIs: every call
goes through :meth:`KubeClient._request` with ``_preload_content=False`` and plain
JSON dicts in and out. That sidesteps the library's known traps in one place:

* a custom-object PATCH with a dict body silently defaults to json-patch; here the
  patch type is a *required* keyword, so nothing defaults;
* with ``_preload_content=False`` the library never checks the HTTP status; here
  every answer is checked and non-2xx statuses become typed errors (``errors.py``);
* ``Watch`` builds its own ``ApiClient`` and retries a 410 once on its own; here a
  watch is an ``async with`` stream on the shared session that raises ``Gone`` and
  lets the caller own the re-list loop;
* the typed stubs lack ``_content_type``; the generic path never needs it;
* the library's aiohttp session trusts the environment, so aiohttp reads ``~/.netrc`` and
  the proxy variables in a worker thread **twice per request** (a third of the client's CPU
  per request, measured by ``python -m bench``); here the proxy the environment names for
  the API server is read once, and the session is rebuilt on the same connector without it;
* the library's ``call_api`` walks every body, header and parameter through its model
  serializer before encoding: plain dicts need none of it, so requests go straight to the
  session with the library's own authentication headers (token refresh included).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from types import TracebackType
from typing import Any, NamedTuple, Self
from urllib.parse import quote, urlencode

import aiohttp
from aiohttp.connector import Connection
from aiohttp.helpers import get_env_proxy_for_url
from aiohttp.http_exceptions import HttpProcessingError
from yarl import URL

from united import __version__
from united.api import decode
from united.api.decode import Undecodable
from united.kube import library
from united.kube.errors import (
    ApiError,
    ConfigError,
    Fenced,
    TooLarge,
    TransientError,
    error_from_status,
    transport_error,
)
from united.kube.kubeconfig import NO_SUCH_FILE, check_inline
from united.kube.kubeconfig import check as check_kubeconfig
from united.kube.kubeconfig import parse as parse_kubeconfig
from united.kube.kubeconfig import where as kubeconfig_where
from united.kube.retry import is_retryable, is_throttled, retrying

JSON = dict[str, Any]
JSONPatch = list[JSON]

DEFAULT_USER_AGENT = f"united/{__version__}"
CONNECTION_CLOSED = "Connection closed."
"""What aiohttp raises (a ``RuntimeError``) when a watch reads on after its connection closed."""
_READS = frozenset({"GET", "HEAD"})
RETRY_ATTEMPTS = 3
"""Attempts per request (watches aside) while it fails transiently (``retry.py``)."""
MAX_RETRY_AFTER = 10.0
"""A longer ``Retry-After`` is cut to this: past it the work queue's backoff takes over."""
MEMBER_MAX_ANSWER = 64 * 2**20
"""Bytes a member cluster's answer (a LIST page, a GET, a watch event) may have: a hostile
member must not make the controller hold what it sends (a 400 MB ``/version`` took it from 77 MB
to 903 MB); a real page of 500 objects is a few MB."""
MEMBER_MAX_ERROR = 64 * 2**10
"""Bytes of a member's error answer read (only its ``Status.message`` is used)."""
MEMBER_MAX_MESSAGE = 512
"""Characters of a member's ``Status.message`` kept in an error."""
_HOME_KUBECONFIG = pathlib.Path.home() / ".kube" / "config"
_SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


@dataclass(frozen=True, slots=True)
class Resource:
    """Where a kind lives in the REST tree: enough to build every URL for it.

    ``kind`` is only informational (list items come back without ``kind``; the
    client fills it from the list's kind instead).
    """

    group: str
    version: str
    plural: str
    namespaced: bool
    kind: str = ""

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` string of objects of this resource."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self,
        *,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """The URL path for a collection, an object, or an object's subresource.

        A namespaced resource without a namespace addresses the collection across all
        namespaces (list and watch only); a cluster-scoped one must not get one.
        """
        if not self.namespaced and namespace is not None:
            raise ValueError(f"{self.plural} is cluster-scoped; no namespace allowed")
        if self.namespaced and name is not None and not namespace:
            raise ValueError(f"{self.plural} is namespaced; {name!r} needs a namespace")
        if subresource is not None and name is None:
            raise ValueError("a subresource needs an object name")
        parts = [f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"]
        if namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            parts.append(quote(name, safe=""))
        if subresource is not None:
            parts.append(subresource)
        return "/".join(parts)


NAMESPACES = Resource("", "v1", "namespaces", False, "Namespace")
NODES = Resource("", "v1", "nodes", False, "Node")
PODS = Resource("", "v1", "pods", True, "Pod")
SECRETS = Resource("", "v1", "secrets", True, "Secret")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", True, "ServiceAccount")
SERVICES = Resource("", "v1", "services", True, "Service")
CONFIG_MAPS = Resource("", "v1", "configmaps", True, "ConfigMap")
EVENTS = Resource("events.k8s.io", "v1", "events", True, "Event")
DEPLOYMENTS = Resource("apps", "v1", "deployments", True, "Deployment")
REPLICA_SETS = Resource("apps", "v1", "replicasets", True, "ReplicaSet")
STATEFUL_SETS = Resource("apps", "v1", "statefulsets", True, "StatefulSet")
CONTROLLER_REVISIONS = Resource("apps", "v1", "controllerrevisions", True, "ControllerRevision")
LEASES = Resource("coordination.k8s.io", "v1", "leases", True, "Lease")
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", False, "CustomResourceDefinition")
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", False, "ClusterRole")
CLUSTER_ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", False, "ClusterRoleBinding")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", True, "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", True, "RoleBinding")
MUTATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", False, "MutatingWebhookConfiguration"
)
VALIDATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", False, "ValidatingWebhookConfiguration"
)
CLONE_SETS = Resource("apps.kruise.io", "v1alpha1", "clonesets", True, "CloneSet")
ADVANCED_STATEFUL_SETS = Resource("apps.kruise.io", "v1beta1", "statefulsets", True, "StatefulSet")


class PatchType(StrEnum):
    """PATCH content types. There is deliberately no default: see the module docstring."""

    MERGE = "application/merge-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    JSON = "application/json-patch+json"
    APPLY = "application/apply-patch+yaml"


class ObjectList(NamedTuple):
    """A list answer: the items (with ``apiVersion``/``kind`` filled in) and the
    list's resourceVersion, which is where a watch that follows it must start; ``skipped``
    describes the items nested too deeply to read (``decode.py``), left out of ``items``."""

    items: list[JSON]
    resource_version: str
    skipped: tuple[Undecodable, ...] = ()


class WatchEvent(NamedTuple):
    """One watch event: ``ADDED``, ``MODIFIED``, ``DELETED`` or ``BOOKMARK``.

    ``ERROR`` events are not yielded: they are raised as typed errors (``Gone`` for
    an expired resourceVersion). When the object is nested too deeply to read
    (``decode.py``), ``undecodable`` says why and ``object`` is only its stub.
    """

    type: str
    object: JSON
    undecodable: Undecodable | None = None


def resource_of_path(path: str) -> str:
    """The resource a request path addresses (``deployments``, ``uniteddeployments/status``),
    for metric labels: bounded cardinality, no names or namespaces."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    if parts[:1] == ["api"]:
        parts = parts[2:]
    elif parts[:1] == ["apis"]:
        parts = parts[3:]
    else:
        return "nonresource"
    if len(parts) >= 2 and parts[0] == "namespaces":
        parts = parts[2:] if len(parts) > 2 else ["namespaces"]
    if not parts:
        return "discovery"
    return parts[0] + (f"/{parts[2]}" if len(parts) > 2 else "")


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _rebuild_session(
    api_client: library.ApiClient, *, request_class: type[aiohttp.ClientRequest], env_proxy: bool = True
) -> None:
    """Replace the library's session with one on the same connector that resolved the
    environment's proxy once (the library's ``trust_env=True`` looks again, in a thread, twice
    per request; ``env_proxy`` False: not at all) and builds its requests with ``request_class``
    (the write fence)."""
    rest = api_client.rest_client
    old: aiohttp.ClientSession = rest.pool_manager
    if env_proxy and old.trust_env and not rest.proxy:
        try:
            proxy, proxy_auth = get_env_proxy_for_url(URL(str(api_client.configuration.host)))
        except LookupError:
            pass
        else:
            rest.proxy = str(proxy)
            if proxy_auth is not None:
                rest.proxy_headers = {"Proxy-Authorization": proxy_auth.encode()}
    rest.pool_manager = aiohttp.ClientSession(
        connector=old.connector, trust_env=False, read_bufsize=2**21, request_class=request_class
    )
    old.detach()


def _fenced_requests(client: KubeClient) -> type[aiohttp.ClientRequest]:
    """Requests that consult ``client.fence`` as they are sent: with a connection in hand, after
    every wait (a new connection's TCP and TLS handshakes take several turns of the loop; a
    leader frozen in one and resumed past its Lease would otherwise send a write it checked
    before the freeze), and again as the bytes leave: aiohttp buffers the headers and writes
    them with the body from a task that runs a turn later, and from that check to the socket
    nothing yields. aiohttp closes the connection when ``send`` raises."""

    class FencedRequest(aiohttp.ClientRequest):
        def _check(self) -> None:
            if client.fence is not None and self.method not in _READS:
                client.fence(self.method, self.url.path)

        async def send(self, conn: Connection) -> aiohttp.ClientResponse:
            self._check()
            return await super().send(conn)

        async def write_bytes(self, writer: Any, conn: Connection, content_length: int | None = None) -> None:
            try:
                self._check()
            except Fenced as refused:
                if conn.protocol is not None:
                    conn.protocol.set_exception(refused)  # what the response waits on
                conn.close()
                return
            await super().write_bytes(writer, conn, content_length)

    return FencedRequest


def _forget_files(directory: str) -> None:
    """Remove ``directory`` and the library's cache entries pointing into it (it reuses a
    file by content, which would hand a later client a removed path)."""
    shutil.rmtree(directory, ignore_errors=True)
    cache: dict[str, str] = library.kube_config._temp_files
    for content, path in list(cache.items()):
        if os.path.dirname(path) == directory:
            del cache[content]


def _retry_after(resp: aiohttp.ClientResponse) -> float | None:
    value = resp.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


async def _read(resp: aiohttp.ClientResponse, what: str, *, limit: int | None = None) -> bytes:
    """The answer's body; with a ``limit``, no more than that is ever held: a longer one
    (announced or not) raises :class:`TooLarge` and the connection is closed."""
    try:
        if limit is None:
            data: bytes = await resp.read()
        else:
            data = await _bounded(resp, limit)
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise transport_error(exc, str(resp.url.origin())) from exc
    finally:
        resp.release()
    return data


async def _bounded(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    too_large = TooLarge(f"the answer of {resp.url.origin()} is larger than {limit} bytes", reason="TooLarge")
    if resp.content_length is not None and resp.content_length > limit:
        resp.close()
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(2**16):
        size += len(chunk)
        if size > limit:
            resp.close()
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


async def _read_json(resp: aiohttp.ClientResponse, what: str, *, limit: int | None = None) -> Any:
    data = await _read(resp, what, limit=limit)
    if not data:
        return {}
    try:
        return decode.document(data)
    except ValueError:
        return data.decode("utf-8", "replace")


class WatchStream:
    """An open watch: ``async with`` it, then ``async for`` its events.

    The stream ends when the server closes it (``timeoutSeconds`` elapsed); an
    ``ERROR`` event or a dropped connection raises. The connection is closed on exit
    of the ``async with`` block whatever happened, so no session or socket leaks.
    """

    def __init__(self, client: KubeClient, path: str, query: list[tuple[str, str]], *, read_timeout: float) -> None:
        self._client = client
        self._path = path
        self._query = query
        self._read_timeout = read_timeout
        self._resp: aiohttp.ClientResponse | None = None
        self.resource_version: str = dict(query).get("resourceVersion", "")

    async def __aenter__(self) -> Self:
        self._resp = await self._client._request(
            "GET",
            self._path,
            query=self._query,
            request_timeout=aiohttp.ClientTimeout(sock_connect=30, sock_read=self._read_timeout),
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._resp is not None:
            self._resp.close()
            self._resp = None

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> WatchEvent:
        if self._resp is None:
            raise RuntimeError("use the watch inside 'async with'")
        while True:
            try:
                line = await self._resp.content.readline(max_line_length=self._client.max_answer)
            except (TimeoutError, aiohttp.ClientError, ValueError, HttpProcessingError) as exc:
                raise transport_error(exc, self._client.host) from exc
            except RuntimeError as exc:  # aiohttp reading a response whose connection is already gone
                if str(exc) != CONNECTION_CLOSED:
                    raise
                raise transport_error(aiohttp.ServerDisconnectedError(), self._client.host) from exc
            if not line:
                raise StopAsyncIteration
            line = line.strip()
            if not line:
                continue
            try:
                event, undecodable = decode.watch_event(line)
            except ValueError as exc:
                raise TransientError(f"watch {self._path}: bad event {line[:200]!r}") from exc
            kind = str(event.get("type", ""))
            obj = event.get("object") or {}
            if kind == "ERROR":
                raise error_from_status(int(obj.get("code") or 500), obj)
            rv = obj.get("metadata", {}).get("resourceVersion")
            if rv:
                self.resource_version = str(rv)
            return WatchEvent(kind, obj, undecodable)


class KubeClient:
    """Generic CRUD, list, watch and subresource calls on any :class:`Resource`.

    Objects are plain dicts (``JSON``), exactly what the API server sends, so there
    is no model layer whose optimistic typing hides ``None`` fields. All methods take
    keyword-only options so that later additions do not break callers.
    """

    def __init__(
        self,
        api_client: library.ApiClient,
        *,
        request_timeout: float = 30.0,
        retry_attempts: int = RETRY_ATTEMPTS,
        untrusted: bool = False,
        env_proxy: bool = True,
    ) -> None:
        self._api = api_client
        self._timeout = request_timeout
        self.retry_attempts = retry_attempts
        """Attempts per request; a 429 or, for idempotent requests, any transient failure is
        retried after the server's ``Retry-After`` (at most :data:`MAX_RETRY_AFTER`) or a
        short jittered backoff, so one throttled or dropped request does not fail a pass."""
        self.observer: Callable[[str, str, int, float], None] | None = None
        """Called after every request with (verb, resource, HTTP code or 0, seconds), e.g. to
        count API requests by verb and code; watches report when their stream opens."""
        self.fence: Callable[[str, str], None] | None = None
        """Consulted with (method, path) right before every request that is not a read; it
        raises :class:`~united.kube.errors.Fenced` to refuse it (leader election closes it
        when this process may no longer be the leader). None: every write may go."""
        self.untrusted = untrusted
        """A member cluster's client: its answers are bounded (:attr:`max_answer`), redirects are
        not followed (a member must not send the token's requests, or our reading of an answer,
        elsewhere), and an error keeps only the answer's ``Status.message``, clipped (a raw body
        would be copied into the ``Cluster``'s condition)."""
        self.max_answer: int | None = MEMBER_MAX_ANSWER if untrusted else None
        _rebuild_session(api_client, request_class=_fenced_requests(self), env_proxy=env_proxy)

    @classmethod
    async def from_config(
        cls,
        kubeconfig: str | os.PathLike[str] | None = None,
        *,
        user_agent: str = DEFAULT_USER_AGENT,
        request_timeout: float = 30.0,
    ) -> KubeClient:
        """The given kubeconfig; without one, in-cluster service-account credentials when
        running in a pod, else ``$KUBECONFIG`` or ``~/.kube/config``."""
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            configuration = library.Configuration()
            try:
                library.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            except (library.ConfigException, OSError, ValueError) as exc:
                raise ConfigError(
                    "in-cluster configuration",
                    f"{str(exc).rstrip('.')} ({_SERVICE_ACCOUNT_DIR}): KUBERNETES_SERVICE_HOST is set, so this "
                    "should be a pod with a mounted ServiceAccount token; or pass --kubeconfig FILE",
                ) from None
            api = library.ApiClient(configuration)
            api.user_agent = user_agent
            return cls(api, request_timeout=request_timeout)
        path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or str(_HOME_KUBECONFIG)
        try:
            return await cls.from_kubeconfig(path, user_agent=user_agent, request_timeout=request_timeout)
        except ConfigError as exc:
            if kubeconfig or os.environ.get("KUBECONFIG") or exc.message != NO_SUCH_FILE:
                raise
            raise ConfigError(
                exc.where,
                f"{NO_SUCH_FILE}, $KUBECONFIG is unset and this is not a pod (KUBERNETES_SERVICE_HOST is unset): "
                "pass --kubeconfig FILE",
            ) from None

    @classmethod
    async def from_kubeconfig(
        cls,
        path: str | os.PathLike[str],
        *,
        context: str | None = None,
        user_agent: str = DEFAULT_USER_AGENT,
        request_timeout: float = 30.0,
    ) -> KubeClient:
        """A client for the cluster and user of a kubeconfig file (its current context
        unless ``context`` is given). Close it (or ``async with`` it) when done. A file that
        cannot work raises :class:`~united.kube.errors.ConfigError` saying why."""
        check_kubeconfig(path, context=context)
        configuration = library.Configuration()
        try:
            await library.load_kube_config(
                config_file=os.fspath(path),
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        except (library.ConfigException, OSError, ValueError) as exc:
            message = str(exc).removeprefix("Invalid kube-config file. ")
            raise ConfigError(kubeconfig_where(path), message.splitlines()[0] if message else repr(exc)) from None
        api = library.ApiClient(configuration)
        api.user_agent = user_agent
        return cls(api, request_timeout=request_timeout)

    @classmethod
    async def from_kubeconfig_data(
        cls,
        data: bytes,
        *,
        where: str,
        request_timeout: float = 30.0,
        retry_attempts: int = RETRY_ATTEMPTS,
        user_agent: str = DEFAULT_USER_AGENT,
        allow_proxy: bool = False,
    ) -> KubeClient:
        """A client from a kubeconfig held in memory (a member cluster's, from a Secret), which
        must be self-contained (:func:`~united.kube.kubeconfig.check_inline`): https, the server
        verified, no ``proxy-url`` (nor the environment's proxy) unless ``allow_proxy``. The client
        is :attr:`untrusted`. Problems raise :class:`ConfigError` at ``where`` naming a field or a
        line, never a value: the bytes are credentials. Certificate data the library writes to
        files goes to a private directory removed as soon as the TLS context has read it (the
        library would keep them until exit, and reuse them by content across clients)."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(where, "not UTF-8 text") from None
        config = parse_kubeconfig(text, where)
        check_inline(config, where, allow_proxy=allow_proxy)
        private = tempfile.mkdtemp(prefix="united-member-")  # mode 0700
        try:
            configuration = library.Configuration()
            await library.load_kube_config_from_dict(config, client_configuration=configuration, temp_file_path=private)
            api = library.ApiClient(configuration)
        except Exception as exc:  # the library's messages may quote the data
            raise ConfigError(where, f"cannot be used ({type(exc).__name__})") from None
        finally:
            _forget_files(private)
        if (
            not configuration.verify_ssl
            or not str(configuration.host).startswith("https://")
            or (api.rest_client.proxy and not allow_proxy)
        ):
            await api.close()  # check_inline's rules, as the library read them: never otherwise
            raise ConfigError(where, "Forbidden: the server must be https:// and verified, with no proxy")
        api.user_agent = user_agent
        return cls(
            api, request_timeout=request_timeout, retry_attempts=retry_attempts, untrusted=True, env_proxy=allow_proxy
        )

    @classmethod
    def for_server(
        cls,
        server: str,
        *,
        token: str | None = None,
        ca_cert: str | os.PathLike[str] | None = None,
        user_agent: str = DEFAULT_USER_AGENT,
        request_timeout: float = 30.0,
        retry_attempts: int = RETRY_ATTEMPTS,
    ) -> KubeClient:
        """A client for ``server`` with an explicit bearer token and CA — for callers
        that hold credentials rather than a kubeconfig (e.g. a proxy in front of the
        API server). Must be called inside a running event loop."""
        configuration = library.Configuration(host=server)
        if token:
            configuration.api_key = {"BearerToken": f"Bearer {token}"}
        configuration.ssl_ca_cert = os.fspath(ca_cert) if ca_cert is not None else None
        api = library.ApiClient(configuration)
        api.user_agent = user_agent
        return cls(api, request_timeout=request_timeout, retry_attempts=retry_attempts)

    async def close(self) -> None:
        """Close the underlying HTTP session."""
        await self._api.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def host(self) -> str:
        """The API server's base URL."""
        return str(self._api.configuration.host)

    async def _request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
        request_timeout: aiohttp.ClientTimeout | float | None = None,
    ) -> aiohttp.ClientResponse:
        """Send one request; return the open response of a 2xx answer, raise otherwise."""
        started = time.perf_counter()
        code = 0
        try:
            resp = await self._send(method, path, query, body, content_type, request_timeout)
            code = resp.status
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise transport_error(exc, self.host) from exc
        finally:
            if self.observer is not None:
                self.observer(method, resource_of_path(path), code, time.perf_counter() - started)
        if not 200 <= resp.status < 300:
            what = f"{method} {path}"
            if not self.untrusted:
                raise error_from_status(resp.status, await _read_json(resp, what), retry_after=_retry_after(resp))
            answer = await _read_json(resp, what, limit=MEMBER_MAX_ERROR)
            raise error_from_status(
                resp.status, answer, retry_after=_retry_after(resp), message_only=MEMBER_MAX_MESSAGE
            )
        return resp

    async def _send(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        body: Any,
        content_type: str,
        request_timeout: aiohttp.ClientTimeout | float | None,
    ) -> aiohttp.ClientResponse:
        api = self._api
        headers = {"Accept": "application/json", "Content-Type": content_type, **api.default_headers}
        params = list(query)
        await api.update_params_for_auth(headers, params, ["BearerToken"])
        url = str(api.configuration.host) + path
        if params:
            url += "?" + urlencode(params)
        data = body if body is None or isinstance(body, bytes) else decode.dumps(body)
        timeout = self._timeout if request_timeout is None else request_timeout
        if not isinstance(timeout, aiohttp.ClientTimeout):
            timeout = aiohttp.ClientTimeout(total=timeout)
        rest = api.rest_client
        resp: aiohttp.ClientResponse = await rest.pool_manager.request(
            method,
            url,
            headers=headers,
            data=data,
            timeout=timeout,
            proxy=rest.proxy,
            proxy_headers=rest.proxy_headers,
            server_hostname=rest.server_hostname,
            allow_redirects=not self.untrusted,
        )
        return resp

    async def _json(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        what = f"{method} {path}"

        async def once() -> Any:
            resp = await self._request(method, path, query=query, body=body, content_type=content_type)
            return await _read_json(resp, what, limit=self.max_answer)

        # Every write this controller sends is absolute (merge patch, apply, PUT with a
        # resourceVersion, DELETE): replaying it is harmless. A POST or a JSON patch may not be.
        idempotent = method != "POST" and content_type != PatchType.JSON.value
        return await self._retrying(once, what, idempotent=idempotent)

    async def _retrying(self, call: Callable[[], Any], what: str, *, idempotent: bool) -> Any:
        return await retrying(
            call,
            attempts=self.retry_attempts,
            max_retry_after=MAX_RETRY_AFTER,
            what=what,
            retryable=is_retryable if idempotent else is_throttled,
        )

    async def _page(self, path: str, query: Sequence[tuple[str, str]]) -> bytes:
        return await _read(await self._request("GET", path, query=query), f"GET {path}", limit=self.max_answer)

    async def get_path(self, path: str, *, limit: int | None = None) -> str:
        """GET a raw, non-resource path (``/readyz``, ``/version``) as text; ``limit``: at most
        that many bytes (else :class:`TooLarge`), whatever the client's own bound."""
        resp = await self._request("GET", path)
        if limit is None and self.max_answer is None:
            try:
                return await resp.text()
            finally:
                resp.release()
        bound = min(x for x in (limit, self.max_answer) if x is not None)
        return (await _read(resp, f"GET {path}", limit=bound)).decode("utf-8", "replace")

    async def get_bytes(
        self, path: str, *, query: Sequence[tuple[str, str]] = (), request_timeout: float | None = None
    ) -> bytes:
        """GET a raw, non-resource path as bytes (``/debug/pprof/profile``, binary and as slow
        as the ``seconds`` it is asked for: ``request_timeout`` replaces the client's for it)."""
        resp = await self._request("GET", path, query=query, request_timeout=request_timeout)
        return await _read(resp, f"GET {path}", limit=self.max_answer)

    async def get(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> JSON:
        """Read one object (or its ``status``/``scale`` subresource)."""
        path = resource.path(namespace=namespace, name=name, subresource=subresource)
        result: JSON = await self._json("GET", path)
        return result

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        transform: Callable[[JSON], JSON] | None = None,
    ) -> ObjectList:
        """List objects (all pages) and the list's resourceVersion to watch from.

        ``transform`` is applied to each item as its page arrives, so each page's decoded
        originals are freed before the next page is read: an informer that keeps a compact
        copy of every object would otherwise hold all originals of a large LIST at once, and
        the memory they leave behind is not given back.

        Items nested too deeply to read are left out and described in ``skipped``
        (``decode.py``): one such object must not make the whole LIST unreadable."""
        query: list[tuple[str, str]] = [("limit", str(page_size))]
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        path = resource.path(namespace=namespace)
        items: list[JSON] = []
        skipped: list[Undecodable] = []
        resource_version = ""
        cont = ""
        while True:
            page_query = [*query, ("continue", cont)] if cont else query
            what = f"GET {path}"
            data: bytes = await self._retrying(partial(self._page, path, page_query), what, idempotent=True)
            try:
                page, page_items, page_skipped = decode.list_page(data)
            except ValueError as exc:
                raise TransientError(f"{what}: not a list: {data[:200]!r}") from exc
            api_version = page.get("apiVersion", resource.api_version)
            kind = str(page.get("kind", "")).removesuffix("List") or resource.kind
            for item in page_items:
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)
                items.append(transform(item) if transform is not None else item)
            for problem in page_skipped:
                problem.object.setdefault("apiVersion", api_version)
                problem.object.setdefault("kind", kind)
            skipped += page_skipped
            meta = page.get("metadata") or {}
            resource_version = resource_version or str(meta.get("resourceVersion", ""))
            cont = str(meta.get("continue") or "")
            if not cont:
                return ObjectList(items, resource_version, tuple(skipped))

    def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        allow_bookmarks: bool = True,
        timeout_seconds: int = 300,
    ) -> WatchStream:
        """A watch from ``resource_version`` (normally a list's), to be used as
        ``async with client.watch(...) as events: async for event in events``.

        The server ends the stream after ``timeout_seconds``; the read timeout is a
        little longer, so a silently stalled connection raises ``TransientError``
        instead of hanging forever.
        """
        query: list[tuple[str, str]] = [
            ("watch", "true"),
            ("allowWatchBookmarks", _bool(allow_bookmarks)),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        return WatchStream(
            self,
            resource.path(namespace=namespace),
            query,
            read_timeout=timeout_seconds + 30.0,
        )

    async def create(
        self,
        resource: Resource,
        body: JSON | bytes,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """Create an object; raises ``AlreadyExists`` if the name is taken.

        A ``bytes`` body is sent verbatim as YAML (JSON is YAML). Use it for objects with
        raw-bytes fields such as ``ControllerRevision.data``: a JSON body's bytes (ours,
        from ``decode.dumps``) differ from the Go encoding the API server uses when it later
        patches the object — and ``data`` is immutable, so even the garbage collector's
        owner-reference patch would be refused.
        The API server turns YAML into JSON with Go's encoder, so stored bytes are canonical.
        """
        query = [("dryRun", "All")] if dry_run else []
        content_type = "application/yaml" if isinstance(body, bytes) else "application/json"
        result: JSON = await self._json(
            "POST", resource.path(namespace=namespace), query=query, body=body, content_type=content_type
        )
        return result

    async def replace(
        self,
        resource: Resource,
        body: JSON,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """PUT the whole object (name from ``body.metadata.name``); with a
        ``metadata.resourceVersion`` in the body a stale write raises ``Conflict``."""
        name = str(body.get("metadata", {}).get("name", ""))
        if not name:
            raise ValueError("replace needs body.metadata.name")
        query = [("dryRun", "All")] if dry_run else []
        path = resource.path(namespace=namespace, name=name, subresource=subresource)
        result: JSON = await self._json("PUT", path, query=query, body=body)
        return result

    async def patch(
        self,
        resource: Resource,
        name: str,
        body: JSON | JSONPatch,
        *,
        patch_type: PatchType,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """PATCH an object or subresource with an explicit content type.

        ``STRATEGIC`` only works on built-in kinds; custom resources take ``MERGE``,
        ``JSON`` (a list of operations) or ``APPLY`` (server-side apply, which needs a
        ``field_manager``; ``force`` takes over conflicting fields).
        """
        if (patch_type is PatchType.JSON) != isinstance(body, list):
            raise ValueError("a JSON patch is a list of operations; other patch types take a dict")
        if patch_type is PatchType.APPLY and not field_manager:
            raise ValueError("server-side apply needs a field_manager")
        if force is not None and patch_type is not PatchType.APPLY:
            raise ValueError("force only applies to server-side apply")
        query: list[tuple[str, str]] = []
        if field_manager:
            query.append(("fieldManager", field_manager))
        if force is not None:
            query.append(("force", _bool(force)))
        if dry_run:
            query.append(("dryRun", "All"))
        path = resource.path(namespace=namespace, name=name, subresource=subresource)
        result: JSON = await self._json("PATCH", path, query=query, body=body, content_type=patch_type.value)
        return result

    async def apply(
        self,
        resource: Resource,
        body: JSON,
        *,
        field_manager: str,
        namespace: str | None = None,
        subresource: str | None = None,
        force: bool = False,
    ) -> JSON:
        """Server-side apply ``body`` (which must carry apiVersion, kind and name)."""
        name = str(body.get("metadata", {}).get("name", ""))
        if not name:
            raise ValueError("apply needs body.metadata.name")
        return await self.patch(
            resource,
            name,
            body,
            patch_type=PatchType.APPLY,
            namespace=namespace,
            subresource=subresource,
            field_manager=field_manager,
            force=force,
        )

    async def delete(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> JSON:
        """Delete an object. ``propagation_policy`` is ``Foreground``, ``Background``
        or ``Orphan``; ``grace_period_seconds=0`` force-deletes a pod (there is no
        kubelet to finish a graceful deletion); ``preconditions`` guards with a uid or
        resourceVersion. Returns the server's answer (the object or a ``Status``)."""
        options: JSON = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation_policy is not None:
            if propagation_policy not in ("Foreground", "Background", "Orphan"):
                raise ValueError(f"unknown propagation policy {propagation_policy!r}")
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if preconditions:
            options["preconditions"] = dict(preconditions)
        if dry_run:
            options["dryRun"] = ["All"]
        path = resource.path(namespace=namespace, name=name)
        result: JSON = await self._json("DELETE", path, body=options)
        return result


__all__ = [
    "ADVANCED_STATEFUL_SETS",
    "CLONE_SETS",
    "CLUSTER_ROLES",
    "CLUSTER_ROLE_BINDINGS",
    "CONFIG_MAPS",
    "CONTROLLER_REVISIONS",
    "CRDS",
    "DEPLOYMENTS",
    "EVENTS",
    "JSON",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "PODS",
    "REPLICA_SETS",
    "ROLES",
    "ROLE_BINDINGS",
    "SECRETS",
    "SERVICE_ACCOUNTS",
    "STATEFUL_SETS",
    "ApiError",
    "JSONPatch",
    "KubeClient",
    "ObjectList",
    "PatchType",
    "Resource",
    "WatchEvent",
    "WatchStream",
]
