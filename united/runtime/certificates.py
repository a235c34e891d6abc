"""The webhook's own certificate authority and serving certificate, with no cert-manager.

Why self-made: the API server only needs to trust the CA named in each webhook
configuration's ``caBundle``, so a private CA that the controller owns is enough, and a
cluster does not need cert-manager (or anyone running ``openssl``) to use WorkloadSpread.

The choices, each a field of :class:`Policy`:

* **ECDSA P-256** keys: generated in ~1 ms (RSA-2048 takes ~50 ms, which matters when
  the e2e tests rotate every few seconds) and accepted by every API server version.
* **A CA valid 10 years, a serving certificate valid 1 year.** The CA is what every
  webhook configuration embeds, so it changes rarely; the serving certificate is cheap to
  replace (only the processes serving it reload it, no configuration changes).
* **Renewal when less than 1/3 of the life remains** (for both): a year's certificate is
  replaced after 8 months, a CA after 6.7 years, so a controller that is down for weeks
  still renews in time.
* **CA rollover with an overlap**: the new CA is *added* to the trust bundle (the
  ``caBundle``) next to the old one, which stays until it expires; the serving certificate
  moves to the new CA only after ``propagation`` (1 hour by default), by which time every
  webhook configuration carries the new bundle. The API server therefore trusts the
  certificate it is shown at every moment of the rollover. Only the newest CA's key is
  kept (the older ones are never used to sign again); a serving certificate that must be
  renewed *during* the propagation window is signed by the new CA at once.
* The serving certificate never outlives its CA, and its names are the union of what it
  had and what is now required, so two replicas started with different ``--webhook-url``
  hosts converge instead of reissuing in turn.
* Validity starts ``backdate`` (5 minutes) in the past, for clocks a little behind.

Pure apart from key generation: every decision takes ``now``, so tests replay years in
microseconds.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_COMMON_NAME = "united-webhook-ca"
#: X.509 caps a common name at 64 characters; clients check the SANs, which carry every name whole.
_MAX_COMMON_NAME = 64
TLS_CERT = "tls.crt"
TLS_KEY = "tls.key"
CA_CERT = "ca.crt"
CA_KEY = "ca.key"
SECRET_KEYS = (TLS_CERT, TLS_KEY, CA_CERT, CA_KEY)
"""The keys of the Secret's ``data``: ``kubernetes.io/tls`` keys, plus the CA's."""


@dataclass(frozen=True, slots=True)
class Policy:
    """Validities and when to renew; see the module docstring for the defaults' reasons."""

    ca_validity: timedelta = timedelta(days=3650)
    cert_validity: timedelta = timedelta(days=365)
    renew_fraction: float = 1 / 3
    """Renew a certificate when less than this fraction of its life remains."""
    propagation: timedelta = timedelta(hours=1)
    """How long a new CA is only trusted, before the serving certificate moves to it."""
    backdate: timedelta = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class Bundle:
    """What the Secret holds: trusted CAs (newest first), the newest CA's key, the serving pair."""

    cas: tuple[x509.Certificate, ...]
    ca_key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey = field(repr=False)

    @property
    def ca_bundle(self) -> bytes:
        """The PEM of every trusted CA: the ``caBundle`` of the webhook configurations."""
        return b"".join(ca.public_bytes(serialization.Encoding.PEM) for ca in self.cas)

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return _key_pem(self.key)

    def secret_data(self) -> dict[str, str]:
        """The Secret's ``data`` (base64 values)."""
        raw = {TLS_CERT: self.cert_pem, TLS_KEY: self.key_pem, CA_CERT: self.ca_bundle, CA_KEY: _key_pem(self.ca_key)}
        return {name: base64.b64encode(value).decode() for name, value in raw.items()}

    @classmethod
    def from_secret_data(cls, data: Mapping[str, str]) -> Bundle:
        """Read a Secret's ``data``; ``ValueError`` when anything is missing or unreadable."""
        try:
            raw = {name: base64.b64decode(data[name], validate=True) for name in SECRET_KEYS}
            cas = tuple(x509.load_pem_x509_certificates(raw[CA_CERT]))
            ca_key = serialization.load_pem_private_key(raw[CA_KEY], password=None)
            key = serialization.load_pem_private_key(raw[TLS_KEY], password=None)
            cert = x509.load_pem_x509_certificate(raw[TLS_CERT])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a webhook certificate bundle: {exc}") from None
        if not isinstance(ca_key, ec.EllipticCurvePrivateKey) or not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("not a webhook certificate bundle: keys must be ECDSA")
        if not cas or _public(cas[0].public_key()) != _public(ca_key.public_key()):
            raise ValueError("not a webhook certificate bundle: ca.key does not belong to the first CA")
        if _public(cert.public_key()) != _public(key.public_key()):
            raise ValueError("not a webhook certificate bundle: tls.key does not belong to tls.crt")
        return cls(cas, ca_key, cert, key)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    encoding, private = serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8
    return key.private_bytes(encoding, private, serialization.NoEncryption())


