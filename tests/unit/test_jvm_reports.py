"""A JVM host's reports of its Java task (``runtime.hosting.jvm_reports``): Kafka's metrics
taken into the worker's series under a Python task's names, the topics recorded through the
runner, the topics whose records were reset named for the host to forget, and the reports
reaching their taker over a real connection."""

from __future__ import annotations

import socket
import threading
from collections.abc import Collection, Iterator

import pytest
from prometheus_client import CollectorRegistry

from connect_grpc.host.v1 import host_pb2
from connect_grpc.kernel.domain import TaskId
from connect_grpc.metrics.worker_metrics import WorkerMetrics
from connect_grpc.runtime.hosting.jvm_reports import JavaTaskReports, TopicRecords
from connect_grpc.runtime.hosting.jvm_wire import JvmHostListener, encode

TASK = TaskId("java-orders", 0)
LABELS = {"connector": "java-orders", "task": "0"}


class Board:
    """The herder's topic records, in memory."""

    def __init__(self) -> None:
        self.topics: dict[str, set[str]] = {}

    def record(self, topics: Collection[str]) -> None:
        self.topics.setdefault(TASK.connector, set()).update(topics)

    def active_topics(self, name: str) -> list[str]:
        return sorted(self.topics.get(name, set()))


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


def _value(registry: CollectorRegistry, name: str, **extra: str) -> float | None:
    return registry.get_sample_value(name, {**LABELS, **extra})


def _metrics_message(**fields: object) -> host_pb2.HostMessage:
    return host_pb2.HostMessage(task_metrics=host_pb2.TaskMetrics(**fields))  # type: ignore[arg-type]


def test_kafkas_source_metrics_are_counted_under_a_python_tasks_names(
    registry: CollectorRegistry,
) -> None:
    reports = JavaTaskReports(TASK, WorkerMetrics(registry).task(TASK), Board().record, None)
    reports.handle(_metrics_message(
        increments={"source-record-poll-total": 7, "source-record-write-total": 5,
                    "total-record-errors": 2, "total-records-skipped": 2,
                    "deadletterqueue-produce-requests": 2},
        gauges={"last-error-timestamp": 1_700_000_000_000},
        batch_sizes=[4, 3], commit_times_ms=[12.0], commit_failures=1,
    ))
    reports.handle(_metrics_message(increments={"source-record-write-total": 2}))
    assert _value(registry, "kafka_connect_source_task_source_record_poll_total") == 7
    assert _value(registry, "kafka_connect_source_task_source_record_write_total") == 7
    assert _value(registry, "kafka_connect_connector_task_batch_size_count") == 2
    assert _value(registry, "kafka_connect_connector_task_batch_size_sum") == 7
    assert _value(registry, "kafka_connect_connector_task_offset_commit_success_total") == 1
    assert _value(registry, "kafka_connect_connector_task_offset_commit_time_seconds_sum") == (
        pytest.approx(0.012))
    assert _value(registry, "kafka_connect_connector_task_offset_commit_failure_total") == 1
    assert _value(registry, "kafka_connect_task_error_total_record_errors_total") == 2
    assert _value(registry, "kafka_connect_task_error_total_records_skipped_total") == 2
    assert _value(registry,
                  "kafka_connect_task_error_deadletterqueue_produce_requests_total") == 2
    assert _value(registry, "kafka_connect_task_error_last_error_timestamp") == 1_700_000_000_000
    # a sink's series are not made up for a source
    assert _value(registry, "kafka_connect_sink_task_sink_record_read_total") is None


def test_kafkas_sink_metrics_are_counted_under_a_python_tasks_names(
    registry: CollectorRegistry,
) -> None:
    reports = JavaTaskReports(TASK, WorkerMetrics(registry).task(TASK), Board().record, None)
    reports.handle(_metrics_message(
        increments={"sink-record-read-total": 10, "sink-record-send-total": 9},
        batch_sizes=[10],
    ))
    assert _value(registry, "kafka_connect_sink_task_sink_record_read_total") == 10
    assert _value(registry, "kafka_connect_sink_task_sink_record_send_total") == 9
    assert _value(registry, "kafka_connect_connector_task_batch_size_sum") == 10
    assert _value(registry, "kafka_connect_source_task_source_record_write_total") is None


def test_java_plugins_metrics_are_exported_as_a_python_plugins_with_kafkas_tags(
    registry: CollectorRegistry,
) -> None:
    worker = WorkerMetrics(registry)
    reports = JavaTaskReports(TASK, worker.task(TASK), Board().record, None)

    def plugin(value: float, **own: str) -> host_pb2.PluginMetricValue:
        tags = {**LABELS, "transformation": "count", **own}
        return host_pb2.PluginMetricValue(name="records-seen", description="seen", tags=tags,
                                          value=value)

    reports.handle(_metrics_message(plugin_metrics=host_pb2.PluginMetricValues(
        metrics=[plugin(4), plugin(1, **{"my-tag": "x"})])))
    seen = "connect_grpc_plugin_records_seen"
    assert _value(registry, seen, transformation="count") == 4
    assert _value(registry, seen, transformation="count", my_tag="x") == 1
    reports.handle(_metrics_message(increments={"source-record-poll-total": 1}))  # unchanged
    assert _value(registry, seen, transformation="count") == 4
    reports.handle(_metrics_message(plugin_metrics=host_pb2.PluginMetricValues(
        metrics=[plugin(9)])))
    assert _value(registry, seen, transformation="count") == 9
    assert _value(registry, seen, transformation="count", my_tag="x") is None
    worker.forget_task(TASK)  # the task stopped: its plugins' series go with it
    assert _value(registry, seen, transformation="count") is None
    reports.handle(_metrics_message(plugin_metrics=host_pb2.PluginMetricValues(
        metrics=[plugin(10)])))  # a report after the stop adds nothing back
    assert _value(registry, seen, transformation="count") is None


