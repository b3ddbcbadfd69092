"""The worker's health checks as Prometheus gauges: one series per check, and the cause of
a check that is NOT_SERVING, so that an alert says why and not only that."""

from __future__ import annotations

import contextlib

from prometheus_client import CollectorRegistry, Gauge


class HealthGauges:
    """``connect_grpc_worker_health_serving{check}`` (1 or 0) and
    ``connect_grpc_worker_health_not_serving_cause{check, cause}`` (1 for the current cause
    of a check that is NOT_SERVING; no series while it serves). Causes are a few fixed words
    (``loop_stuck``, ``starting``, ``kafka_unreachable``, ``not_joined``, …), never free
    text, so the series stay few."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._serving = Gauge(
            "connect_grpc_worker_health_serving",
            "1 while the health check passes (SERVING), else 0.",
            ["check"],
            registry=registry,
        )
        self._cause = Gauge(
            "connect_grpc_worker_health_not_serving_cause",
            "1, labelled with why the health check is NOT_SERVING.",
            ["check", "cause"],
            registry=registry,
        )
        self._causes: dict[str, str] = {}

    def set(self, check: str, serving: bool, cause: str) -> None:
        self._serving.labels(check).set(1 if serving else 0)
        previous = self._causes.pop(check, None)
        if previous is not None:
            with contextlib.suppress(KeyError):
                self._cause.remove(check, previous)
        if not serving:
            self._causes[check] = cause or "unknown"
            self._cause.labels(check, self._causes[check]).set(1)
