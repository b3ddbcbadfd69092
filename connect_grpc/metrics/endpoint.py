"""The Prometheus endpoint (``metrics.listener=http://host:port``): the text exposition
format of one registry over HTTP (any path; ``/metrics`` by convention), served by
prometheus_client on a thread of its own."""

from __future__ import annotations

from wsgiref.simple_server import WSGIServer

import structlog
from prometheus_client import CollectorRegistry, start_http_server

from connect_grpc.config.worker import METRICS_LISTENER_PROPERTY
from connect_grpc.kernel.errors import StartupError

log = structlog.get_logger(__name__)


class MetricsEndpoint:
    """Serves ``registry`` on ``host:port`` (port 0 picks a free one: see ``port``)."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self._registry = registry
        self.host = host
        self.port = port
        self._server: WSGIServer | None = None

    def start(self) -> None:
        """Binds and serves. An address that cannot be bound is a StartupError naming
        ``metrics.listener``."""
        try:
            server, _thread = start_http_server(self.port, self.host, self._registry)
        except OSError as exc:
            listener = f"http://{self.host}:{self.port}"
            raise StartupError(
                f"cannot serve metrics on {listener}: {exc} (the port is in use, or the host "
                "is not an address of this machine)",
                fix=f"stop what holds the port, or set the property {METRICS_LISTENER_PROPERTY}"
                " to http://HOST:PORT with a free port and an address of this machine",
                property_name=METRICS_LISTENER_PROPERTY,
            ) from None
        self._server = server
        self.port = server.server_port
        log.info("metrics_endpoint_started", host=self.host, port=self.port)

    def stop(self) -> None:
        """Stops serving and closes the socket. Idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
            log.info("metrics_endpoint_stopped")


def serve_metrics(
    listener: tuple[str, int] | None, registry: CollectorRegistry
) -> MetricsEndpoint | None:
    """The started endpoint of ``metrics.listener`` (None when the property is unset)."""
    if listener is None:
        return None
    endpoint = MetricsEndpoint(registry, *listener)
    endpoint.start()
    return endpoint
