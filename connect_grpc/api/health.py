"""Keeps the standard gRPC health service true, with KIP-1017's two checks as services a
probe names (docs/health.md):

- ``connect.v1.live``: the herder's loops go round (``Herder.liveness``); for a liveness
  probe, which restarts the worker. Kafka's absence never turns it NOT_SERVING.
- ``connect.v1.ready``: the worker has started and can do its work (``Herder.readiness``:
  Kafka reachable; distributed, a member of its group that read its assignment); for a
  readiness probe or a load balancer, which only stop sending it calls.
- ``""`` and ``connect.v1.ConnectService``: both, as before the checks were split.

Each check's transition is logged once (not once per probe) with its reason, and exported
as gauges (``metrics.health_metrics``)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog
from grpc_health.v1 import health, health_pb2

from connect_grpc.herder.interface import Herder
from connect_grpc.kernel.domain import HealthReport
from connect_grpc.metrics.health_metrics import HealthGauges

log = structlog.get_logger(__name__)

#: Seconds between two health checks.
CHECK_INTERVAL_S = 1.0

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING

#: The health service a liveness probe names.
LIVE_SERVICE = "connect.v1.live"
#: The health service a readiness probe or a load balancer names.
READY_SERVICE = "connect.v1.ready"

#: Why a worker whose server already answers is not ready: its process still creates the
#: connectors of the files given on its command line (standalone).
STILL_STARTING = HealthReport(
    False, "the worker is still starting: creating the connectors of its files", "starting"
)


class HealthReporter:
    """A thread that asks the herder for its liveness and readiness every second and
    publishes them: each check under its own service, both under the overall server ("")
    and each named service. ``started=False``: not ready until ``mark_started``."""

    def __init__(
        self,
        herder: Herder,
        servicer: health.HealthServicer,
        services: tuple[str, ...],
        *,
        gauges: HealthGauges | None = None,
        started: bool = True,
    ) -> None:
        self._herder = herder
        self._servicer = servicer
        self._services = ("", *services)
        self._gauges = gauges
        self._started = threading.Event()
        if started:
            self._started.set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="health", daemon=True)
        #: The last status published per check ("live", "ready"); checks run on
        #: the reporter's thread and in ``mark_started``, one at a time.
        self._published: dict[str, bool] = {}
        self._checking = threading.Lock()

    def start(self) -> None:
        self._check()
        self._thread.start()

    def mark_started(self) -> None:
        """The worker's start-up is over: readiness is the herder's from now on (published
        at once once the reporter runs; before, its first check reads it)."""
        self._started.set()
        if self._thread.is_alive():
            self._check()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(CHECK_INTERVAL_S * 5)

    def _run(self) -> None:
        while not self._stop.wait(CHECK_INTERVAL_S):
            self._check()

    def _check(self) -> None:
        with self._checking:
            live = _ask("live", self._herder.liveness)
            ready = _ask("ready", self._herder.readiness) if self._started.is_set() else (
                STILL_STARTING
            )
            # a worker whose loops are stuck cannot do its work either; the server's own
            # services answer both checks at once, which is readiness
            ready = ready if live.serving else live
            self._publish("live", (LIVE_SERVICE,), live)
            self._publish("ready", (READY_SERVICE, *self._services), ready)

    def _publish(self, check: str, services: tuple[str, ...], report: HealthReport) -> None:
        if self._gauges is not None:
            self._gauges.set(check, report.serving, report.cause)
        if self._published.get(check) == report.serving:
            return
        self._published[check] = report.serving
        for service in services:
            self._servicer.set(service, SERVING if report.serving else NOT_SERVING)
        if report.serving:
            log.info("health_check_serving", check=check)
        else:
            log.warning("health_check_not_serving", check=check, reason=report.reason,
                        cause=report.cause)


def _ask(check: str, answer: Callable[[], HealthReport]) -> HealthReport:
    """The herder's answer; NOT_SERVING, with the error, if asking failed."""
    try:
        return answer()
    except Exception as exc:
        log.exception("health_check_failed", check=check)
        return HealthReport(False, f"the {check} check failed: {exc}", "check_failed")
