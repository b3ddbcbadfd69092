"""Keeps the standard gRPC health service true: NOT_SERVING while the herder says the
worker cannot serve (its control plane is stuck, or Kafka has been unreachable for longer
than the grace period), SERVING again as soon as it can."""

from __future__ import annotations

import threading

import structlog
from grpc_health.v1 import health, health_pb2

from connect_grpc.herder.base import Herder

log = structlog.get_logger(__name__)

#: Seconds between two health checks.
CHECK_INTERVAL_S = 1.0

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class HealthReporter:
    """A thread that asks the herder for its health every second and publishes it for the
    overall server ("") and for each named service."""

    def __init__(
        self, herder: Herder, servicer: health.HealthServicer, services: tuple[str, ...]
    ) -> None:
        self._herder = herder
        self._servicer = servicer
        self._services = ("", *services)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="health", daemon=True)
        self._serving: bool | None = None

    def start(self) -> None:
        self._check()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(CHECK_INTERVAL_S * 5)

    def _run(self) -> None:
        while not self._stop.wait(CHECK_INTERVAL_S):
            self._check()

    def _check(self) -> None:
        try:
            report = self._herder.health()
        except Exception as exc:
            log.exception("health_check_failed")
            serving, reason = False, f"the health check failed: {exc}"
        else:
            serving, reason = report.serving, report.reason
        if serving == self._serving:
            return
        self._serving = serving
        for service in self._services:
            self._servicer.set(service, SERVING if serving else NOT_SERVING)
        if serving:
            log.info("worker_serving")
        else:
            log.warning("worker_not_serving", reason=reason)
