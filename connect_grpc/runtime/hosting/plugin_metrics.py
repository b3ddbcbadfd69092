"""The plugin metrics (KIP-877) of a task hosted in a Spark executor, exported as a
driver-hosted task's.

In the executor, ``HostedPluginMetrics`` hands the task plugin and its pipeline's Monitorable
plugins a PluginMetrics each, tagged as on the driver (``pipeline.monitoring.plugin_tags``).
The executor's Python worker has no metrics endpoint, so the driver takes their readings,
each metric under all its labels (``PluginReading``), with the host call
``take_plugin_metrics``: ``PluginMetricsRelay`` makes it from the runner's loop, on its turns
(also idle or paused ones), at most once per ``RELAY_INTERVAL_S``, never per batch. The host
serves its calls on one thread, and the gauges are the plugins' code: they are read on a
daemon thread of their own, a call waiting for a reading at most ``READING_WAIT_S`` and
answering the last one otherwise, so a gauge that blocks delays neither the task's batches
nor its stop (its metrics then lag, or stay as last read). The
driver mirrors the set it took as gauges of one PluginMetrics of the task, which replace the
last set, so a metric a plugin removed (or whose gauge raised) leaves the scrape, and which
are closed with the task's other series when it stops.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Mapping

import structlog

from connect_grpc.connectors.plugin_metrics import MetricName, PluginMetrics
from connect_grpc.kernel.domain import TaskId
from connect_grpc.metrics.worker_metrics import TaskMetrics
from connect_grpc.pipeline.monitoring import monitor_pipeline, plugin_tags
from connect_grpc.pipeline.task_pipeline import TaskPipeline
from connect_grpc.runtime.task_host import RemoteTaskHost

__all__ = [
    "READING_WAIT_S",
    "RELAY_INTERVAL_S",
    "TAKE_PLUGIN_METRICS",
    "HostedPluginMetrics",
    "MirroredPluginMetrics",
    "PluginMetricsRelay",
    "PluginReading",
]

_log = structlog.get_logger(__name__)

#: The host call that answers the readings (``PluginHost.take_plugin_metrics``).
TAKE_PLUGIN_METRICS = "take_plugin_metrics"
#: How often the driver takes a hosted task's readings: the series lag the plugin by at
#: most this (plus a loop turn), for one round trip a second whatever the batch rate.
RELAY_INTERVAL_S = 1.0

#: Seconds a host's ``take_plugin_metrics`` waits for the reading it asked for before it
#: answers the last one (a gauge that blocks): the readings are usually taken in microseconds.
READING_WAIT_S = 0.2

#: One metric's reading: its name, with every label (the worker's tags of its plugin, then
#: its own) as its tags, and its value.
PluginReading = tuple[MetricName, float]


class HostedPluginMetrics:
    """In the executor: the PluginMetrics of a hosted task's plugins (the task's own and its
    pipeline's Monitorable plugins'), read for the driver and closed when the task stops.

    ``readings`` has them read on a daemon thread of this task's (started at the first
    call) and answers what was last read: the host's serving thread never runs a gauge."""

    def __init__(self, task: TaskId, plugin: object, wait_s: float = READING_WAIT_S) -> None:
        self._task = task
        self._plugin = plugin
        self._wait_s = wait_s
        self._lock = threading.Lock()
        self._opened: list[PluginMetrics] = []
        #: What was last read, and whether a reading is asked for or under way.
        self._read: list[PluginReading] = []
        self._reading = False
        self._asked = threading.Condition(self._lock)
        self._done = threading.Condition(self._lock)
        self._reader: threading.Thread | None = None
        self._closed = False

    def open(self, pipeline: TaskPipeline | None) -> PluginMetrics:
        """The task plugin's PluginMetrics, once the Monitorable plugins of its pipeline
        have theirs (``LoopSite.plugin_metrics``)."""
        task = self._task
        if pipeline is not None:
            monitor_pipeline(pipeline.plugins, task, self._open)
        return self._open(plugin_tags(task, task.connector, self._plugin, "task"))

    def _open(self, tags: Mapping[str, str]) -> PluginMetrics:
        metrics = PluginMetrics(tags)
        with self._lock:
            self._opened.append(metrics)
        return metrics

    def readings(self) -> list[PluginReading]:
        """Every metric's value (a gauge that raises is logged and left out): a reading is
        asked of the reader thread and waited for at most ``wait_s``; while one is still
        under way (a gauge blocks) none more is asked and the last one is answered at once.
        The driver asks at most once a second (``PluginMetricsRelay``), so the gauges run
        at most that often."""
        with self._lock:
            if self._closed or not self._opened:
                return []
            if self._reading:
                return list(self._read)  # the last reading is stuck in a gauge
            self._reading = True
            if self._reader is None:
                self._reader = threading.Thread(
                    target=self._read_loop, name=f"plugin-metrics-{self._task}", daemon=True
                )
                self._reader.start()
            self._asked.notify()
            self._done.wait_for(lambda: not self._reading or self._closed, self._wait_s)
            return list(self._read)

    def _read_loop(self) -> None:
        """The reader thread: one reading each time one is asked for, until closed."""
        while True:
            with self._lock:
                self._asked.wait_for(lambda: self._reading or self._closed)
                if self._closed:
                    return
                opened = list(self._opened)
            try:
                read = [
                    (MetricName(name.name, name.description, tuple(labels.items())), value)
                    for metrics in opened
                    for name, labels, value in metrics.samples()
                ]
            except Exception:  # samples() leaves failing gauges out; this is a bug's net
                _log.warning("plugin_metrics_not_read", exc_info=True)
                read = None
            with self._lock:
                if read is not None and not self._closed:
                    self._read = read
                self._reading = False
                self._done.notify_all()

    def close(self) -> None:
        """The task stopped: its plugins' metrics are closed (later adds are refused), and
        the reader thread ends (after a gauge it is stuck in returns)."""
        with self._lock:
            opened, self._opened = self._opened, []
            self._closed = True
            self._read = []
            self._asked.notify_all()
            self._done.notify_all()
        for metrics in opened:
            metrics.close()


