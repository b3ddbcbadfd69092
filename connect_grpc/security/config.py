"""The worker properties of TLS and authentication.

TLS follows Kafka Connect's ``listeners.https.`` family, in the PEM-file form: Kafka's PEM
support (``ssl.keystore.type=PEM``) takes a key and its chain in ``ssl.keystore.location``
or inline in ``ssl.keystore.key``/``ssl.keystore.certificate.chain``; we take one file
each, under librdkafka's names (``ssl.certificate.location``, ``ssl.key.location``), and
the CA bundle under Kafka's ``ssl.truststore.location`` (``ssl.truststore.type=PEM``).
``ssl.client.auth`` keeps Kafka's name and values, except ``requested``: gRPC's Python
server can only require a client certificate or not ask for one.

Authentication has no Kafka Connect counterpart (a REST extension does it there); our
properties are ``auth.tokens.file``, ``auth.principals.file`` and ``auth.open.services``.
Who the caller is:

- ``listeners.https.ssl.client.auth=required``: the client certificate's subject. Its role
  comes from ``auth.principals.file``; without that file every certificate the truststore
  verifies is ``admin`` (the CA decides who gets in, as with Kafka Connect's mTLS).
  Tokens are not consulted (``auth.tokens.file`` is then refused as a contradiction).
- otherwise, with ``auth.tokens.file``: the bearer token's line of that file.
- otherwise nobody is authenticated: every caller may do everything a client may.

Each inconsistent combination is an InvalidArgumentError naming the property to change.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from connect_grpc.kernel.configdef import java_trim
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.security.credential_files import read_principals, read_tokens
from connect_grpc.security.tls_files import TlsFiles, load_tls_material

LISTENERS = "listeners"
HTTPS_PREFIX = "listeners.https."
SSL_CERTIFICATE_LOCATION = "listeners.https.ssl.certificate.location"
SSL_KEY_LOCATION = "listeners.https.ssl.key.location"
SSL_TRUSTSTORE_LOCATION = "listeners.https.ssl.truststore.location"
SSL_CLIENT_AUTH = "listeners.https.ssl.client.auth"
SSL_KEYSTORE_LOCATION = "listeners.https.ssl.keystore.location"
SSL_KEYSTORE_TYPE = "listeners.https.ssl.keystore.type"
SSL_TRUSTSTORE_TYPE = "listeners.https.ssl.truststore.type"
SSL_KEY_PASSWORD = "listeners.https.ssl.key.password"

AUTH_TOKENS_FILE = "auth.tokens.file"
AUTH_PRINCIPALS_FILE = "auth.principals.file"
AUTH_OPEN_SERVICES = "auth.open.services"

HEALTH_SERVICE = "grpc.health.v1.Health"
REFLECTION_SERVICE = "grpc.reflection.v1alpha.ServerReflection"
#: The services ``auth.open.services`` may name (and names by default).
OPENABLE_SERVICES = (HEALTH_SERVICE, REFLECTION_SERVICE)


class ClientAuth(enum.Enum):
    """``listeners.https.ssl.client.auth``."""

    NONE = "none"
    REQUIRED = "required"


@dataclass(frozen=True, slots=True)
class TlsConfig:
    files: TlsFiles
    client_auth: ClientAuth = ClientAuth.NONE


@dataclass(frozen=True, slots=True)
class AuthConfig:
    tokens_file: Path | None = None
    principals_file: Path | None = None
    #: Services any caller may use, even when the worker authenticates its callers.
    open_services: frozenset[str] = frozenset(OPENABLE_SERVICES)


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    """A worker's TLS listener (None: plaintext) and how it authenticates its callers."""

    tls: TlsConfig | None = None
    auth: AuthConfig = field(default_factory=AuthConfig)

    @property
    def client_certificates(self) -> bool:
        """Whether every caller presents a certificate the truststore verifies (mTLS)."""
        return self.tls is not None and self.tls.client_auth is ClientAuth.REQUIRED

    @property
    def authenticates(self) -> bool:
        """Whether callers must prove who they are (else everyone may do everything)."""
        return self.client_certificates or self.auth.tokens_file is not None

    @classmethod
    def from_properties(cls, props: Mapping[str, str], tls_listener: bool) -> SecurityConfig:
        """Parses the properties and checks the files they name (readable, well-formed,
        a key that matches its certificate). ``tls_listener``: the listener is
        ``grpcs://``. Raises InvalidArgumentError naming the property at fault."""
        tls = None
        if tls_listener:
            tls = _tls(props)
        else:
            _refuse_tls_properties(props)
        auth = _auth(props, tls)
        config = cls(tls, auth)
        config.check_files()
        return config

    def check_files(self) -> None:
        """Loads every file once, as the worker will; raises InvalidArgumentError."""
        if self.tls is not None:
            load_tls_material(self.tls.files)
        if self.auth.tokens_file is not None:
            read_tokens(self.auth.tokens_file, AUTH_TOKENS_FILE)
        if self.auth.principals_file is not None:
            read_principals(self.auth.principals_file, AUTH_PRINCIPALS_FILE)


def _text(props: Mapping[str, str], name: str) -> str:
    return java_trim(props.get(name, ""))


