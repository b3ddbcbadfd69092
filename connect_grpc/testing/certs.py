"""Certificates for tests, made at test time with the ``openssl`` command (no private key
is ever committed): a CA, and server/client certificates it signs.

Keys are ECDSA P-256 (fast to make); each certificate is valid for a day, for both server
and client authentication, with the host names and IP addresses given as SANs.
:class:`Pki` is the set of identities the security tests share.
"""

from __future__ import annotations

import ipaddress
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from connect_grpc.client.connection import ConnectionSettings, TlsOptions

OPENSSL_TIMEOUT_S = 30
_KEY_OPTIONS = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


def openssl() -> str:
    """The path of the ``openssl`` command; raises RuntimeError when it is missing."""
    found = shutil.which("openssl")
    if found is None:
        raise RuntimeError("the openssl command is needed to make test certificates")
    return found


def _run(*args: str | Path) -> str:
    result = subprocess.run(
        [openssl(), *map(str, args)], capture_output=True, text=True,
        timeout=OPENSSL_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {result.stderr.strip()}")
    return result.stdout


def subject_of(certificate: Path) -> str:
    """The certificate's subject in RFC 2253 form (``CN=…,O=…``), as gRPC reports it."""
    printed = _run("x509", "-in", certificate, "-noout", "-subject", "-nameopt", "RFC2253")
    return printed.strip().removeprefix("subject=").strip()


@dataclass(frozen=True, slots=True)
class Identity:
    """A certificate and its key (PEM files)."""

    certificate: Path
    key: Path
    subject: str


@dataclass(frozen=True, slots=True)
class CertificateAuthority:
    """A self-signed CA in ``directory``: ``ca.pem`` (the certificate to trust), ``ca.key``."""

    directory: Path
    certificate: Path
    key: Path

    @classmethod
    def create(
        cls, directory: Path, common_name: str = "connect-grpc test CA"
    ) -> CertificateAuthority:
        directory.mkdir(parents=True, exist_ok=True)
        certificate, key = directory / "ca.pem", directory / "ca.key"
        _run("req", "-x509", *_KEY_OPTIONS, "-keyout", key, "-out", certificate,
             "-days", "1", "-subj", f"/CN={common_name}",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        return cls(directory, certificate, key)

    def issue(
        self,
        name: str,
        common_name: str,
        organization: str = "connect-grpc tests",
        hosts: Sequence[str] = ("127.0.0.1", "localhost"),
    ) -> Identity:
        """A certificate for ``/O=<organization>/CN=<common_name>`` with ``hosts`` as
        SANs, in ``<directory>/<name>.pem`` and ``<name>.key`` (replaced if present)."""
        certificate, key = self.directory / f"{name}.pem", self.directory / f"{name}.key"
        request, extensions = self.directory / f"{name}.csr", self.directory / f"{name}.ext"
        extensions.write_text(_extensions(hosts), encoding="ascii")
        _run("req", *_KEY_OPTIONS, "-utf8", "-keyout", key, "-out", request,
             "-subj", f"/O={organization}/CN={common_name}")
        _run("x509", "-req", "-in", request, "-CA", self.certificate, "-CAkey", self.key,
             "-CAcreateserial", "-CAserial", self.directory / "ca.srl",
             "-out", certificate, "-days", "1", "-extfile", extensions)
        request.unlink()
        extensions.unlink()
        return Identity(certificate, key, subject_of(certificate))


@dataclass(frozen=True, slots=True)
class Pki:
    """The identities of the security tests: a CA that signs two workers' certificates
    (``worker-1``, ``worker-2``), an admin's (``alice``), a viewer's (``dashboard``) and a
    stranger's (a role nowhere); and a rogue CA, trusted by nobody, with an ``alice`` of
    its own."""

    ca: CertificateAuthority
    worker: Identity
    follower: Identity
    admin: Identity
    viewer: Identity
    stranger: Identity
    rogue_ca: CertificateAuthority
    rogue: Identity

    @classmethod
    def create(cls, root: Path) -> Pki:
        """Makes every certificate under ``root`` (``ca/`` and ``rogue/``)."""
        ca = CertificateAuthority.create(root / "ca")
        rogue_ca = CertificateAuthority.create(root / "rogue", "rogue CA")
        return cls(
            ca=ca,
            worker=ca.issue("worker", "worker-1"),
            follower=ca.issue("follower", "worker-2"),
            admin=ca.issue("alice", "alice"),
            viewer=ca.issue("dashboard", "dashboard"),
            stranger=ca.issue("stranger", "stranger"),
            rogue_ca=rogue_ca,
            rogue=rogue_ca.issue("alice", "alice"),
        )

    def settings(self, identity: Identity | None, token: str = "") -> ConnectionSettings:
        """A client's settings (no address yet) that trust this CA, presenting ``identity``
        (none: server-side TLS only) and the bearer ``token`` (empty: none)."""
        tls = TlsOptions(
            self.ca.certificate,
            identity.certificate if identity else None,
            identity.key if identity else None,
        )
        return ConnectionSettings("", tls=tls, token=token)


def _extensions(hosts: Sequence[str]) -> str:
    lines = [
        "basicConstraints=critical,CA:FALSE",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        "extendedKeyUsage=serverAuth,clientAuth",
    ]
    if hosts:
        lines.append("subjectAltName=" + ",".join(_san(host) for host in hosts))
    return "\n".join(lines) + "\n"


def _san(host: str) -> str:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return f"DNS:{host}"
    return f"IP:{host}"
