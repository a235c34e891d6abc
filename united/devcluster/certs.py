"""Self-signed TLS material for one local control plane, made with the openssl CLI.

openssl is on every Debian machine (and ``provision`` installs it otherwise), so this
needs no Python crypto dependency. A fresh CA per cluster run costs well under a
second and means no private key outlives the run.
"""

from __future__ import annotations

import ipaddress
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

LOOPBACK_HOSTS = ("127.0.0.1", "localhost")


@dataclass(frozen=True)
class CertificateSet:
    """Paths of the generated files."""

    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_pub: Path


class CertificateError(RuntimeError):
    """openssl failed; the message carries its output."""


def subject_alt_names(hosts: Sequence[str]) -> str:
    """The ``subjectAltName`` value for ``hosts``: IP entries for addresses, DNS otherwise."""
    names = []
    for host in hosts:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            names.append(f"DNS:{host}")
        else:
            names.append(f"IP:{host}")
    return ",".join(names)


def serving_extensions(hosts: Sequence[str]) -> str:
    """The x509 v3 extensions of the API server's serving certificate."""
    return (
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectKeyIdentifier=hash\n"
        "authorityKeyIdentifier=keyid,issuer\n"
        f"subjectAltName={subject_alt_names(hosts)}\n"
    )


def generate(
    directory: Path,
    *,
    hosts: Sequence[str] = LOOPBACK_HOSTS,
    openssl: str = "openssl",
) -> CertificateSet:
    """Create a CA, a serving certificate for ``hosts`` signed by it, and the
    ServiceAccount token signing key pair, all in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    certs = CertificateSet(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        service_account_key=directory / "sa.key",
        service_account_pub=directory / "sa.pub",
    )
    csr = directory / "apiserver.csr"
    extensions = directory / "apiserver.ext"
    extensions.write_text(serving_extensions(hosts))

    def run(*args: str) -> None:
        result = subprocess.run([openssl, *args], capture_output=True, text=True, check=False, cwd=directory)
        if result.returncode != 0:
            raise CertificateError(f"openssl {args[0]} failed: {result.stderr.strip()}")

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-sha256",
        "-days",
        "3650",
        "-subj",
        "/CN=united-devcluster-ca",
        # Python >= 3.13 verifies strictly (VERIFY_X509_STRICT): a CA must state its key usage.
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
        "-keyout",
        str(certs.ca_key),
        "-out",
        str(certs.ca_cert),
    )
    run(
        "req",
        "-new",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-sha256",
        "-subj",
        "/CN=kube-apiserver",
        "-keyout",
        str(certs.serving_key),
        "-out",
        str(csr),
    )
    run(
        "x509",
        "-req",
        "-sha256",
        "-days",
        "365",
        "-in",
        str(csr),
        "-CA",
        str(certs.ca_cert),
        "-CAkey",
        str(certs.ca_key),
        "-CAcreateserial",
        "-extfile",
        str(extensions),
        "-out",
        str(certs.serving_cert),
    )
    run("genrsa", "-out", str(certs.service_account_key), "2048")
    run("rsa", "-in", str(certs.service_account_key), "-pubout", "-out", str(certs.service_account_pub))
    for path in (certs.ca_key, certs.serving_key, certs.service_account_key):
        path.chmod(0o600)
    return certs
