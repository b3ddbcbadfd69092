"""Kafka Connect's Java tasks through the gRPC API, on a real distributed worker process:
Kafka's FileStreamSource and FileStreamSink (connect-file on ``plugin.path``) created over
gRPC, their tasks run by Kafka's worker in JVM hosts: a file's lines through a topic into
another file, the tasks' statuses with their placement and version, Kafka's offsets read back
with GetOffsets, a failing task's Java root cause in its status, Kafka's worker built as
the worker starts, not by its first Java task, and the Java plugins' log lines and loggers
over gRPC (the in-process side of the logs is ``test_java_logs``'s; the test is here to run on
the worker the Java modules share, :mod:`java_worker`, rather than start one of its own).
(Pause, resume, a cancelled host and the stop time-out are ``test_java_tasks``'s, which
drives the worker in process.)"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.client import ConnectClient
from connect_grpc.java.plugin_jars import CONNECT_FILE
from connect_grpc.kernel.domain import PlacementKind, State, TaskStatus
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from tests.integration.helpers import create_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
SOURCE_TASK = "org.apache.kafka.connect.file.FileStreamSourceTask"
FILE_LOGGERS = "org.apache.kafka.connect.file"
#: The first call that needs the Java plugins waits for the scan of plugin.path.
CALL_TIMEOUT_S = 240
STATE_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def worker_process(shared_java_worker: WorkerProcess) -> WorkerProcess:
    """The session's worker of :mod:`java_worker`: String converters, and Kafka's worker
    commits a sink's offsets every second (offset.flush.interval.ms, 60 s by default)."""
    return shared_java_worker


@pytest.fixture(scope="module")
def worker(worker_process: WorkerProcess) -> Iterator[ConnectClient]:
    with ConnectClient(worker_process.address, timeout=CALL_TIMEOUT_S,
                       retry_unavailable=True) as client:
        yield client


def _task(client: ConnectClient, name: str, state: State) -> TaskStatus:
    def reached() -> TaskStatus | None:
        tasks = client.get_connector_status(name).tasks
        return tasks[0] if tasks and tasks[0].status.state is state else None

    try:
        return wait_until(reached, timeout=STATE_TIMEOUT_S)
    except TimeoutError:
        raise AssertionError(f"{name}'s task not {state.name}: "
                             f"{client.get_connector_status(name)}") from None


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_kafkas_filestream_connectors_move_a_files_lines_through_a_topic(
    worker: ConnectClient, kafka_admin: object, tmp_path: Path, unique_topic: str
) -> None:
    create_topic(kafka_admin, unique_topic)  # type: ignore[arg-type]
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    values = [f"line {i}" for i in range(1000)]
    source.write_text("".join(f"{value}\n" for value in values), encoding="utf-8")
    run = uuid.uuid4().hex[:6]
    source_name, sink_name = f"java-source-{run}", f"java-sink-{run}"
    worker.create_connector(source_name, {"connector.class": FILE_SOURCE, "tasks.max": "1",
                                          "file": str(source), "topic": unique_topic})
    worker.create_connector(sink_name, {"connector.class": FILE_SINK, "tasks.max": "1",
                                        "file": str(out), "topics": unique_topic})
    try:
        for name in (source_name, sink_name):
            task = _task(worker, name, State.RUNNING).status
            assert task.version == CONNECT_FILE.version
            # a Spark task of its own (a local master's executor is the driver's)
            assert task.placement is not None
            assert task.placement.kind is PlacementKind.SPARK_EXECUTOR
            assert task.placement.host.startswith("executor driver on ")
        wait_until(lambda: _lines(out) == values, timeout=STATE_TIMEOUT_S)
        # Kafka Connect's offsets, as Kafka's worker wrote them, read back by the API
        size = source.stat().st_size
        wait_until(lambda: [(o.partition, o.offset) for o in worker.get_offsets(source_name)]
                   == [({"filename": str(source)}, {"position": size})], timeout=STATE_TIMEOUT_S)
        sink_partition = {"kafka_topic": unique_topic, "kafka_partition": 0}
        wait_until(lambda: [(o.partition, o.offset) for o in worker.get_offsets(sink_name)]
                   == [(sink_partition, {"kafka_offset": 1000})], timeout=STATE_TIMEOUT_S)
    finally:
        for name in (source_name, sink_name):
            worker.delete_connector(name)


