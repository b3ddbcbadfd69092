"""What the JVM hosts of Kafka Connect's Java tasks report besides statuses, on a real
distributed worker process with a metrics endpoint: Kafka's FileStreamSource and
FileStreamSink (connect-file on ``plugin.path``) created over gRPC, the topics their tasks use
(KIP-558) listed by GetConnectorTopics and reset by ResetConnectorTopics as a Python task's,
and their metrics, counted by Kafka's worker in the host, on the worker's Prometheus endpoint
under the names and labels of a Python task's, with the metrics a Java transformation of the
test's own registers (KIP-877), and the metrics a Java connector of the test's own registers
through its context (KIP-877), exported with a Python connector's labels."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.kernel.domain import State
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from tests.integration.helpers import create_topic
from tests.integration.java_builds import SOURCE_CONNECTOR, build_plugin
from tests.integration.java_worker import metrics_port
from tests.integration.test_metrics import scrape, task_labels

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
CALL_TIMEOUT_S = 240
STATE_TIMEOUT_S = 120


TRANSFORMATION = "org.apache.kafka.connect.transforms.Transformation"
COUNTING_CLASS = "test.metrics.CountingTransform"
COUNTING_PATH = "test/metrics/CountingTransform.java"
#: A transformation that counts the records it sees in a metric of its own (KIP-877).
COUNTING_SOURCE = """
package test.metrics;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.Monitorable;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.transforms.Transformation;

public class CountingTransform<R extends ConnectRecord<R>>
        implements Transformation<R>, Monitorable {
    private final AtomicLong seen = new AtomicLong();

    @Override
    public void withPluginMetrics(PluginMetrics metrics) {
        LinkedHashMap<String, String> tags = new LinkedHashMap<>();
        tags.put("unit", "records");
        metrics.addMetric(metrics.metricName("records-seen", "Records seen", tags),
                (Gauge<Long>) (config, now) -> seen.get());
    }

    @Override
    public R apply(R record) {
        seen.incrementAndGet();
        return record;
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef();
    }

    @Override
    public void configure(Map<String, ?> configs) {
    }

    @Override
    public void close() {
    }
}
"""


MONITORED_CLASS = "test.metrics.MonitoredSource"
MONITORED_PATH = "test/metrics/MonitoredSource.java"
#: A source connector that counts the task configs it generated in a metric of its own,
#: registered through its context's PluginMetrics (KIP-877); it generates none, so that no
#: task runs.
MONITORED_SOURCE = """
package test.metrics;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

public class MonitoredSource extends SourceConnector {
    private final AtomicLong generated = new AtomicLong();

    @Override
    public void start(Map<String, String> props) {
        PluginMetrics metrics = context().pluginMetrics();
        LinkedHashMap<String, String> tags = new LinkedHashMap<>();
        tags.put("unit", "calls");
        metrics.addMetric(metrics.metricName("configs-generated", "taskConfigs calls", tags),
                (Gauge<Long>) (config, now) -> generated.get());
    }

    @Override
    public Class<? extends Task> taskClass() {
        return Idle.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        generated.incrementAndGet();
        return List.of();
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef();
    }

    @Override
    public String version() {
        return "1.2.3";
    }

    public static class Idle extends SourceTask {
        @Override
        public String version() {
            return "1.2.3";
        }

        @Override
        public void start(Map<String, String> props) {
        }

        @Override
        public List<SourceRecord> poll() {
            return null;
        }

