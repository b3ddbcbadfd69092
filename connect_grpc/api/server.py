"""The gRPC server: ConnectService, server reflection and the standard health service."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import structlog
from grpc_health.v1 import health, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import CollectorRegistry

from connect_grpc.api.auth import build_interceptor
from connect_grpc.api.cluster_service import SERVICE_NAME as CLUSTER_SERVICE_NAME
from connect_grpc.api.cluster_service import ClusterServicer, TaskConfigSink
from connect_grpc.api.forwarding import Forwarder
from connect_grpc.api.health import HealthReporter
from connect_grpc.api.idempotency import RequestLog
from connect_grpc.api.leader_relay import LeaderWritesRelay
from connect_grpc.api.metrics import ServerMetricsInterceptor
from connect_grpc.api.servicer import ConnectServicer
from connect_grpc.api.tls import server_credentials
from connect_grpc.config.worker import Limits
from connect_grpc.herder.interface import Herder
from connect_grpc.metrics.health_metrics import HealthGauges
from connect_grpc.security.config import SecurityConfig
from connect_grpc.security.session_key import RequestVerifier
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc

log = structlog.get_logger(__name__)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["ConnectService"].full_name


class ApiServer:
    """Serves the herder over gRPC on ``host:port`` (port 0 picks a free one)."""

    def __init__(
        self,
        herder: Herder,
        host: str,
        port: int,
        limits: Limits | None = None,
        max_workers: int = 32,
        *,
        forwarder: Forwarder | None = None,
        cluster: TaskConfigSink | None = None,
        request_log: RequestLog | None = None,
        leads: Callable[[], bool] | None = None,
        metrics: CollectorRegistry | None = None,
        security: SecurityConfig | None = None,
        verifier: RequestVerifier | None = None,
    ) -> None:
        """Distributed mode passes ``forwarder`` (writes a follower receives go to the
        leader), ``cluster`` (the herder, serving the workers' ClusterService), a
        ``request_log`` whose answers live in the config topic, and ``leads`` (whether this
        worker answers the leader's writes itself now: while it does not, they are relayed
        unparsed).
        With ``metrics``, every call is counted and timed in that registry.

        ``security`` is the listener's TLS and who may call (none: plaintext, everyone);
        ``verifier`` checks the session-key signature of calls from other workers
        (distributed mode; without it, a call that claims to be forwarded is refused).
        Every call goes through the auth interceptor before the relay and the servicers."""
        limits = limits or Limits()
        security = security or SecurityConfig()
        interceptors: list[grpc.ServerInterceptor[Any, Any]] = []
        if metrics is not None:
            interceptors.append(ServerMetricsInterceptor(metrics))
        interceptors.append(build_interceptor(security, verifier))
        if forwarder is not None and leads is not None:
            interceptors.append(
                LeaderWritesRelay(forwarder, leads, writes_here=not security.authenticates)
            )
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="grpc"),
            interceptors=interceptors,
            options=[
                ("grpc.max_receive_message_length", limits.grpc_receive_bytes),
                ("grpc.max_send_message_length", limits.grpc_send_bytes),
                # grpcio sets SO_REUSEPORT by default: a second worker given the same listener
                # would share the port and take half its calls instead of failing to start
                ("grpc.so_reuseport", 0),
            ],
        )
        servicer = ConnectServicer(
            herder,
            request_log=request_log,
            max_send_bytes=limits.grpc_send_bytes,
            forwarder=forwarder,
        )
        pb_grpc.add_ConnectServiceServicer_to_server(servicer, self._server)
        services = [SERVICE_NAME]
        if cluster is not None:
            pb_grpc.add_ClusterServiceServicer_to_server(ClusterServicer(cluster), self._server)
            services.append(CLUSTER_SERVICE_NAME)
        self._health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        self._health_reporter = HealthReporter(
            herder,
            self._health,
            (SERVICE_NAME,),
            gauges=HealthGauges(metrics) if metrics is not None else None,
            started=False,
        )
        reflection.enable_server_reflection(
            (*services, health.SERVICE_NAME, reflection.SERVICE_NAME), self._server
        )
        self.tls = security.tls is not None
        self._tokens_file = security.auth.tokens_file
        try:
            self.port = (
                self._server.add_secure_port(f"{host}:{port}", server_credentials(security.tls))
                if security.tls is not None
                else self._server.add_insecure_port(f"{host}:{port}")
            )
        except RuntimeError:  # grpcio raises it when the address cannot be bound
            self.port = 0
        if self.port == 0:
            raise OSError(f"could not bind the gRPC listener on {host}:{port}")
        self.host = host

    def start(self, *, started: bool = True) -> None:
        """Serves. ``started=False``: the worker's start-up goes on after this (it creates
        the connectors of its files), so its readiness is NOT_SERVING until
        ``mark_started``."""
        if started:
            self._health_reporter.mark_started()
        self._server.start()
        self._health_reporter.start()
        log.info("grpc_server_started", host=self.host, port=self.port, tls=self.tls)
        warn_if_exposed(self.host, self.port, tls=self.tls)
        warn_if_tokens_in_clear(self._tokens_file, tls=self.tls)

    def mark_started(self) -> None:
        """The worker's start-up is over: its readiness is the herder's from now on."""
        self._health_reporter.mark_started()

    def stop(self, grace_seconds: float = 5.0) -> None:
        self._health_reporter.stop()
        self._health.enter_graceful_shutdown()
        self._server.stop(grace_seconds).wait()
        log.info("grpc_server_stopped")

    def wait(self) -> None:
        self._server.wait_for_termination()


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) is only reachable from this machine: every
    address it resolves to is a loopback one. The wildcard (``0.0.0.0``, ``::``, empty)
    is not."""
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addresses) and all(
        ipaddress.ip_address(str(address).split("%", 1)[0]).is_loopback
        for address in addresses
    )


def warn_if_exposed(host: str, port: int, tls: bool) -> bool:
    """Logs ``grpc_listener_exposed_without_tls`` (a warning) when the listener binds a
    non-loopback address without TLS; returns whether it did."""
    if tls or is_loopback(host):
        return False
    log.warning(
        "grpc_listener_exposed_without_tls",
        host=host,
        port=port,
        hint="anyone who can reach this address can manage connectors and read what it "
        "sends: bind 127.0.0.1 (listeners=grpc://127.0.0.1:PORT) or serve TLS "
        "(listeners=grpcs://HOST:PORT with listeners.https.ssl.*), with tokens or client "
        "certificates (docs/security.md)",
    )
    return True


def warn_if_tokens_in_clear(tokens_file: Path | None, tls: bool) -> bool:
    """Logs ``bearer_tokens_without_tls`` (a warning) when the worker checks bearer tokens
    on a plaintext listener, where every token crosses the network readable; returns
    whether it did."""
    if tls or tokens_file is None:
        return False
    log.warning(
        "bearer_tokens_without_tls",
        tokens_file=str(tokens_file),
        hint="bearer tokens sent over grpc:// can be read by anyone on the path: serve TLS "
        "(listeners=grpcs://HOST:PORT with listeners.https.ssl.*)",
    )
    return True
