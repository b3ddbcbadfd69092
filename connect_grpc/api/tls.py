"""gRPC credentials from a worker's TLS settings: the listener's, with certificates
re-read when their files change (no restart), and those of the worker's own channels to
other workers."""

from __future__ import annotations

import threading

import grpc
import structlog

from connect_grpc.security.config import ClientAuth, TlsConfig
from connect_grpc.security.reloading import ReloadingFiles
from connect_grpc.security.tls_files import TlsMaterial, load_tls_material

log = structlog.get_logger(__name__)


def _material(tls: TlsConfig, what: str) -> ReloadingFiles[TlsMaterial]:
    return ReloadingFiles(tls.files.paths, lambda: load_tls_material(tls.files), what)


def server_credentials(tls: TlsConfig) -> grpc.ServerCredentials:
    """The listener's credentials. gRPC asks for the certificate configuration before
    each new connection's handshake; it changes once the PEM files did (replaced whole:
    a certificate and a key that do not match keep the previous pair in use)."""
    files = _material(tls, "tls listener")
    require = tls.client_auth is ClientAuth.REQUIRED

    def configuration(material: TlsMaterial) -> grpc.ServerCertificateConfiguration:
        return grpc.ssl_server_certificate_configuration(
            [(material.private_key, material.certificate_chain)],
            root_certificates=material.truststore if require else None,
        )

    def fetch() -> grpc.ServerCertificateConfiguration | None:
        try:
            return configuration(files.value) if files.refresh() else None
        except Exception as exc:  # gRPC's C core calls it: never let an error escape
            log.error("tls_reload_failed", error=f"{type(exc).__name__}: {exc}")
            return None

    return grpc.dynamic_ssl_server_credentials(
        configuration(files.value),
        fetch,  # type: ignore[arg-type]  # grpc-stubs omit None, gRPC's "no change"
        require_client_authentication=require,
    )


class PeerCredentials:
    """The credentials of a worker's channels to the other workers of its cluster: TLS
    whenever its own listener uses it (every worker of a cluster listens alike), verifying
    the peer's certificate against the truststore (the system's roots without one) and
    the address the peer advertises, and presenting this worker's certificate (which a
    peer requiring client certificates checks). Follows the files as the listener does:
    :meth:`current` returns new credentials, with a new version, after they changed."""

    def __init__(self, tls: TlsConfig) -> None:
        self._files = _material(tls, "tls peer channels")
        self._lock = threading.Lock()
        self._built: tuple[int, grpc.ChannelCredentials] | None = None

    def current(self) -> tuple[int, grpc.ChannelCredentials]:
        """(version, credentials); the version changes when the files did."""
        self._files.refresh()
        version = self._files.version
        with self._lock:
            if self._built is None or self._built[0] != version:
                material = self._files.value
                self._built = (
                    version,
                    grpc.ssl_channel_credentials(
                        root_certificates=material.truststore,
                        private_key=material.private_key,
                        certificate_chain=material.certificate_chain,
                    ),
                )
            return self._built
