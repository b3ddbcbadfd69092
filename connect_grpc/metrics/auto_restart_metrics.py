"""The auto-restart policy's metrics (``auto.restart.*``): the restarts it made, and where
each connector's policy stands.

Exported by the worker that decides, which holds the policy's state: a standalone worker,
or a cluster's leader (so that a connector has one series in the cluster, and a new leader
takes them over once it has looked at the connector). The counters count the restarts this
worker made; the gauges are read from the decider at each scrape.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Mapping
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from connect_grpc.kernel.domain import AutoRestartStatus

__all__ = ["AutoRestartMetrics", "AutoRestartProgress"]


class AutoRestartProgress(Protocol):
    """What the scrape reads from the decider (``herder.auto_restart.AutoRestarter``)."""

    def progress(self) -> Mapping[str, AutoRestartStatus]:
        """Each connector whose policy the decider carries out, and where it stands."""
        ...


class AutoRestartMetrics:
    """The counters of the restarts made, and the gauges of the decider it ``watch``es.
    Thread-safe."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._restarts = Counter(
            "connect_grpc_connector_auto_restarts_total",
            "Automatic restarts of the connector's failed instances this worker made under "
            "its auto-restart policy (auto.restart.*).",
            ["connector"],
            registry=registry,
        )
        self._task_restarts = Counter(
            "connect_grpc_connector_task_auto_restarts_total",
            "Automatic restarts this worker made that restarted the task (it was FAILED).",
            ["connector", "task"],
            registry=registry,
        )
        self._lock = threading.Lock()
        #: The task labels each connector's task counter has a series for.
        self._tasks: dict[str, set[str]] = {}
        self._collector = _ProgressCollector()
        registry.register(self._collector)

    def watch(self, decider: AutoRestartProgress) -> None:
        """Exports the decider's progress (one decider per worker: a later one replaces it)."""
        self._collector.decider = decider

    def restarted(self, connector: str, tasks: Iterable[int]) -> None:
        """The policy restarted the connector's failed instances, ``tasks`` among them."""
        self._restarts.labels(connector).inc()
        labels = [str(task) for task in tasks]
        with self._lock:
            self._tasks.setdefault(connector, set()).update(labels)
        for task in labels:
            self._task_restarts.labels(connector, task).inc()

    def forget(self, connector: str) -> None:
        """Drops the connector's series (deleted, or its policy turned off)."""
        with self._lock:
            tasks = self._tasks.pop(connector, set())
        with contextlib.suppress(KeyError):
            self._restarts.remove(connector)
        for task in tasks:
            with contextlib.suppress(KeyError):
                self._task_restarts.remove(connector, task)

    def forget_all(self) -> None:
        """Drops every series (the decider stepped down: the next one exports them)."""
        with self._lock:
            if not self._tasks:
                return
            self._tasks.clear()
        self._restarts.clear()
        self._task_restarts.clear()


class _ProgressCollector(Collector):
    def __init__(self) -> None:
        self.decider: AutoRestartProgress | None = None

    def collect(self) -> Iterable[Metric]:
        decider = self.decider
        progress = decider.progress() if decider is not None else {}
        count = GaugeMetricFamily(
            "connect_grpc_connector_auto_restart_count",
            "Automatic restarts since the connector's auto-restart policy last reset (a "
            "healthy period, a user's restart, a config change): the status's count.",
            labels=["connector"],
        )
        next_attempt = GaugeMetricFamily(
            "connect_grpc_connector_auto_restart_next_attempt_timestamp_seconds",
            "When the next automatic restart is due (epoch seconds); no series while none "
            "is scheduled.",
            labels=["connector"],
        )
        last_restart = GaugeMetricFamily(
            "connect_grpc_connector_auto_restart_last_restart_timestamp_seconds",
            "When the last automatic restart was made (epoch seconds); no series before "
            "the first since the policy last reset.",
            labels=["connector"],
        )
        gave_up = GaugeMetricFamily(
            "connect_grpc_connector_auto_restart_gave_up",
            "1 once the policy made auto.restart.max.attempts restarts and left the "
            "connector FAILED, else 0.",
            labels=["connector"],
        )
        for connector, shown in sorted(progress.items()):
            count.add_metric([connector], shown.count)
            gave_up.add_metric([connector], 1 if shown.gave_up else 0)
            if shown.next_attempt_ms:
                next_attempt.add_metric([connector], shown.next_attempt_ms / 1000)
            if shown.last_restart_ms:
                last_restart.add_metric([connector], shown.last_restart_ms / 1000)
        return [count, next_attempt, last_restart, gave_up]