        @Override
        public void stop() {
        }
    }
}
"""


@dataclass
class ReportingWorker:
    client: ConnectClient
    metrics_port: int


def build_plugins(work: Path, plugins: Path) -> None:
    """Compiles this module's plugins under ``work`` into the directory of plugins ``plugins``
    (of :mod:`java_worker`'s worker)."""
    # a Java transformation of our own that registers a metric (KIP-877), beside connect-file
    build_plugin(work / "build", plugins / "counting-transform", {COUNTING_PATH: COUNTING_SOURCE},
                 {TRANSFORMATION: [COUNTING_CLASS]})
    # and a Java connector of our own that registers one through its context
    build_plugin(work / "build-connector", plugins / "monitored-source",
                 {MONITORED_PATH: MONITORED_SOURCE}, {SOURCE_CONNECTOR: [MONITORED_CLASS]})


@pytest.fixture(scope="module")
def worker(shared_java_worker: WorkerProcess) -> Iterator[ReportingWorker]:
    """The session's worker of :mod:`java_worker`: String converters, offsets committed
    every second (offset.flush.interval.ms, 60 s by default) and a metrics endpoint."""
    with ConnectClient(shared_java_worker.address, timeout=CALL_TIMEOUT_S,
                       retry_unavailable=True) as client:
        yield ReportingWorker(client, metrics_port(shared_java_worker))


def _running(client: ConnectClient, name: str) -> None:
    def running() -> bool:
        tasks = client.get_connector_status(name).tasks
        return bool(tasks) and tasks[0].status.state is State.RUNNING

    try:
        wait_until(running, timeout=STATE_TIMEOUT_S)
    except TimeoutError:
        raise AssertionError(f"{name}'s task not RUNNING: "
                             f"{client.get_connector_status(name)}") from None


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _append(path: Path, values: list[str]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(f"{value}\n" for value in values))


def _topics_become(client: ConnectClient, name: str, expected: list[str],
                   timeout: float = STATE_TIMEOUT_S) -> None:
    try:
        wait_until(lambda: client.get_connector_topics(name) == expected, timeout=timeout)
    except TimeoutError:
        raise AssertionError(
            f"{name}'s topics: expected {expected}, got {client.get_connector_topics(name)}"
        ) from None


def test_java_tasks_topics_are_listed_reset_and_recorded_again_when_used_again(
    worker: ReportingWorker, kafka_admin: object, tmp_path: Path, unique_topic: str
) -> None:
    client = worker.client
    create_topic(kafka_admin, unique_topic)  # type: ignore[arg-type]
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    _append(source, [f"line {i}" for i in range(100)])
    run = uuid.uuid4().hex[:6]
    source_name, sink_name = f"java-topics-source-{run}", f"java-topics-sink-{run}"
    client.create_connector(source_name, {"connector.class": FILE_SOURCE, "tasks.max": "1",
                                          "file": str(source), "topic": unique_topic})
    client.create_connector(sink_name, {"connector.class": FILE_SINK, "tasks.max": "1",
                                        "file": str(out), "topics": unique_topic})
    try:
        _running(client, source_name)
        _running(client, sink_name)
        # the source's topic once Kafka acknowledged its records; the sink's once it read them
        _topics_become(client, source_name, [unique_topic])
        _topics_become(client, sink_name, [unique_topic])
        wait_until(lambda: len(_lines(out)) == 100, timeout=STATE_TIMEOUT_S)

        # a reset of running connectors (Kafka Connect allows it) forgets their topics, and
        # tasks that use none meanwhile do not bring them back
        client.reset_connector_topics(source_name)
        client.reset_connector_topics(sink_name)
        _topics_become(client, source_name, [])
        _topics_become(client, sink_name, [])
        with pytest.raises(TimeoutError):
            wait_until(lambda: client.get_connector_topics(source_name)
                       or client.get_connector_topics(sink_name), timeout=5)

        # used again: recorded again (the hosts were told to forget what they sent)
        _append(source, [f"again {i}" for i in range(10)])
        wait_until(lambda: len(_lines(out)) == 110, timeout=STATE_TIMEOUT_S)
        _topics_become(client, source_name, [unique_topic])
        _topics_become(client, sink_name, [unique_topic])
    finally:
        for name in (source_name, sink_name):
            client.delete_connector(name)
    # a deleted connector's topics are reset
    _topics_become(client, source_name, [])


def test_java_tasks_metrics_are_exported_with_a_python_tasks_names_and_labels(
    worker: ReportingWorker, kafka_admin: object, tmp_path: Path, unique_topic: str
) -> None:
    client = worker.client
    create_topic(kafka_admin, unique_topic)  # type: ignore[arg-type]
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    _append(source, [f"line {i}" for i in range(500)])
    run = uuid.uuid4().hex[:6]
    source_name, sink_name = f"java-metrics-source-{run}", f"java-metrics-sink-{run}"
    client.create_connector(source_name, {"connector.class": FILE_SOURCE, "tasks.max": "1",
                                          "file": str(source), "topic": unique_topic})
    client.create_connector(sink_name, {"connector.class": FILE_SINK, "tasks.max": "1",
                                        "file": str(out), "topics": unique_topic})
    port = worker.metrics_port
    source_task, sink_task = task_labels(source_name), task_labels(sink_name)
    try:
        _running(client, source_name)
        _running(client, sink_name)
        wait_until(lambda: len(_lines(out)) == 500, timeout=STATE_TIMEOUT_S)

        def counted() -> bool:
            now = scrape(port)
            return (
                now.value("kafka_connect_source_task_source_record_write_total",
                          **source_task) == 500
                and now.value("kafka_connect_sink_task_sink_record_send_total", **sink_task) == 500
                and (now.value("kafka_connect_connector_task_offset_commit_success_total",
                               **sink_task) or 0) >= 1
                and (now.value("kafka_connect_connector_task_offset_commit_success_total",
                               **source_task) or 0) >= 1
            )

        try:
            wait_until(counted, timeout=STATE_TIMEOUT_S)
        except TimeoutError:
            raise AssertionError(
                {k: v for k, v in scrape(port).samples.items()
                 if dict(k[1]).get("connector") in (source_name, sink_name)}
            ) from None
        metrics = scrape(port)
        # Kafka's source-task-metrics, sink-task-metrics and connector-task-metrics
        assert metrics.value("kafka_connect_source_task_source_record_poll_total",
                             **source_task) == 500
        assert metrics.value("kafka_connect_sink_task_sink_record_read_total", **sink_task) == 500
        for labels in (source_task, sink_task):
            # every batch's size: they add up to the records moved
            assert metrics.value("kafka_connect_connector_task_batch_size_sum", **labels) == 500
            assert (metrics.value("kafka_connect_connector_task_batch_size_count", **labels)
                    or 0) >= 1
            assert (metrics.value("kafka_connect_connector_task_offset_commit_time_seconds_count",
                                  **labels) or 0) >= 1
            # the worker's own view of the task, as for any task
            assert metrics.value("kafka_connect_connector_task_status",
                                 **labels, status="running") == 1
        # Kafka's task-error-metrics: nothing failed
        assert not metrics.value("kafka_connect_task_error_total_record_errors_total",
                                 **source_task)
    finally:
        for name in (source_name, sink_name):
            client.delete_connector(name)
    # a stopped task's series leave the scrape
    wait_until(lambda: scrape(port).value("kafka_connect_source_task_source_record_write_total",
                                          **source_task) is None, timeout=STATE_TIMEOUT_S)


def test_a_java_plugins_own_metrics_are_exported_as_a_python_plugins(
    worker: ReportingWorker, kafka_admin: object, tmp_path: Path, unique_topic: str
) -> None:
    client = worker.client
    create_topic(kafka_admin, unique_topic)  # type: ignore[arg-type]
    source = tmp_path / "in.txt"
    _append(source, [f"line {i}" for i in range(40)])
    name = f"java-plugin-metrics-{uuid.uuid4().hex[:6]}"
    client.create_connector(name, {"connector.class": FILE_SOURCE, "tasks.max": "1",
                                   "file": str(source), "topic": unique_topic,
                                   "transforms": "count", "transforms.count.type": COUNTING_CLASS})
    port = worker.metrics_port
    series = "connect_grpc_plugin_records_seen"
    try:
        _running(client, name)

        def seen() -> float | None:
            found = [value for (metric, labels), value in scrape(port).samples.items()
                     if metric == series and dict(labels).get("connector") == name]
            return found[0] if len(found) == 1 else None

        try:
            wait_until(lambda: seen() == 40, timeout=STATE_TIMEOUT_S)
        except TimeoutError:
            raise AssertionError(f"{series} of {name}: {seen()}") from None
        [(_, labels)] = [key for key in scrape(port).samples
                         if key[0] == series and dict(key[1]).get("connector") == name]
        # Kafka's tags of the plugin, and the metric's own
        assert {"task": "0", "transformation": "count", "unit": "records"}.items() <= dict(
            labels).items()
    finally:
        client.delete_connector(name)
    wait_until(lambda: not any(metric == series and dict(labels).get("connector") == name
                               for metric, labels in scrape(port).samples),
               timeout=STATE_TIMEOUT_S)


def test_a_java_connectors_own_metrics_are_exported_as_a_python_connectors(
    worker: ReportingWorker,
) -> None:
    client = worker.client
    name = f"java-connector-metrics-{uuid.uuid4().hex[:6]}"
    port = worker.metrics_port
    series = "connect_grpc_plugin_configs_generated"

    def found() -> list[tuple[dict[str, str], float]]:
        return [(dict(labels), value) for (metric, labels), value in scrape(port).samples.items()
                if metric == series and dict(labels).get("connector") == name]

    def exported() -> bool:
        return len(found()) == 1 and found()[0][1] >= 1

    def gone() -> bool:
        return not found()

    client.create_connector(name, {"connector.class": MONITORED_CLASS, "tasks.max": "1"})
    try:
        try:
            wait_until(exported, timeout=STATE_TIMEOUT_S)
        except TimeoutError:
            raise AssertionError(f"{series} of {name}: {found()}, status "
                                 f"{client.get_connector_status(name)}") from None
        [(labels, _)] = found()
        # a Python connector's labels: the worker's tags, then the metric's own
        assert labels == {"connector": name, "config": "connector", "class": MONITORED_CLASS,
                          "version": "1.2.3", "unit": "calls"}

        # paused, the Java instance is released, and its metrics with it; resumed, a new
        # instance registers them again
        client.pause_connector(name)
        wait_until(gone, timeout=STATE_TIMEOUT_S)
        client.resume_connector(name)
        wait_until(exported, timeout=STATE_TIMEOUT_S)
    finally:
        client.delete_connector(name)
    wait_until(gone, timeout=STATE_TIMEOUT_S)