def _path(props: Mapping[str, str], name: str) -> Path | None:
    text = _text(props, name)
    return Path(text) if text else None


def _refuse_tls_properties(props: Mapping[str, str]) -> None:
    """A plaintext listener with TLS properties is a forgotten ``grpcs://``: refused, so
    that a worker meant to use TLS never serves in plaintext."""
    given = sorted(name for name in props if name.startswith(HTTPS_PREFIX) and _text(props, name))
    if given:
        raise InvalidArgumentError.for_field(
            LISTENERS,
            f"{', '.join(given)} set, but the listener is plaintext (grpc://): use "
            "grpcs://host:port for TLS, or remove the listeners.https.* properties",
        )


def _tls(props: Mapping[str, str]) -> TlsConfig:
    _refuse_unsupported_stores(props)
    certificate = _required_path(props, SSL_CERTIFICATE_LOCATION)
    key = _required_path(props, SSL_KEY_LOCATION)
    truststore = _path(props, SSL_TRUSTSTORE_LOCATION)
    client_auth = _client_auth(props)
    if client_auth is ClientAuth.REQUIRED and truststore is None:
        raise InvalidArgumentError.for_field(
            SSL_TRUSTSTORE_LOCATION,
            f"is required with {SSL_CLIENT_AUTH}=required: the PEM bundle of the CA(s) that "
            "sign client certificates",
        )
    files = TlsFiles(
        certificate, key, truststore,
        SSL_CERTIFICATE_LOCATION, SSL_KEY_LOCATION, SSL_TRUSTSTORE_LOCATION,
    )
    return TlsConfig(files, client_auth)


def _required_path(props: Mapping[str, str], name: str) -> Path:
    path = _path(props, name)
    if path is None:
        raise InvalidArgumentError.for_field(
            name, "is required with a grpcs:// listener (a PEM file)"
        )
    return path


def _refuse_unsupported_stores(props: Mapping[str, str]) -> None:
    if _text(props, SSL_KEYSTORE_LOCATION):
        raise InvalidArgumentError.for_field(
            SSL_KEYSTORE_LOCATION,
            f"keystores are not supported: give the PEM certificate chain in "
            f"{SSL_CERTIFICATE_LOCATION} and its PEM private key in {SSL_KEY_LOCATION}",
        )
    if _text(props, SSL_KEY_PASSWORD):
        raise InvalidArgumentError.for_field(
            SSL_KEY_PASSWORD,
            "encrypted private keys are not supported by gRPC: give an unencrypted PEM key "
            "readable only by the worker",
        )
    for name in (SSL_KEYSTORE_TYPE, SSL_TRUSTSTORE_TYPE):
        kind = _text(props, name)
        if kind and kind.upper() != "PEM":
            raise InvalidArgumentError.for_field(name, f"only PEM is supported, got {kind!r}")


def _client_auth(props: Mapping[str, str]) -> ClientAuth:
    text = _text(props, SSL_CLIENT_AUTH).lower()
    if not text:
        return ClientAuth.NONE
    if text == "requested":
        raise InvalidArgumentError.for_field(
            SSL_CLIENT_AUTH,
            "requested is not supported (gRPC's Python server either requires a client "
            "certificate or asks for none): use required or none",
        )
    try:
        return ClientAuth(text)
    except ValueError:
        raise InvalidArgumentError.for_field(
            SSL_CLIENT_AUTH, f"expected none or required, got {props[SSL_CLIENT_AUTH]!r}"
        ) from None


def _auth(props: Mapping[str, str], tls: TlsConfig | None) -> AuthConfig:
    mtls = tls is not None and tls.client_auth is ClientAuth.REQUIRED
    tokens_file = _path(props, AUTH_TOKENS_FILE)
    principals_file = _path(props, AUTH_PRINCIPALS_FILE)
    if principals_file is not None and not mtls:
        raise InvalidArgumentError.for_field(
            AUTH_PRINCIPALS_FILE,
            "gives roles to client certificates, so it needs a grpcs:// listener with "
            f"{SSL_CLIENT_AUTH}=required",
        )
    if tokens_file is not None and mtls:
        raise InvalidArgumentError.for_field(
            AUTH_TOKENS_FILE,
            f"tokens are not used with {SSL_CLIENT_AUTH}=required (the client certificate "
            f"is the caller; give certificates roles with {AUTH_PRINCIPALS_FILE})",
        )
    return AuthConfig(tokens_file, principals_file, _open_services(props))


def _open_services(props: Mapping[str, str]) -> frozenset[str]:
    if AUTH_OPEN_SERVICES not in props:
        return frozenset(OPENABLE_SERVICES)
    names = [name.strip() for name in props[AUTH_OPEN_SERVICES].split(",") if name.strip()]
    unknown = [name for name in names if name not in OPENABLE_SERVICES]
    if unknown:
        raise InvalidArgumentError.for_field(
            AUTH_OPEN_SERVICES,
            f"only {' and '.join(OPENABLE_SERVICES)} can be open to unauthenticated "
            f"callers, got {', '.join(unknown)}",
        )
    return frozenset(names)
