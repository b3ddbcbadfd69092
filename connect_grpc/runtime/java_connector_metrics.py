"""A Java connector's own metrics (KIP-877): those its instance in the Spark driver's JVM
registers through its context's ``PluginMetrics``, exported on the worker's endpoint as a
Python connector's (``connect_grpc_plugin_<name>``, decision 0108).

A thread of the stand-in's instance's own (``runtime.java_connectors``; not the relay of
its events, as the JVM runs the connector's gauges inside the read) reads them from the JVM
every ``METRICS_INTERVAL_S`` into the Python context's PluginMetrics, which carries the
worker's tags (``connector``, ``config``, ``class``, ``version``); a scrape reads the last
values and never waits on the JVM. A read that fails keeps the last values. When the
instance is released (a pause, a stop, a restart) its metrics are gone in the JVM, and they
leave the scrape; the stand-in's next instance (a new handle) brings its own. Only the
instance the stand-in holds is followed, so a late read or release of the one before cannot
touch its successor's series.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog

from connect_grpc.connectors.plugin_metrics import RESERVED_TAGS, MetricName, PluginMetrics
from connect_grpc.runtime.hosting.jvm_reports import java_metric_name
from connect_grpc.runtime.hosting.plugin_metrics import MirroredPluginMetrics

__all__ = ["METRICS_INTERVAL_S", "JavaConnectorMetrics"]

log = structlog.get_logger(__name__)

#: How often a connector's own metrics are read from the JVM, at most.
METRICS_INTERVAL_S = 1.0
#: The tag Kafka's worker gives a connector's own metrics (the worker's tags say it too).
CONNECTOR_TAG = "connector"


class JavaConnectorMetrics:
    """The own metrics of a Java connector stand-in's instances, as last read.

    Args:
        java_class: the connector's class (for the logs).
        read: an instance's metrics in the JVM, by its handle: ``{"name", "description",
            "tags", "value"}`` each (``ConnectorHostLink.plugin_metrics``).
        open_metrics: the Python context's PluginMetrics (opened when the first comes).
        clock: monotonic seconds.

    A metric whose own tags reuse one of the worker's (``class``, ``version``, ...) would
    replace what the worker says of the connector: it is left out, logged once."""

    def __init__(
        self,
        java_class: str,
        read: Callable[[int], Sequence[Mapping[str, Any]]],
        open_metrics: Callable[[], PluginMetrics],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._java_class = java_class
        self._read = read
        self._metrics = MirroredPluginMetrics(open_metrics)
        self._clock = clock
        self._read_at = -math.inf
        self._refused: set[str] = set()
        self._lock = threading.Lock()
        #: Notified when the followed instance changes (a reading loop's end).
        self._changed = threading.Condition(self._lock)
        self._followed: int | None = None
        #: The instance whose read last failed past the JVM's answer (logged once).
        self._failed: int | None = None

    def follow(self, handle: int) -> None:
        """The stand-in made the instance ``handle``: its metrics are the ones read now."""
        with self._lock:
            self._followed = handle
            self._read_at = -math.inf
            self._changed.notify_all()

    def read(self, handle: int) -> None:
        """Reads the metrics of the instance ``handle`` from the JVM, unless it is not the
        one followed or they were read less than ``METRICS_INTERVAL_S`` ago; a failed read
        keeps the last values (logged)."""
        with self._lock:
            now = self._clock()
            if handle != self._followed or now - self._read_at < METRICS_INTERVAL_S:
                return
            self._read_at = now
        self._read_now(handle)

    def keep_reading(self, handle: int) -> None:
        """Reads the metrics of the instance ``handle`` every ``METRICS_INTERVAL_S`` until
        it is no longer the one followed; never raises. The loop of a thread of its own
        (``runtime.java_connectors`` starts one per instance): the JVM runs the connector's
        gauges inside the read, so a gauge that blocks holds up that thread only, never the
        relay of the instance's events."""
        while True:
            with self._lock:
                if handle != self._followed:
                    return
                self._read_at = self._clock()
            self._read_now(handle)
            with self._lock:
                if handle != self._followed:
                    return
                self._changed.wait(METRICS_INTERVAL_S)

    def _read_now(self, handle: int) -> None:
        try:
            sent = self._read(handle)
        except Exception as exc:  # the JVM is busy or gone: the last values stay
            log.debug("java_connector_metrics_not_read", java_class=self._java_class,
                      error=str(exc).splitlines()[0] if str(exc) else repr(exc))
            return
        try:
            self._export(handle, sent)
        except Exception as exc:  # an answer it cannot take: the last values stay
            with self._lock:
                logged, self._failed = self._failed == handle, handle
            if not logged:  # once an instance; the error's kind only: a message may hold values
                log.warning("java_connector_metrics_not_exported",
                            java_class=self._java_class, error=type(exc).__name__)

    def _export(self, handle: int, sent: Sequence[Mapping[str, Any]]) -> None:
        values: dict[MetricName, float] = {}
        for metric in sent:
            tags = {str(k): str(v) for k, v in (metric.get("tags") or {}).items()}
            tags.pop(CONNECTOR_TAG, None)
            name = java_metric_name(str(metric["name"]), str(metric.get("description") or ""),
                                    tags)
            clashes = sorted(RESERVED_TAGS & {key for key, _ in name.tags})
            if clashes:
                if name.name not in self._refused:
                    self._refused.add(name.name)
                    log.warning("java_connector_metric_not_exported",
                                java_class=self._java_class, metric=name.name,
                                reason=f"its tags {clashes} are the worker's own")
                continue
            values[name] = float(metric["value"])
        with self._lock:
            if handle == self._followed:  # not released while the JVM answered
                self._metrics.replace(values)

    def release(self, handle: int) -> None:
        """The instance ``handle`` is released (its metrics are gone in the JVM): if it is
        the one followed, its metrics leave the scrape. Releasing twice is nothing."""
        with self._lock:
            if handle == self._followed:
                self._followed = None
                self._changed.notify_all()
                self._metrics.replace({})
