"""What a JVM host reports of its Java task besides its statuses (``host.proto``'s
``TopicsUsed`` and ``TaskMetrics``): the topics Kafka's worker recorded the task using
(KIP-558), which the driver records as it does a Python task's, and the task's metrics, read
in the host from Kafka's worker metrics, which the driver exports under the names of a Python
task's (docs/metrics.md, "Java tasks").

A host sends a topic once (Kafka's worker looks its record up before each use, and the host
answers from what it sent): when the records are reset, the runner tells the host to forget
the topics it sent (``forgotten``), so that a task that goes on using one records it again.

Kafka's names and ours: Kafka's cumulative metrics come as increments, each added to the
counter of the same meaning; its ``batch-size`` and ``commit-time`` sensors come value by
value, observed into the batch-size and commit-time histograms; its failed commits are
counted as failures. The metrics the task's plugins registered (KIP-877) come as a set that
replaces the last one, exported as a Python plugin's. Handled on the connection's reader
thread: nothing here waits on Kafka (the status board writes topics in the background). Once
the task stopped (``close``), reports are ignored: the worker dropped its series.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

import structlog

from connect_grpc.connectors.plugin_metrics import MetricName
from connect_grpc.kernel.domain import TaskId
from connect_grpc.metrics.worker_metrics import CommitTally, ErrorCounts, TaskMetrics
from connect_grpc.runtime.hosting.plugin_metrics import MirroredPluginMetrics

__all__ = [
    "JavaTaskReports",
    "TopicRecords",
    "error_counts",
    "java_metric_name",
    "java_plugin_values",
]

log = structlog.get_logger(__name__)

#: Kafka's task-error-metrics, by the ErrorCounts field each one adds to.
ERROR_TOTALS = {
    "total-record-failures": "failures",
    "total-record-errors": "errors",
    "total-records-skipped": "skipped",
    "total-retries": "retries",
    "total-errors-logged": "logged",
    "deadletterqueue-produce-requests": "dlq_requests",
    "deadletterqueue-produce-failures": "dlq_failures",
}
LAST_ERROR = "last-error-timestamp"


def error_counts(increments: Mapping[str, float], gauges: Mapping[str, float]) -> ErrorCounts:
    """Kafka's task-error-metrics increments as the worker's ErrorCounts."""
    counts = ErrorCounts()
    for kafka_name, field in ERROR_TOTALS.items():
        setattr(counts, field, int(increments.get(kafka_name, 0)))
    counts.last_error_ms = int(gauges.get(LAST_ERROR, 0))
    return counts


@runtime_checkable
class TopicRecords(Protocol):
    """Where the driver keeps the connector's topic records (the herder's ``StatusBoard``)."""

    def active_topics(self, name: str) -> list[str]:
        """The topics the connector has records of."""
        ...


class JavaTaskReports:
    """Takes a Java task's reports into the task's metrics and topic records.

    ``record_topics`` is the runner's (``TaskRunner.record_topics``: nothing with
    ``topic.tracking.enable=false``, a failure logged); ``records`` is where they are kept
    (None: topics are not tracked), which ``forgotten`` compares with what the host sent."""

    def __init__(
        self,
        task: TaskId,
        metrics: TaskMetrics,
        record_topics: Callable[[Collection[str]], None],
        records: TopicRecords | None,
    ) -> None:
        self._connector = task.connector
        self._metrics = metrics
        self._record_topics = record_topics
        self._records = records
        self._lock = threading.Lock()
        #: The topics the host sent that it was not told to forget since.
        self._sent: set[str] = set()
        self._plugins = MirroredPluginMetrics(functools.partial(metrics.plugin_metrics, {}))
        #: Held while a report is taken, so that once ``close`` returned none is under way.
        self._handling = threading.Lock()
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether the task's runner stopped or closed: reports are ignored since."""
        return self._closed

    def close(self) -> None:
        """From the task's stop on, reports are ignored: the worker then drops the task's
        series, which a late one would make again for a task no longer running here (the
        connection outlives the stop when the loop is left to close it, and a parked host's
        reader hands reports to this task's until the next task adopts it). Returns once no
        report is being taken."""
        with self._handling:
            self._closed = True

    def handle(self, message: Any) -> None:
        """One ``HostMessage`` carrying ``topics_used`` or ``task_metrics``; none once
        ``close``d."""
        with self._handling:
            if self._closed:
                return
            kind = message.WhichOneof("message")
            if kind == "topics_used":
                topics = list(message.topics_used.topics)
                self._record_topics(topics)
                with self._lock:
                    self._sent.update(topics)
            elif kind == "task_metrics":
                self._add(message.task_metrics)

    def forgotten(self) -> list[str]:
        """The topics the host sent whose records are gone since (a user reset them): the
        host is to forget them (``ForgetTopics``), so that its task's next use of one sends it
        again and it is recorded again. Called from the runner's loop, every turn."""
        if self._records is None:
            return []
        with self._lock:
            if not self._sent:
                return []
        # the records are read first, and what was sent is compared and reduced in one hold:
        # nothing leaves it unnamed, and a topic the host sends while the records are read
        # is at worst named once more (the host then sends it again)
        active = set(self._records.active_topics(self._connector))
        with self._lock:
            gone = self._sent - active
            self._sent -= gone
        return sorted(gone)

    def _add(self, report: Any) -> None:
        metrics = self._metrics
        increments: Mapping[str, float] = report.increments
        polled = int(increments.get("source-record-poll-total", 0))
        if polled:
            metrics.polled(polled)
        metrics.add_counts(
            written=int(increments.get("source-record-write-total", 0)),
            read=int(increments.get("sink-record-read-total", 0)),
            sent=int(increments.get("sink-record-send-total", 0)),
        )
        for size in report.batch_sizes:
            metrics.batch_moved(int(size))
        for millis in report.commit_times_ms:
            metrics.commit_succeeded(millis / 1000)
        if report.commit_failures:
            metrics.add_commits(CommitTally(failed=int(report.commit_failures)))
        metrics.add_errors(error_counts(increments, report.gauges))
        if report.HasField("plugin_metrics"):
            self._plugins.replace(java_plugin_values(report.plugin_metrics.metrics))
        if report.dropped:
            log.debug("java_task_observations_dropped", dropped=int(report.dropped))


def java_plugin_values(sent: Iterable[Any]) -> dict[MetricName, float]:
    """The metrics Java plugins registered (KIP-877), as a JVM sent them
    (``PluginMetricValue``s), under the names a Python plugin's have (``java_metric_name``):
    what ``MirroredPluginMetrics`` exports as gauges of the task's PluginMetrics
    (``TaskMetrics.plugin_metrics``). A Java connector's own, read from the driver's JVM,
    are named the same way (``runtime.java_connector_metrics``)."""
    return {
        java_metric_name(value.name, value.description, value.tags): float(value.value)
        for value in sent
    }


def java_metric_name(name: str, description: str, tags: Mapping[str, str]) -> MetricName:
    """A Java plugin metric's name, with Kafka's tags as Prometheus labels (a label's name
    is letters, digits and ``_``)."""
    return MetricName(name, description, tuple(sorted(
        (re.sub(r"[^A-Za-z0-9_]", "_", key), value) for key, value in tags.items()
    )))
