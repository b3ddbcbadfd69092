"""The PEM files of a TLS listener, read and checked (with the standard ``ssl`` module)
before gRPC is given them, so that a wrong file is a start-up error naming its property
rather than a failed handshake later."""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from pathlib import Path

from connect_grpc.kernel.errors import InvalidArgumentError

CERTIFICATE_MARK = b"-----BEGIN CERTIFICATE-----"
ENCRYPTED_KEY_MARKS = (b"ENCRYPTED PRIVATE KEY", b"Proc-Type: 4,ENCRYPTED")
KEY_MARK = b"PRIVATE KEY-----"


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """Where a worker's TLS material is, and the property that names each file."""

    certificate: Path
    key: Path
    #: The CA bundle that client certificates (and, between workers, the peer's server
    #: certificate) must chain to; None: the system's roots, and no client certificates.
    truststore: Path | None
    certificate_property: str
    key_property: str
    truststore_property: str

    @property
    def paths(self) -> tuple[Path, ...]:
        optional = () if self.truststore is None else (self.truststore,)
        return (self.certificate, self.key, *optional)


@dataclass(frozen=True, slots=True)
class TlsMaterial:
    """The files' bytes, checked: a certificate chain, its (unencrypted) key, a CA bundle."""

    certificate_chain: bytes
    private_key: bytes = field(repr=False)
    truststore: bytes | None


def load_tls_material(files: TlsFiles) -> TlsMaterial:
    """Reads and checks the files. Raises InvalidArgumentError naming the property of the
    file at fault: unreadable, not PEM, an encrypted key, a key that is not the
    certificate's, a CA bundle OpenSSL cannot load."""
    chain = _read(files.certificate, files.certificate_property)
    key = _read(files.key, files.key_property)
    trust = None if files.truststore is None else _read(files.truststore, files.truststore_property)
    if CERTIFICATE_MARK not in chain:
        raise _bad(files.certificate_property, files.certificate, "holds no PEM certificate")
    if any(mark in key for mark in ENCRYPTED_KEY_MARKS):
        raise _bad(
            files.key_property, files.key,
            "holds an encrypted private key, which gRPC cannot use: give it an unencrypted "
            "PEM key (e.g. openssl pkey -in key.pem -out plain.pem) readable only by the worker",
        )
    if KEY_MARK not in key:
        raise _bad(files.key_property, files.key, "holds no PEM private key")
    _check_pair(files)
    if trust is not None:
        _check_truststore(files, trust)
    return TlsMaterial(chain, key, trust)


def _read(path: Path, property_name: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _bad(property_name, path, f"cannot be read: {exc.strerror or exc}") from None


def _refuse_password() -> str:
    raise ValueError("the private key is encrypted")


def _check_pair(files: TlsFiles) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(files.certificate, files.key, password=_refuse_password)
    except ssl.SSLError as exc:
        if "KEY_VALUES_MISMATCH" in str(exc):
            raise _bad(
                files.key_property, files.key,
                f"is not the private key of the certificate in {files.certificate}",
            ) from None
        raise _bad(
            files.certificate_property, files.certificate,
            f"and {files.key} are not a usable PEM certificate chain and key: {exc.reason}",
        ) from None
    except ValueError as exc:
        raise _bad(files.key_property, files.key, str(exc)) from None


def _check_truststore(files: TlsFiles, trust: bytes) -> None:
    assert files.truststore is not None
    if CERTIFICATE_MARK not in trust:
        raise _bad(files.truststore_property, files.truststore, "holds no PEM certificate")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(cadata=trust.decode("ascii", "replace"))
    except ssl.SSLError as exc:
        raise _bad(
            files.truststore_property, files.truststore,
            f"is not a PEM CA bundle OpenSSL can load: {exc.reason}",
        ) from None


def _bad(property_name: str, path: Path, problem: str) -> InvalidArgumentError:
    return InvalidArgumentError.for_field(property_name, f"{path} {problem}")