def test_a_failing_java_task_shows_its_java_root_cause_in_its_status(
    worker: ConnectClient, tmp_path: Path, unique_topic: str
) -> None:
    name = f"java-failing-{uuid.uuid4().hex[:6]}"
    directory = tmp_path / "a-directory"
    directory.mkdir()
    worker.create_connector(name, {"connector.class": FILE_SINK, "tasks.max": "1",
                                   "file": str(directory), "topics": unique_topic})
    try:
        task = _task(worker, name, State.FAILED).status
        headline, _, rest = task.trace.partition("\n")
        assert headline == (
            f"Couldn't find or create file '{directory}' for FileStreamSinkTask: "
            f"java.nio.file.FileSystemException: {directory}: Is a directory"
        )
        assert "at org.apache.kafka.connect.file.FileStreamSinkTask.start" in rest
        # the connector itself runs: only its task failed
        assert worker.get_connector_status(name).connector.state is State.RUNNING
    finally:
        worker.delete_connector(name)


def test_kafkas_worker_is_built_as_the_worker_starts_not_by_its_first_java_task(
    worker: ConnectClient, worker_process: WorkerProcess, tmp_path: Path, unique_topic: str
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("a line\n", encoding="utf-8")
    name = f"java-warm-{uuid.uuid4().hex[:6]}"
    worker.create_connector(name, {"connector.class": FILE_SOURCE, "tasks.max": "1",
                                   "file": str(source), "topic": unique_topic})
    try:
        _task(worker, name, State.RUNNING)
    finally:
        worker.delete_connector(name)
    builds = []
    for line in worker_process.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if str(entry.get("message", "")).startswith("Started Kafka Connect's worker for"):
            builds.append(entry.get("thread"))
    # one Kafka worker for every Java task of the worker, built by the driver's JVM as Spark
    # started (the thread of KafkaTaskWorker.warm), not by a task's host
    assert builds == ["connect-grpc-kafka-worker-warm"]


def test_over_grpc_a_java_connectors_lines_arrive_and_set_log_level_reaches_java_loggers(
    worker: ConnectClient, worker_process: WorkerProcess, tmp_path: Path,
) -> None:
    """The production path of ``test_java_logs``: the connector instance's line comes from
    the driver's JVM, ListLoggers and GetLogger answer the JVM's loggers, and SetLogLevel
    reaches the JVM hosting the task."""
    try:
        _grpc_log_checks(worker, worker_process, tmp_path)
    finally:
        worker.set_log_level(FILE_LOGGERS, "INFO")  # the module's other tests log at INFO


def _java_events(process: WorkerProcess, connector: str) -> list[dict[str, Any]]:
    """The worker's java_log events of ``connector``, from the whole of its log (the module's
    earlier tests wrote to it too)."""
    text = process.log_path.read_text(encoding="utf-8", errors="replace")
    events = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    return [e for e in events if e.get("event") == "java_log" and e.get("connector") == connector]


def _grpc_log_checks(client: ConnectClient, process: WorkerProcess, tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("a\nb\n", encoding="utf-8")
    config = {"connector.class": FILE_SOURCE, "file": str(source), "tasks.max": "1",
              "topic": f"java-logs-{uuid.uuid4().hex[:8]}",
              "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
    first = f"java-grpc-{uuid.uuid4().hex[:6]}"
    client.create_connector(first, config)
    # the connector instance's own line, from the driver's JVM: its connector named, no task
    starting = f"Starting file source connector reading from {source}"
    wait_until(lambda: [e for e in _java_events(process, first) if e["message"] == starting],
               timeout=STATE_TIMEOUT_S)
    [line] = [e for e in _java_events(process, first) if e["message"] == starting]
    assert (line["logger"], line["level"], line["executor"]) == (
        "org.apache.kafka.connect.file.FileStreamSourceConnector", "info", "driver",
    )
    assert "task" not in line
    wait_until(lambda: [e for e in _java_events(process, first) if e.get("task") == 0
                        and "Source task finished initialization" in e["message"]],
               timeout=STATE_TIMEOUT_S)

    listed = client.list_loggers()
    assert listed["org.apache.kafka.connect.file.FileStreamSourceConnector"].level == "INFO"
    assert not [name for name in listed if name.startswith("org.apache.spark")]
    changed = client.set_log_level(FILE_LOGGERS, "DEBUG")
    assert {"org.apache.kafka.connect.file.FileStreamSourceConnector", SOURCE_TASK} <= set(changed)
    task_logger = client.get_logger(SOURCE_TASK)
    assert task_logger.level == "DEBUG" and task_logger.last_modified is not None

    # a task started after the set logs its DEBUG line, from the JVM that hosts it
    second = f"java-grpc-{uuid.uuid4().hex[:6]}"
    client.create_connector(second, {**config, "topic": f"java-logs-{uuid.uuid4().hex[:8]}"})
    opened = f"Opened {source} for reading"
    wait_until(lambda: [e for e in _java_events(process, second)
                        if e["message"] == opened and e.get("task") == 0],
               timeout=STATE_TIMEOUT_S)
    assert not [e for e in _java_events(process, first) if e["message"] == opened], (
        "the first task opened its file before the set, at INFO"
    )
    client.delete_connector(first)
    client.delete_connector(second)
