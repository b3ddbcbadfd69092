"""The gRPC server: ConnectService, server reflection and the standard health service."""

from __future__ import annotations

from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc
import structlog
from grpc_health.v1 import health, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from connect_grpc.api.cluster_service import SERVICE_NAME as CLUSTER_SERVICE_NAME
from connect_grpc.api.cluster_service import ClusterServicer, TaskConfigSink
from connect_grpc.api.forwarding import Forwarder, LeaderWritesRelay
from connect_grpc.api.health import HealthReporter
from connect_grpc.api.idempotency import RequestLog
from connect_grpc.api.servicer import ConnectServicer
from connect_grpc.herder.base import Herder
from connect_grpc.v1 import connect_pb2 as pb
from connect_grpc.v1 import connect_pb2_grpc as pb_grpc
from connect_grpc.worker_config import Limits

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
    ) -> None:
        """Distributed mode passes ``forwarder`` (writes a follower receives go to the
        leader), ``cluster`` (the herder, serving the workers' ClusterService), a
        ``request_log`` whose answers live in the config topic, and ``leads`` (whether this
        worker leads now: while it does not, the leader's writes are relayed unparsed)."""
        limits = limits or Limits()
        relay: list[grpc.ServerInterceptor[Any, Any]] = (
            [LeaderWritesRelay(forwarder, leads)]
            if forwarder is not None and leads is not None
            else []
        )
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="grpc"),
            interceptors=relay,
            options=[
                ("grpc.max_receive_message_length", limits.grpc_receive_bytes),
                ("grpc.max_send_message_length", limits.grpc_send_bytes),
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
        self._health_reporter = HealthReporter(herder, self._health, (SERVICE_NAME,))
        reflection.enable_server_reflection(
            (*services, health.SERVICE_NAME, reflection.SERVICE_NAME), self._server
        )
        try:
            self.port = self._server.add_insecure_port(f"{host}:{port}")
        except RuntimeError:  # grpcio raises it when the address cannot be bound
            self.port = 0
        if self.port == 0:
            raise OSError(f"could not bind the gRPC listener on {host}:{port}")
        self.host = host

    def start(self) -> None:
        self._server.start()
        self._health_reporter.start()
        log.info("grpc_server_started", host=self.host, port=self.port)

    def stop(self, grace_seconds: float = 5.0) -> None:
        self._health_reporter.stop()
        self._health.enter_graceful_shutdown()
        self._server.stop(grace_seconds).wait()
        log.info("grpc_server_stopped")

    def wait(self) -> None:
        self._server.wait_for_termination()
