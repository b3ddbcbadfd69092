"""How a client reaches a worker: address, TLS and bearer token, as one frozen value.

``ConnectClient`` takes it, and so can any tool built on the client (``ctl``)::

    settings = ConnectionSettings(
        "worker-1.example.com:8083",
        tls=TlsOptions(ca_file=Path("ca.pem"), cert_file=Path("me.pem"), key_file=Path("me.key")),
    )
    with ConnectClient(settings) as client: ...

Without ``tls`` the channel is plaintext. With it, the worker's certificate is verified
against ``ca_file`` (the system's roots when None) and against the address's host name
(or ``server_name``); ``cert_file``/``key_file`` present a client certificate (a worker
with ``listeners.https.ssl.client.auth=required`` needs one). ``token`` is sent as
``authorization: Bearer <token>`` with every call (a worker with ``auth.tokens.file``
needs one); send it over TLS, or anyone on the path can read it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import grpc

from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.security.credential_files import token_problem

__all__ = ["ConnectionSettings", "TlsOptions"]


@dataclass(frozen=True, slots=True)
class TlsOptions:
    """A client's TLS settings (PEM files)."""

    #: The CA bundle that signed the worker's certificate; None: the system's roots.
    ca_file: Path | None = None
    #: The client certificate (chain) to present, for workers that require one.
    cert_file: Path | None = None
    #: The client certificate's private key (unencrypted PEM).
    key_file: Path | None = None
    #: The name to check the worker's certificate against instead of the address's host
    #: (e.g. when connecting by IP to a certificate issued for a DNS name).
    server_name: str = ""


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    """Where a worker is and how to reach it."""

    #: ``host:port``.
    address: str
    #: None: plaintext.
    tls: TlsOptions | None = None
    #: A bearer token; empty: none.
    token: str = field(default="", repr=False)

    def channel(self, options: Sequence[tuple[str, Any]] = ()) -> grpc.Channel:
        """A new channel with these settings (the caller closes it).

        Raises:
            InvalidArgumentError: a file that cannot be read, a certificate without its key
                (or the reverse), a token a header cannot carry; names the field.
        """
        all_options = list(options)
        if self.token:
            problem = token_problem(self.token)
            if problem is not None:
                raise InvalidArgumentError.for_field("token", problem)
        if self.tls is None:
            channel = grpc.insecure_channel(self.address, options=all_options)
        else:
            if self.tls.server_name:
                all_options.append(("grpc.ssl_target_name_override", self.tls.server_name))
            channel = grpc.secure_channel(
                self.address, _credentials(self.tls), options=all_options
            )
        if not self.token:
            return channel
        return grpc.intercept_channel(channel, _BearerToken(self.token))


def _read(path: Path | None, field_name: str) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InvalidArgumentError.for_field(
            field_name, f"cannot read {path}: {exc.strerror or exc}"
        ) from None


def _credentials(tls: TlsOptions) -> grpc.ChannelCredentials:
    if (tls.cert_file is None) != (tls.key_file is None):
        missing = "tls.key_file" if tls.key_file is None else "tls.cert_file"
        raise InvalidArgumentError.for_field(
            missing, "a client certificate needs both tls.cert_file and tls.key_file"
        )
    return grpc.ssl_channel_credentials(
        root_certificates=_read(tls.ca_file, "tls.ca_file"),
        private_key=_read(tls.key_file, "tls.key_file"),
        certificate_chain=_read(tls.cert_file, "tls.cert_file"),
    )


class _CallDetails(NamedTuple):
    method: str
    timeout: float | None
    metadata: Sequence[tuple[str, str | bytes]] | None
    credentials: grpc.CallCredentials | None
    wait_for_ready: bool | None
    compression: grpc.Compression | None


class _BearerToken(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[type-arg]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[type-arg]
):
    """Adds ``authorization: Bearer <token>`` to every call (a plaintext channel cannot
    carry gRPC call credentials, so the token travels as plain metadata)."""

    def __init__(self, token: str) -> None:
        self._header = ("authorization", f"Bearer {token}")

    def _with_token(self, details: Any) -> _CallDetails:
        metadata = [*(details.metadata or ()), self._header]
        return _CallDetails(
            details.method, details.timeout, metadata, details.credentials,
            details.wait_for_ready, details.compression,
        )

    def intercept_unary_unary(
        self, continuation: Callable[[Any, Any], Any], client_call_details: Any, request: Any
    ) -> Any:
        return continuation(self._with_token(client_call_details), request)

    def intercept_unary_stream(
        self, continuation: Callable[[Any, Any], Any], client_call_details: Any, request: Any
    ) -> Any:
        return continuation(self._with_token(client_call_details), request)