class MirroredPluginMetrics:
    """On the driver: plugin metrics read in another process (a hosted Python task's, read by
    its host; a Java plugin's, read in its JVM), as last read, exported as gauges of one
    PluginMetrics (``open_metrics()``, called when the first metric comes) under the names
    and labels each reading carries, so that they look like a driver-hosted plugin's. A
    task's PluginMetrics (``TaskMetrics.plugin_metrics``) go with its other series when it
    stops."""

    def __init__(self, open_metrics: Callable[[], PluginMetrics]) -> None:
        self._open_metrics = open_metrics
        self._opened: PluginMetrics | None = None
        self._lock = threading.Lock()
        self._values: dict[MetricName, float] = {}

    def replace(self, values: Mapping[MetricName, float]) -> None:
        """Replaces the metrics with ``values``: those not in it leave the scrape."""
        with self._lock:
            gone = self._values.keys() - values.keys()
            added = values.keys() - self._values.keys()
            self._values = dict(values)
        if self._opened is None:
            if not added:
                return
            self._opened = self._open_metrics()
        try:
            for name in gone:
                self._opened.remove_metric(name)
            for name in added:
                self._opened.add_metric(name, functools.partial(self._value, name))
        except ValueError:  # the plugin's task or instance stopped meanwhile: metrics closed
            return

    def _value(self, name: MetricName) -> float:
        with self._lock:
            return self._values.get(name, math.nan)


class PluginMetricsRelay:
    """On the driver: takes a hosted task's readings from its host at most once per
    ``interval_s`` into its mirror. Called from the runner's loop thread only (the one
    that calls the host), every turn."""

    def __init__(
        self,
        host: RemoteTaskHost,
        metrics: TaskMetrics,
        interval_s: float = RELAY_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._host = host
        # Empty tags: each reading's name carries all its labels already.
        self._mirror = MirroredPluginMetrics(functools.partial(metrics.plugin_metrics, {}))
        self._interval_s = interval_s
        self._clock = clock
        self._next_at = -math.inf

    def take(self) -> None:
        """Takes the readings if they are due. A failure (the host lost, an older host
        without the call) is logged, never raised: metrics must not stop the data."""
        now = self._clock()
        if now < self._next_at or self._host.broken:
            return
        self._next_at = now + self._interval_s
        try:
            readings: list[PluginReading] = self._host.call(TAKE_PLUGIN_METRICS)
        except Exception as exc:
            _log.debug("plugin_metrics_not_taken", error=repr(exc))
            return
        self._mirror.replace(dict(readings))
