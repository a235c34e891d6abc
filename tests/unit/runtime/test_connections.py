"""Slow and hostile clients against both of the controller's servers on real sockets: the
webhook's HTTPS port (on its own thread) and the probes/metrics HTTP port. A connection that
sends nothing, half a TLS handshake, dribbled headers or a stalled body is closed; the caps
refuse connections over them; a legitimate request is served meanwhile. And the webhook's
callers can be required to present a certificate from a given CA.

The deadlines here are short so that the tests are quick; every wait for an outcome is
generous (``WITHIN``) and nothing asserts on elapsed time."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from united.api.document import Json
from united.runtime.certificates import Bundle, issue
from united.runtime.connections import Limits
from united.runtime.health import HealthServer
from united.runtime.metrics import Metrics
from united.runtime.webserver import TLS, WebhookServer, allow

NOW = datetime.now(UTC)
WITHIN = 20.0
"""Seconds any expected close or answer may take (a loaded machine); never asserted."""
SHORT = Limits(max_connections=6, max_per_peer=3, handshake_timeout=0.3, request_timeout=0.3, idle_timeout=5.0)
LONG = Limits(max_connections=6, max_per_peer=3, handshake_timeout=60, request_timeout=60, idle_timeout=60)


async def echo(review: Json) -> Json:
    return allow(review["request"]["uid"])


async def convert(review: Json) -> Json:
    response = {"uid": review["request"]["uid"], "convertedObjects": [], "result": {"status": "Success"}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}


def conversion(uid: str) -> Json:
    request = {"uid": uid, "desiredAPIVersion": "apps.kruise.io/v1beta1", "objects": []}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": request}


def review(uid: str = "u-1", namespace: str = "shop") -> Json:
    request = {"uid": uid, "namespace": namespace, "operation": "CREATE", "object": {"metadata": {}}}
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}


@dataclass
class Webhook:
    server: WebhookServer
    bundle: Bundle
    metrics: Metrics

    @property
    def port(self) -> int:
        return self.server.port

    def client_ssl(self, *, cert: tuple[bytes, bytes] | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.bundle.ca_bundle.decode())
        if cert is not None:
            context.load_cert_chain(*_files(*cert))
        return context

    async def post(
        self, body: Json, *, context: ssl.SSLContext | None = None, path: str = "/mutate-pods"
    ) -> tuple[int, Any]:
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"https://127.0.0.1:{self.port}{path}", json=body, ssl=context or self.client_ssl()
            ) as resp,  # fmt: skip
        ):
            text = await resp.text()
            return resp.status, json.loads(text) if resp.content_type == "application/json" else text

    def closed(self, reason: str) -> float:
        value = self.metrics.registry.get_sample_value(
            "united_http_connections_closed_total", {"server": "webhook", "reason": reason}
        )
        return value or 0.0


_written: list[Any] = []


def _files(cert: bytes, key: bytes) -> tuple[str, str]:
    import tempfile

    paths = []
    for data in (cert, key):
        file = tempfile.NamedTemporaryFile(suffix=".pem")  # noqa: SIM115 - kept open for the test's life
        file.write(data)
        file.flush()
        _written.append(file)
        paths.append(file.name)
    return paths[0], paths[1]


async def webhook_server(
    limits: Limits, *, client_ca: bytes | None = None, unauthenticated: list[str] | None = None
) -> Webhook:
    bundle = issue(["127.0.0.1"], now=NOW)
    tls = TLS()
    if client_ca is not None:
        tls.require_client_certificates(client_ca)
    tls.load(bundle.cert_pem, bundle.key_pem)
    metrics = Metrics(process_metrics=False)
    routes = {"/mutate-pods": echo, "/convert": convert}
    server = WebhookServer(host="127.0.0.1", port=0, tls=tls, routes=routes, metrics=metrics, limits=limits,
                           unauthenticated=unauthenticated or ())  # fmt: skip
    await server.start()
    return Webhook(server, bundle, metrics)


@pytest.fixture
async def short() -> AsyncIterator[Webhook]:
    served = await webhook_server(SHORT)
    try:
        yield served
    finally:
        await served.server.stop()


@pytest.fixture
async def long() -> AsyncIterator[Webhook]:
    served = await webhook_server(LONG)
    try:
        yield served
    finally:
        await served.server.stop()


async def until(condition: Callable[[], bool]) -> None:
    """Wait (at most :data:`WITHIN`) for ``condition``."""
    for _ in range(int(WITHIN / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"not within {WITHIN:g} s")


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    """True once the server has closed the connection (EOF or reset)."""
    try:
        async with asyncio.timeout(WITHIN):
            while await reader.read(65536):
                pass
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return True


async def raw(port: int, source: str = "127.0.0.1") -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))


def client_hello() -> bytes:
    """The first flight of a real TLS client."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="x")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