def _public(key: object) -> bytes:
    assert isinstance(key, ec.EllipticCurvePublicKey)
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _life(cert: x509.Certificate) -> tuple[datetime, datetime]:
    return cert.not_valid_before_utc, cert.not_valid_after_utc


def renewal_time(cert: x509.Certificate, policy: Policy) -> datetime:
    """When ``cert`` has only ``policy.renew_fraction`` of its life left."""
    start, end = _life(cert)
    return end - (end - start) * policy.renew_fraction


def _new_ca(now: datetime, policy: Policy) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{CA_COMMON_NAME}-{now:%Y%m%d%H%M%S}")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - policy.backdate)
        .not_valid_after(now + policy.ca_validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    return ca, key


def _subject_names(hosts: Iterable[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def hosts_of(cert: x509.Certificate) -> list[str]:
    """The DNS names and IP addresses ``cert`` is valid for."""
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [*sans.get_values_for_type(x509.DNSName), *(str(ip) for ip in sans.get_values_for_type(x509.IPAddress))]


def _new_cert(
    hosts: Sequence[str], ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, now: datetime, policy: Policy
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    if not hosts:
        raise ValueError("a serving certificate needs at least one host name")
    key = _new_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0][:_MAX_COMMON_NAME])]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - policy.backdate)
        .not_valid_after(min(now + policy.cert_validity, ca.not_valid_after_utc))
        .add_extension(x509.SubjectAlternativeName(_subject_names(hosts)), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def issue(hosts: Sequence[str], *, now: datetime, policy: Policy = Policy()) -> Bundle:
    """A fresh CA and a serving certificate for ``hosts`` (DNS names or IP addresses)."""
    ca, ca_key = _new_ca(now, policy)
    cert, key = _new_cert(hosts, ca, ca_key, now, policy)
    return Bundle((ca,), ca_key, cert, key)


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def renew(bundle: Bundle, hosts: Sequence[str], *, now: datetime, policy: Policy = Policy()) -> Bundle | None:
    """The bundle to store instead of ``bundle`` at ``now``, or None when it is still good.

    Renews the CA (keeping the old one trusted) and the serving certificate by the rules in
    the module docstring; drops expired CAs from the trust bundle."""
    ca, ca_key = bundle.cas[0], bundle.ca_key
    trusted = [c for c in bundle.cas if c.not_valid_after_utc > now]
    if ca.not_valid_after_utc <= now or now >= renewal_time(ca, policy):
        ca, ca_key = _new_ca(now, policy)
        trusted = [ca, *trusted]
    cert = bundle.cert
    names = hosts_of(cert)
    settled = now - ca.not_valid_before_utc - policy.backdate >= policy.propagation or len(trusted) == 1
    reissue = (
        now >= renewal_time(cert, policy)
        or cert.not_valid_after_utc <= now
        or not set(hosts) <= set(names)
        or not any(_signed_by(cert, c) for c in trusted)
        or (settled and not _signed_by(cert, ca))
    )
    if reissue:
        cert, key = _new_cert([*names, *(h for h in hosts if h not in names)], ca, ca_key, now, policy)
    else:
        key = bundle.key
    renewed = Bundle(tuple(trusted), ca_key, cert, key)
    if renewed.cas == bundle.cas and cert is bundle.cert:
        return None
    return renewed


def next_check(bundle: Bundle, *, now: datetime, policy: Policy = Policy()) -> datetime:
    """The earliest moment :func:`renew` may decide differently than at ``now``."""
    ca = bundle.cas[0]
    moments = [renewal_time(bundle.cert, policy), renewal_time(ca, policy)]
    moments += [c.not_valid_after_utc for c in bundle.cas]
    if not _signed_by(bundle.cert, ca):
        moments.append(ca.not_valid_before_utc + policy.backdate + policy.propagation)
    return max(min(moments), now)


def newer_ca_than(ours: Sequence[x509.Certificate], trusted_pem: bytes) -> bool:
    """Whether ``trusted_pem`` (a ``caBundle`` as written) trusts a CA issued after every CA of
    ``ours``: a replica that read the Secret before another replica's CA rollover holds such an
    ``ours``, and writing it would drop the new CA while the other replica's serving certificate
    moves to it. CAs are ordered by (``notBefore``, serial), the same on every replica; an
    unreadable bundle holds nothing newer."""
    try:
        theirs = x509.load_pem_x509_certificates(trusted_pem)
    except ValueError:
        return False
    if not ours:
        return bool(theirs)
    newest = max(_issued(ca) for ca in ours)
    return any(_issued(ca) > newest for ca in theirs)


def _issued(ca: x509.Certificate) -> tuple[datetime, int]:
    return ca.not_valid_before_utc, ca.serial_number


def utcnow() -> datetime:
    """The current time, timezone-aware (what the functions here compare against)."""
    return datetime.now(UTC)


__all__ = [
    "CA_CERT",
    "CA_KEY",
    "SECRET_KEYS",
    "TLS_CERT",
    "TLS_KEY",
    "Bundle",
    "Policy",
    "hosts_of",
    "issue",
    "next_check",
    "renew",
    "renewal_time",
    "utcnow",
]
