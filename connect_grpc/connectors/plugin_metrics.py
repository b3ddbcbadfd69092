"""Metrics a plugin registers itself (KIP-877): a connector or task through its context's
``plugin_metrics``, a converter, transformation or predicate through ``Monitorable``.

A :class:`PluginMetrics` belongs to one plugin instance and carries the tags that say
whose it is (``connector``, ``task``, ``config``, ``class``, ``version``, ``alias``); each
metric the plugin adds is a gauge read when the worker's metrics are scraped, under the
tags of its PluginMetrics and its own. The worker closes a PluginMetrics when the instance
stops, and its metrics leave the scrape with it. The worker exports what the
:class:`PluginMetricsStore` holds (``metrics.plugin_metrics``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import structlog

__all__ = [
    "MetricName",
    "Monitorable",
    "PluginMetrics",
    "PluginMetricsStore",
]

_log = structlog.get_logger(__name__)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
#: The tags the worker sets, which a plugin's own tags may not replace.
RESERVED_TAGS = frozenset({"connector", "task", "config", "class", "version", "alias"})


@dataclass(frozen=True)
class MetricName:
    """A plugin metric's name, its description and its own tags (beside the worker's).
    Two names are the same metric when their names and tags are, whatever their
    descriptions, as Kafka's ``MetricName`` compares them."""

    name: str
    description: str = field(default="", compare=False)
    tags: tuple[tuple[str, str], ...] = ()


class PluginMetrics:
    """One plugin instance's metrics (Kafka's ``PluginMetrics``). Thread-safe.

    ``add_metric(name, value)`` registers a gauge: ``value()`` is called when the metrics
    are scraped (a call that raises leaves the metric out of that scrape, logged the first
    time of a run of failures, not on every scrape).
    Metric names are letters, digits, ``_``, ``.`` and ``-`` (``records-seen``); each is
    exported as ``connect_grpc_plugin_<name>`` with ``.`` and ``-`` turned into ``_``.
    """

    def __init__(self, tags: Mapping[str, str], store: PluginMetricsStore | None = None) -> None:
        self._tags = dict(tags)
        self._store = store
        self._lock = threading.Lock()
        self._metrics: dict[MetricName, Callable[[], float]] = {}
        self._closed = False
        #: The metrics whose last reading raised (logged once until one is read again).
        self._failing: set[MetricName] = set()

    @property
    def tags(self) -> dict[str, str]:
        """The tags the worker gave this plugin instance."""
        return dict(self._tags)

    def metric_name(
        self, name: str, description: str = "", tags: Mapping[str, str] | None = None
    ) -> MetricName:
        """A metric's name with its own tags (which must not be the worker's: connector,
        task, config, class, version, alias).

        Raises:
            ValueError: a name or tag that is not allowed.
        """
        if not _NAME.fullmatch(name):
            raise ValueError(f"invalid metric name {name!r}: use letters, digits, _ . -")
        own = dict(tags or {})
        for key in own:
            if key in RESERVED_TAGS or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                raise ValueError(f"invalid or reserved tag {key!r} for metric {name!r}")
        return MetricName(name, description, tuple(sorted(own.items())))

    def add_metric(self, name: MetricName | str, value: Callable[[], float]) -> MetricName:
        """Registers (or replaces) the gauge ``name``; returns its MetricName.

        Raises:
            ValueError: the name is not allowed, or this PluginMetrics is closed (the
                plugin instance stopped).
        """
        metric = self.metric_name(name) if isinstance(name, str) else name
        with self._lock:
            if self._closed:
                raise ValueError("the plugin's metrics are closed: its instance stopped")
            # popped first: a replacement's key (and so its description) is the new one
            self._metrics.pop(metric, None)
            self._metrics[metric] = value
        return metric

    def remove_metric(self, name: MetricName | str) -> None:
        """Removes the metric ``name`` (a plain name: the one without tags of its own)."""
        metric = self.metric_name(name) if isinstance(name, str) else name
        with self._lock:
            self._metrics.pop(metric, None)

    def close(self) -> None:
        """Removes every metric; later adds are refused. Idempotent."""
        with self._lock:
            self._closed = True
            self._metrics.clear()
        if self._store is not None:
            self._store.discard(self)

    def samples(self) -> Iterator[tuple[MetricName, dict[str, str], float]]:
        """(name, every tag, value) of each metric whose value could be read."""
        with self._lock:
            metrics = list(self._metrics.items())
        for metric, value in metrics:
            try:
                reading = float(value())
            except Exception as exc:  # one plugin's broken gauge must not stop the scrape
                with self._lock:
                    first = metric not in self._failing
                    self._failing.add(metric)
                # once per run of failures: a scrape (or a hosted task's reading) every
                # second would otherwise repeat it for as long as the gauge is broken
                (_log.warning if first else _log.debug)(
                    "plugin_metric_failed", metric=metric.name, error=repr(exc), **self._tags
                )
                continue
            if self._failing:
                with self._lock:
                    self._failing.discard(metric)
            yield metric, {**self._tags, **dict(metric.tags)}, reading


@runtime_checkable
class Monitorable(Protocol):
    """A converter, header converter, transformation or predicate that registers metrics
    (Kafka's ``Monitorable``): the worker calls ``with_plugin_metrics`` once, after
    ``configure``, with the plugin's own PluginMetrics (tagged with its connector, task,
    class, version and alias or converter key), closed when the task stops."""

    def with_plugin_metrics(self, metrics: PluginMetrics) -> None: ...


class PluginMetricsStore:
    """Every open PluginMetrics of a worker, as its metrics endpoint exports them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[str, int | None], list[PluginMetrics]] = {}

    def open(self, tags: Mapping[str, str], connector: str, task: int | None) -> PluginMetrics:
        """A new PluginMetrics of the connector (``task`` None) or of one of its tasks."""
        metrics = PluginMetrics(tags, self)
        with self._lock:
            self._open.setdefault((connector, task), []).append(metrics)
        return metrics

    def discard(self, metrics: PluginMetrics) -> None:
        with self._lock:
            for key, owned in list(self._open.items()):
                if metrics in owned:
                    owned.remove(metrics)
                    if not owned:
                        del self._open[key]

    def close_owner(self, connector: str, task: int | None) -> None:
        """Closes every PluginMetrics of the connector (``task`` None) or of the task."""
        with self._lock:
            owned = self._open.pop((connector, task), [])
        for metrics in owned:
            metrics.close()

    def all(self) -> list[PluginMetrics]:
        with self._lock:
            return [metrics for owned in self._open.values() for metrics in owned]