# -- the webhook port ---------------------------------------------------------------------


async def test_a_connection_that_sends_nothing_is_closed_at_the_handshake_deadline(short: Webhook) -> None:
    reader, writer = await raw(short.port)
    assert await closed_by_server(reader)
    writer.close()
    assert short.closed("handshake_deadline") == 1
    assert (await short.post(review()))[0] == 200


async def test_half_a_tls_handshake_is_closed(short: Webhook) -> None:
    hello = client_hello()
    reader, writer = await raw(short.port)
    writer.write(hello[: len(hello) // 2])
    await writer.drain()
    assert await closed_by_server(reader)
    writer.close()
    assert short.closed("handshake_deadline") == 1


async def test_dribbled_headers_are_cut_at_the_request_deadline(short: Webhook) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", short.port, ssl=short.client_ssl())
    writer.write(b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\n")

    async def dribble() -> None:
        with pytest.raises((ConnectionResetError, BrokenPipeError, ssl.SSLError, RuntimeError)):
            for _ in range(int(WITHIN / 0.02)):
                writer.write(b"X")
                await writer.drain()
                await asyncio.sleep(0.02)

    dribbling = asyncio.create_task(dribble())
    assert await closed_by_server(reader)
    await dribbling
    writer.close()
    assert short.closed("request_deadline") == 1


async def test_a_stalled_body_is_cut_at_the_request_deadline(short: Webhook) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", short.port, ssl=short.client_ssl())
    writer.write(b"POST /mutate-pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 1000\r\n\r\n{\"kind\":")  # fmt: skip
    await writer.drain()
    assert await closed_by_server(reader)
    writer.close()
    assert short.closed("request_deadline") == 1


async def test_the_caps_refuse_extra_connections_and_a_legitimate_request_is_served(long: Webhook) -> None:
    held = [await raw(long.port, "127.0.0.2") for _ in range(LONG.max_per_peer)]
    reader, writer = await raw(long.port, "127.0.0.2")
    assert await closed_by_server(reader), "a fourth connection from one peer is refused"
    writer.close()
    assert long.closed("too_many_from_peer") == 1
    assert (await long.post(review()))[0] == 200, "another peer is served"
    held += [await raw(long.port, "127.0.0.3") for _ in range(LONG.max_connections - LONG.max_per_peer)]
    reader, writer = await raw(long.port, "127.0.0.4")
    assert await closed_by_server(reader), "a seventh connection is refused, whoever opens it"
    writer.close()
    assert long.closed("too_many_connections") == 1
    for _, w in held[:2]:
        w.close()
    assert long.server.listener is not None
    listener = long.server.listener
    await until(lambda: listener.open == len(held) - 2)
    status, body = await long.post(review("after"))
    assert (status, body["response"]) == (200, {"uid": "after", "allowed": True})
    for _, w in held[2:]:
        w.close()


async def test_the_refused_never_cost_a_tls_context(long: Webhook) -> None:
    """Silent connections are held without TLS: the listener counts them, no handshake started."""
    held = [await raw(long.port, "127.0.0.5") for _ in range(LONG.max_per_peer)]
    assert long.server.listener is not None
    listener = long.server.listener
    await until(lambda: listener.open == LONG.max_per_peer)
    assert all(guard.tls_task is None for guard in listener.guards)
    for _, writer in held:
        writer.close()


# -- authenticated callers -------------------------------------------------------------------


def _client_pair(ca_name: str) -> tuple[bytes, bytes, bytes]:
    """A CA PEM, and a client certificate and key it signed (clientAuth)."""
    key = ec.generate_private_key(ec.SECP256R1())
    ca_subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_name)])
    ca = (
        x509.CertificateBuilder().subject_name(ca_subject).issuer_name(ca_subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(NOW - timedelta(hours=1))
        .not_valid_after(NOW + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_subject).public_key(client_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(NOW - timedelta(hours=1)).not_valid_after(NOW + timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    pem = serialization.Encoding.PEM
    key_pem = client_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return ca.public_bytes(pem), client.public_bytes(pem), key_pem


async def test_with_a_client_ca_only_a_client_with_its_certificate_is_served() -> None:
    ca, cert, key = _client_pair("apiserver-webhook-client-ca")
    _, other_cert, other_key = _client_pair("someone-else")
    served = await webhook_server(LONG, client_ca=ca, unauthenticated=["/convert"])
    try:
        status, text = await served.post(review("anonymous"))
        assert (status, text) == (401, "a client certificate is required\n")
        with pytest.raises(aiohttp.ClientError):
            await served.post(review("forged"), context=served.client_ssl(cert=(other_cert, other_key)))
        status, body = await served.post(review("apiserver"), context=served.client_ssl(cert=(cert, key)))
        assert (status, body["response"]["uid"]) == (200, "apiserver")
        status, body = await served.post(conversion("c-1"), path="/convert")
        assert (status, body["response"]["uid"]) == (200, "c-1"), "the API server presents none to conversion"
    finally:
        await served.server.stop()


async def test_without_a_client_ca_anyone_is_served() -> None:
    served = await webhook_server(LONG)
    try:
        status, body = await served.post(review("anyone"))
        assert (status, body["response"]["uid"]) == (200, "anyone")
    finally:
        await served.server.stop()


def test_a_client_ca_must_hold_a_certificate() -> None:
    with pytest.raises(ssl.SSLError):
        TLS().require_client_certificates(b"-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n")
    with pytest.raises(ssl.SSLError):
        TLS().require_client_certificates(b"")


# -- the probes and metrics port --------------------------------------------------------------


async def health_server(limits: Limits) -> tuple[HealthServer, Metrics, int]:
    metrics = Metrics(process_metrics=False)
    server = HealthServer(exposition=metrics.exposition, limits=limits,
                          closed=lambda reason: metrics.connection_closed("http", reason))  # fmt: skip
    return server, metrics, await server.start("127.0.0.1", 0)


@pytest.fixture
async def health() -> AsyncIterator[tuple[HealthServer, Metrics, int]]:
    served = await health_server(SHORT)
    try:
        yield served
    finally:
        await served[0].stop()


@pytest.fixture
async def patient_health() -> AsyncIterator[tuple[HealthServer, Metrics, int]]:
    served = await health_server(LONG)
    try:
        yield served
    finally:
        await served[0].stop()


def http_closed(metrics: Metrics, reason: str) -> float:
    labels = {"server": "http", "reason": reason}
    value = metrics.registry.get_sample_value("united_http_connections_closed_total", labels)
    return value or 0.0


async def healthz(port: int) -> int:
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/healthz") as resp:
        return resp.status


Health = tuple[HealthServer, Metrics, int]


async def test_the_probe_port_closes_silent_and_dribbling_connections(health: Health) -> None:
    _, metrics, port = health
    silent, silent_writer = await raw(port)
    dribbler, dribbler_writer = await raw(port)
    dribbler_writer.write(b"GET /healthz HTTP/1.1\r\nHo")
    assert await closed_by_server(silent)
    assert await closed_by_server(dribbler)
    silent_writer.close()
    dribbler_writer.close()
    assert http_closed(metrics, "request_deadline") == 2
    assert await healthz(port) == 200


async def test_the_probe_port_caps_connections_per_peer(patient_health: tuple[HealthServer, Metrics, int]) -> None:
    _, metrics, port = patient_health
    held = [await raw(port, "127.0.0.6") for _ in range(SHORT.max_per_peer)]
    reader, writer = await raw(port, "127.0.0.6")
    assert await closed_by_server(reader)
    writer.close()
    assert http_closed(metrics, "too_many_from_peer") == 1
    assert await healthz(port) == 200
    for _, w in held:
        w.close()
