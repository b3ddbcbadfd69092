"""A Java connector's own metrics (KIP-877): those its instance in the Spark driver's JVM
registers through its context's ``PluginMetrics``, exported on the worker's endpoint as a
Python connector's (``connect_grpc_plugin_<name>``, decision 0108).

The relay thread of the stand-in's instance (``runtime.java_connectors``) reads them from
the JVM at most every ``METRICS_INTERVAL_S`` into the Python context's PluginMetrics, which
carries the worker's tags (``connector``, ``config``, ``class``, ``version``); a scrape reads
the last values and never waits on the JVM. When the instance is released (a pause, a stop, a
restart) its metrics are gone in the JVM, and they leave the scrape; the stand-in's next
instance (a new handle) brings its own. Only the instance the stand-in holds is followed, so
a late read or release of the one before cannot touch its successor's series.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog

from connect_grpc.connectors.plugin_metrics import RESERVED_TAGS, MetricName, PluginMetrics
from connect_grpc.runtime.hosting.jvm_reports import JavaPluginMetrics, java_metric_name

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
        self._metrics = JavaPluginMetrics(open_metrics)
        self._clock = clock
        self._read_at = -math.inf
        self._refused: set[str] = set()
        self._lock = threading.Lock()
        self._followed: int | None = None

    def follow(self, handle: int) -> None:
        """The stand-in made the instance ``handle``: its metrics are the ones read now."""
        with self._lock:
            self._followed = handle
            self._read_at = -math.inf

    def read(self, handle: int) -> None:
        """Reads the metrics of the instance ``handle`` from the JVM, unless it is not the
        one followed or they were read less than ``METRICS_INTERVAL_S`` ago; a failed read
        keeps the last values (logged)."""
        with self._lock:
            now = self._clock()
            if handle != self._followed or now - self._read_at < METRICS_INTERVAL_S:
                return
            self._read_at = now
        try:
            sent = self._read(handle)
        except Exception as exc:  # the JVM is busy or gone: the last values stay
            log.debug("java_connector_metrics_not_read", java_class=self._java_class,
                      error=str(exc).splitlines()[0] if str(exc) else repr(exc))
            return
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
                self._metrics.replace({})
