"""Whether the worker can reach its Kafka cluster: one long-lived admin client asks for the
cluster's metadata every few seconds (each probe bounded), so tasks can show RETRYING and
health NOT_SERVING while it cannot, instead of RUNNING and SERVING.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import structlog

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.kernel.kafka_clients import with_client_log

log = structlog.get_logger(__name__)

#: Seconds between two probes.
PROBE_INTERVAL_S = 2.0
#: Seconds one probe may wait for an answer.
PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True, slots=True)
class KafkaOutage:
    """Kafka has not answered since ``since`` (``time.monotonic()`` of the first failed
    probe); ``reason`` is the last probe's error."""

    since: float
    reason: str

    def message(self, now: float) -> str:
        return f"Kafka unreachable for {max(0.0, now - self.since):.0f} s: {self.reason}"


@runtime_checkable
class KafkaReachability(Protocol):
    """What the herder asks of a runtime that watches Kafka (``Worker``)."""

    def kafka_unreachable_for(self) -> float | None:
        """Seconds Kafka has been unreachable, or None while it answers."""


def monitor_conf(config: WorkerConfig) -> dict[str, str]:
    """The probe's admin client: the worker's ``admin.*`` properties, and one reconnection
    attempt every 0.5-1 s while Kafka is away (librdkafka's default retries up to ~20 times
    a second while a request waits), so a broker coming back is noticed within a second."""
    conf = {
        "bootstrap.servers": config.bootstrap_servers,
        "client.id": f"connect-monitor-{config.worker_id}",
        "reconnect.backoff.ms": "500",
        "reconnect.backoff.max.ms": "1000",
    }
    conf.update(config.prefixed("admin."))
    return conf


class KafkaMonitor:
    """Probes Kafka on its own thread; ``start`` and ``stop`` once each.

    The probe is a synchronous metadata request, so when ``stop`` has joined the thread no
    request of the client is outstanding, and the client is dropped exactly once.
    """

    def __init__(
        self,
        conf: dict[str, str],
        *,
        interval_s: float = PROBE_INTERVAL_S,
        timeout_s: float = PROBE_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
        probe: Callable[[float], None] | None = None,
    ) -> None:
        self._conf = conf
        self._interval_s = interval_s
        self._timeout_s = timeout_s
        self._clock = clock
        self._probe = probe or self._probe_metadata
        self._admin: Any = None
        self._lock = threading.Lock()
        self._outage: KafkaOutage | None = None
        self._listeners: list[Callable[[KafkaOutage | None], None]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add_listener(self, listener: Callable[[KafkaOutage | None], None]) -> None:
        """Called (on the monitor's thread) when Kafka becomes unreachable (with the outage)
        or reachable again (with None)."""
        self._listeners.append(listener)

    def start(self) -> None:
        """Starts probing. Idempotent."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="kafka-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(self._timeout_s + self._interval_s + 1.0)
        self._admin = None

    def outage(self) -> KafkaOutage | None:
        """The current outage, or None while Kafka answers."""
        with self._lock:
            return self._outage

    def unreachable_for(self) -> float | None:
        """Seconds since the first failed probe of the current outage; None if reachable."""
        outage = self.outage()
        return None if outage is None else max(0.0, self._clock() - outage.since)

    def probe_once(self) -> None:
        """One probe, and the state change it implies."""
        started = self._clock()
        try:
            self._probe(self._timeout_s)
        except Exception as exc:
            self._unreachable(started, f"{type(exc).__name__}: {exc}")
        else:
            self._reachable()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.probe_once()
            self._stop.wait(self._interval_s)

    def _probe_metadata(self, timeout_s: float) -> None:
        admin = self._admin
        if admin is None:
            from confluent_kafka.admin import AdminClient

            admin = self._admin = AdminClient(
                with_client_log(self._conf, self._conf["client.id"])
            )
        try:
            metadata = admin.list_topics(timeout=timeout_s)
        finally:
            admin.poll(0)  # serves the (rate-limited) client logs
        if not metadata.brokers:
            raise ConnectionError("the cluster's metadata lists no broker")

    def _unreachable(self, started: float, reason: str) -> None:
        with self._lock:
            began = self._outage is None
            if self._outage is None:
                self._outage = KafkaOutage(started, reason)
            outage = self._outage
        if began:
            log.warning("kafka_unreachable", reason=reason)
            self._notify(outage)

    def _reachable(self) -> None:
        with self._lock:
            ended, self._outage = self._outage, None
        if ended is not None:
            log.info("kafka_reachable", unreachable_s=round(self._clock() - ended.since, 1))
            self._notify(None)

    def _notify(self, outage: KafkaOutage | None) -> None:
        for listener in list(self._listeners):
            try:
                listener(outage)
            except Exception:
                log.warning("kafka_monitor_listener_failed", exc_info=True)