def test_a_report_after_the_close_brings_back_no_series_of_the_stopped_task(
    registry: CollectorRegistry,
) -> None:
    """The connection may outlive the stop (a loop left to close it, a parked host's reader
    until adoption): once the runner closed its reports, the worker's dropped series stay
    dropped and no topic is recorded."""
    worker = WorkerMetrics(registry)
    recorded: list[list[str]] = []
    reports = JavaTaskReports(TASK, worker.task(TASK), lambda t: recorded.append(list(t)), None)
    reports.handle(_metrics_message(increments={"source-record-write-total": 3}))
    assert _value(registry, "kafka_connect_source_task_source_record_write_total") == 3
    reports.close()
    assert reports.closed
    worker.forget_task(TASK)
    reports.handle(_metrics_message(
        increments={"source-record-poll-total": 1, "source-record-write-total": 1,
                    "total-record-errors": 1},
        batch_sizes=[1], commit_times_ms=[5.0], commit_failures=1,
    ))
    reports.handle(host_pb2.HostMessage(topics_used=host_pb2.TopicsUsed(topics=["a"])))
    assert [s for m in registry.collect() for s in m.samples
            if s.labels.get("connector") == TASK.connector] == []
    assert recorded == []


def test_topics_are_recorded_and_those_reset_since_are_named_once_to_forget() -> None:
    board = Board()
    recorded: list[list[str]] = []

    def record(topics: Collection[str]) -> None:
        recorded.append(list(topics))
        board.record(topics)

    reports = JavaTaskReports(TASK, WorkerMetrics().task(TASK), record, board)
    assert isinstance(board, TopicRecords)
    assert reports.forgotten() == []  # nothing sent yet
    reports.handle(host_pb2.HostMessage(topics_used=host_pb2.TopicsUsed(topics=["a", "b"])))
    assert recorded == [["a", "b"]]
    assert reports.forgotten() == []  # both still recorded
    board.topics[TASK.connector] = {"b"}  # a user reset "a"
    assert reports.forgotten() == ["a"]
    assert reports.forgotten() == [], "a topic is named once, until the host sends it again"
    reports.handle(host_pb2.HostMessage(topics_used=host_pb2.TopicsUsed(topics=["a"])))
    assert board.active_topics(TASK.connector) == ["a", "b"]


def test_a_topic_sent_while_the_records_are_read_is_named_or_kept_never_dropped() -> None:
    """The host's reader adds to what was sent while the loop compares it with the records:
    a topic sent meanwhile is either named to forget (the host then sends it again) or kept,
    so that a later reset of it still reaches the host."""
    board = Board()
    reports: JavaTaskReports

    class Reading(Board):
        def active_topics(self, name: str) -> list[str]:
            active = board.active_topics(name)
            # the host sends "b" while the records are read
            reports.handle(host_pb2.HostMessage(topics_used=host_pb2.TopicsUsed(topics=["b"])))
            return active

    reports = JavaTaskReports(TASK, WorkerMetrics().task(TASK), board.record, Reading())
    reports.handle(host_pb2.HostMessage(topics_used=host_pb2.TopicsUsed(topics=["a"])))
    board.topics[TASK.connector] = set()  # a user reset "a"
    named = reports.forgotten()
    assert "a" in named
    if "b" not in named:
        board.topics[TASK.connector] = set()  # a user reset "b" as well
        assert reports.forgotten() == ["b"]


def test_without_topic_records_nothing_is_forgotten() -> None:
    reports = JavaTaskReports(TASK, WorkerMetrics().task(TASK), lambda topics: None, None)
    reports.handle(host_pb2.HostMessage(topics_used=host_pb2.TopicsUsed(topics=["a"])))
    assert reports.forgotten() == []


@pytest.fixture
def listener() -> Iterator[JvmHostListener]:
    listening = JvmHostListener(lambda: "127.0.0.1")
    yield listening
    listening.close()


def test_a_connection_hands_the_hosts_reports_to_their_taker_and_survives_a_bad_one(
    listener: JvmHostListener,
) -> None:
    token, connected = listener.expect()
    host = socket.create_connection(listener.address(), timeout=10)
    host.sendall(encode(host_pb2.HostMessage(hello=host_pb2.Hello(token=token))))
    conn = connected.result(timeout=10)
    taken: list[str] = []
    done = threading.Event()

    def take(message: host_pb2.HostMessage) -> None:
        kind = message.WhichOneof("message")
        if kind == "task_metrics":
            raise ValueError("a report the worker cannot take")
        taken.extend(message.topics_used.topics)
        done.set()

    conn.start("test-reader", lambda check: "", take)
    host.sendall(encode(_metrics_message(increments={"source-record-poll-total": 1})))
    host.sendall(encode(host_pb2.HostMessage(topics_used=host_pb2.TopicsUsed(topics=["a"]))))
    assert done.wait(10)
    assert taken == ["a"]
    assert conn.lost is None, "a report that could not be taken does not lose the host"
    host.close()
    conn.close()
