"""Kafka Connect's Java tasks run by Kafka's own worker in JVM hosts, driven by the worker's
task state machine, against a real broker and real Spark (local[2]): Kafka's connect-file
jar (``plugin.path`` holds the plugin directories ``make install`` fetched) moves a file's
lines into a topic and a topic into a file, with Kafka's converters, transformations,
dead-letter queue, offsets and consumer group; pause, resume, stop, a failure, a cancelled
host and placement behave as for any task.

The connectors' instances are not what these tests are about: the tasks are started on the
worker directly, with the task configs Kafka's FileStream connectors generate (``task.class``
included, as Kafka Connect's worker adds it), and the worker's plugin loader gives, for
Kafka's connector classes, a connector whose task class stands for a Java task. One worker
serves the module; each test uses its own names, files and topics, and stops its tasks.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.api import (
    ConfigDef,
    Connector,
    SinkConnector,
    SourceConnector,
    Task,
)
from connect_grpc.java.plugin_jars import ensure_plugins
from connect_grpc.kernel.domain import InstanceStatus, PlacementKind, State, TargetState, TaskId
from connect_grpc.runtime.java_task_classes import JavaSinkTask, JavaSourceTask
from connect_grpc.runtime.placement import (
    DRIVER_HOST,
    LOCAL_EXECUTOR_ID,
    driver_placement,
    executor_placement,
)
from connect_grpc.runtime.spark import host_job_tag
from connect_grpc.runtime.worker import Worker
from connect_grpc.storage.file_offsets import FileOffsetStore
from tests.integration.helpers import create_topic, fresh_spark_jvm, produce, read_all
from tests.integration.test_runtime import RecordingListener, group_offset, lines, wait_for

pytestmark = [pytest.mark.integration]

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
SOURCE_TASK = "org.apache.kafka.connect.file.FileStreamSourceTask"
SINK_TASK = "org.apache.kafka.connect.file.FileStreamSinkTask"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
#: Kafka Connect's task.shutdown.graceful.timeout.ms on the module's worker.
SHUTDOWN_TIMEOUT_MS = 4000
#: How long a Java task may take to run: the first one builds Kafka's worker in the JVM (its
#: cluster id, its offsets topic read to the end) on a machine other tests load.
START_S = 120.0


class _StandIn(Connector):
    """What the worker's plugin loader gives for a Java connector: its task class stands for
    a Java task (the tasks here are started with Kafka's task configs, never generated)."""

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def start(self, config: Mapping[str, str]) -> None:
        return None

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []

    def stop(self, connector_deleted: bool = False) -> None:
        return None


class _SourceStandIn(_StandIn, SourceConnector):
    def task_class(self) -> type[Task]:
        return JavaSourceTask


class _SinkStandIn(_StandIn, SinkConnector):
    def task_class(self) -> type[Task]:
        return JavaSinkTask


class KafkaFileConnectors:
    """The worker's plugin loader: Kafka's FileStream connector classes."""

    def new_connector(self, name: str, version: str | None = None, /) -> Connector:
        if name == FILE_SOURCE:
            return _SourceStandIn()
        if name == FILE_SINK:
            return _SinkStandIn()
        raise KeyError(name)


@dataclass
class JavaEnv:
    worker: Worker
    listener: RecordingListener
    bootstrap: str
    tmp: Path
    admin: AdminClient
    offsets_topic: str
    group_id: str

    def status(self, task: TaskId) -> InstanceStatus | None:
        return self.listener.task_state(task)

    def wait_state(self, task: TaskId, state: State, timeout: float = START_S) -> InstanceStatus:
        wait_for(lambda: (s := self.status(task)) is not None and s.state is state,
                 timeout=timeout, what=f"{task} {state.value} (now {self.status(task)})")
        status = self.status(task)
        assert status is not None
        return status


@pytest.fixture(scope="module")
def env(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaEnv]:
    tmp = tmp_path_factory.mktemp("java-tasks")
    run = uuid.uuid4().hex[:8]
    offsets_topic = f"java-tasks-offsets-{run}"
    group_id = f"java-tasks-{run}"
    config = WorkerConfig.from_properties({
        "bootstrap.servers": kafka_bootstrap,
        "worker.id": "java-tasks-test",
        "spark.master": "local[2]",
        "plugin.path": str(ensure_plugins()),  # already there after `make install`
        # both fetched plugins ship ServiceLoader manifests: no reflective scan of Spark's
        # classpath
        "plugin.discovery": "service_load",
        # Kafka Connect's distributed worker config, which the JVM's Kafka worker is built from
        "group.id": group_id,
        "config.storage.topic": f"java-tasks-configs-{run}",
        "offset.storage.topic": offsets_topic,
        "status.storage.topic": f"java-tasks-status-{run}",
        "offset.storage.replication.factor": "1",
        "offset.storage.partitions": "1",
        "offset.flush.interval.ms": "500",
        "task.shutdown.graceful.timeout.ms": str(SHUTDOWN_TIMEOUT_MS),
        "key.converter": STRING_CONVERTER,
        "value.converter": STRING_CONVERTER,
    })
    offsets = FileOffsetStore(tmp / "python-offsets.json")  # Python tasks' only: none here
    offsets.start()
    listener = RecordingListener()
    fresh_spark_jvm()  # the driver's classpath must hold jvm/'s classes
    worker = Worker(config, KafkaFileConnectors(), offsets, listener)
    worker.start()
    try:
        yield JavaEnv(worker, listener, kafka_bootstrap, tmp,
                      AdminClient({"bootstrap.servers": kafka_bootstrap}), offsets_topic, group_id)
    finally:
        worker.stop()


def start_source(env: JavaEnv, name: str, file: Path, topic: str, **extra: str) -> TaskId:
    """Starts task 0 of a Java FileStreamSource of ``file`` into ``topic``."""
    task = TaskId(name, 0)
    connector = {"name": name, "connector.class": FILE_SOURCE, "tasks.max": "1",
                 "file": str(file), "topic": topic, **extra}
    # what FileStreamSourceConnector.taskConfigs generates, and the task.class Kafka adds
    task_config = {"task.class": SOURCE_TASK, "file": str(file), "topic": topic,
                   "batch.size": "2000"}
    assert env.worker.start_task(task, connector, task_config, TargetState.STARTED)
    return task


def start_sink(env: JavaEnv, name: str, topic: str, file: Path) -> TaskId:
    """Starts task 0 of a Java FileStreamSink of ``topic`` into ``file``."""
    task = TaskId(name, 0)
    connector = {"name": name, "connector.class": FILE_SINK, "tasks.max": "1",
                 "topics": topic, "file": str(file)}
    task_config = {"task.class": SINK_TASK, "topics": topic, "file": str(file)}
    env.worker.start_task(task, connector, task_config, TargetState.STARTED)
    return task


def topic_values(env: JavaEnv, topic: str) -> list[str]:
    return [m.value().decode() for m in read_all(env.bootstrap, topic)]


def source_offsets(env: JavaEnv, name: str) -> list[tuple[bytes, bytes | None]]:
    """The offsets topic's records of connector ``name``, as Kafka Connect wrote them."""
    prefix = json.dumps([name], separators=(",", ":"))[:-1].encode()
    return [(m.key(), m.value()) for m in read_all(env.bootstrap, env.offsets_topic)
            if m.key() is not None and m.key().startswith(prefix)]


def write_lines(path: Path, values: list[str]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(f"{value}\n" for value in values))


@pytest.mark.timeout(300)
def test_a_java_file_source_writes_a_files_lines_with_kafkas_converter_and_offsets(
    env: JavaEnv, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    source = env.tmp / "lines.txt"
    values = [f"line-{i}" for i in range(500)]
    write_lines(source, values)
    name = f"java-source-{uuid.uuid4().hex[:6]}"
    task = start_source(env, name, source, unique_topic)
    try:
        status = env.wait_state(task, State.RUNNING)
        # the task lives in a Spark task of its own: a local master's executor is the driver's
        assert status.placement == executor_placement(LOCAL_EXECUTOR_ID, DRIVER_HOST)
        assert env.worker.hosted_tasks() == {task}
        wait_for(lambda: len(topic_values(env, unique_topic)) >= 500, timeout=60,
                 what="the file's lines in the topic")
        # Kafka's StringConverter: each record's value is the line, in order
        assert topic_values(env, unique_topic) == values
        # the source offset in the worker's offsets topic, in Kafka Connect's own bytes
        key = json.dumps([name, {"filename": str(source)}], separators=(",", ":")).encode()
        position = json.dumps({"position": source.stat().st_size}, separators=(",", ":")).encode()
        wait_for(lambda: (key, position) in source_offsets(env, name), timeout=60,
                 what="the source offset at the end of the file")
        # the status carries the Java task's version (connect-file's)
        raw = env.listener.tasks[task][-1]
        assert raw.version == "4.3.1"
    finally:
        env.worker.stop_tasks([task], connector_deleted=True)


@pytest.mark.timeout(300)
def test_a_java_file_sink_writes_a_topic_to_a_file_and_commits_its_group(
    env: JavaEnv, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    values = [f"record-{i}" for i in range(300)]
    produce(env.bootstrap, unique_topic, values)
    out = env.tmp / f"sink-{unique_topic}.txt"
    name = f"java-sink-{uuid.uuid4().hex[:6]}"
    task = start_sink(env, name, unique_topic, out)
    try:
        env.wait_state(task, State.RUNNING)
        wait_for(lambda: lines(out) == values, timeout=60, what="the topic's records in the file")
        # Kafka Connect's sink group: connect-<name>, committed to the end of the topic
        wait_for(lambda: group_offset(env.admin, f"connect-{name}", unique_topic) == 300,
                 timeout=60, what="the sink group's committed offset")
    finally:
        env.worker.stop_tasks([task], connector_deleted=False)


@pytest.mark.timeout(300)
def test_kafkas_transformations_and_json_converter_shape_a_java_sources_records(
    env: JavaEnv, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    source = env.tmp / f"hoisted-{unique_topic}.txt"
    write_lines(source, ["a", "b"])
    task = start_source(env, f"java-smt-{uuid.uuid4().hex[:6]}", source, unique_topic, **{
        "transforms": "hoist",
        "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.hoist.field": "line",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    })
    try:
        env.wait_state(task, State.RUNNING)
        wait_for(lambda: len(topic_values(env, unique_topic)) == 2, timeout=60,
                 what="the transformed lines")
        assert topic_values(env, unique_topic) == ['{"line":"a"}', '{"line":"b"}']
    finally:
        env.worker.stop_tasks([task], connector_deleted=False)


@pytest.mark.timeout(300)
def test_a_java_sink_sends_what_it_cannot_convert_to_kafkas_dead_letter_queue(
    env: JavaEnv, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    dlq = create_topic(env.admin, f"{unique_topic}-dlq")
    produce(env.bootstrap, unique_topic, ['{"a":1}', "not json", '{"b":2}'])
    out = env.tmp / f"tolerant-{unique_topic}.txt"
    name = f"java-dlq-{uuid.uuid4().hex[:6]}"
    task = TaskId(name, 0)
    connector = {"name": name, "connector.class": FILE_SINK, "tasks.max": "1",
                 "topics": unique_topic, "file": str(out),
                 "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                 "value.converter.schemas.enable": "false",
                 "errors.tolerance": "all",
                 "errors.deadletterqueue.topic.name": dlq,
                 "errors.deadletterqueue.topic.replication.factor": "1",
                 "errors.deadletterqueue.context.headers.enable": "true"}
    task_config = {"task.class": SINK_TASK, "topics": unique_topic, "file": str(out)}
    env.worker.start_task(task, connector, task_config, TargetState.STARTED)
    try:
        env.wait_state(task, State.RUNNING)
        wait_for(lambda: lines(out) == ["{a=1}", "{b=2}"], timeout=60,
                 what="the records the converter read, in the file")
        wait_for(lambda: len(read_all(env.bootstrap, dlq)) == 1, timeout=60,
                 what="the record it could not read, in the dead-letter queue")
        [dead] = read_all(env.bootstrap, dlq)
        assert dead.value() == b"not json"
        headers = dict(dead.headers() or [])
        assert headers["__connect.errors.exception.class.name"] == (
            b"org.apache.kafka.connect.errors.DataException")
        assert headers["__connect.errors.topic"] == unique_topic.encode()
    finally:
        env.worker.stop_tasks([task], connector_deleted=False)


@pytest.mark.timeout(300)
def test_pause_holds_a_java_task_and_resume_moves_on(env: JavaEnv, unique_topic: str) -> None:
    create_topic(env.admin, unique_topic)
    source = env.tmp / f"pause-{unique_topic}.txt"
    write_lines(source, ["before-0", "before-1"])
    task = start_source(env, f"java-pause-{uuid.uuid4().hex[:6]}", source, unique_topic)
    try:
        env.wait_state(task, State.RUNNING)
        wait_for(lambda: len(topic_values(env, unique_topic)) == 2, timeout=60,
                 what="the first lines")
        env.worker.set_task_target(task, TargetState.PAUSED)
        env.wait_state(task, State.PAUSED, timeout=10)
        time.sleep(1.0)  # Kafka's worker pauses the task asynchronously
        write_lines(source, ["paused-0", "paused-1"])
        time.sleep(4.0)  # FileStreamSource looks at its file every second or so
        assert len(topic_values(env, unique_topic)) == 2, "a paused task moved records"
        env.worker.set_task_target(task, TargetState.STARTED)
        env.wait_state(task, State.RUNNING, timeout=10)
        wait_for(lambda: len(topic_values(env, unique_topic)) == 4, timeout=60,
                 what="the lines written while paused")
        assert topic_values(env, unique_topic) == ["before-0", "before-1", "paused-0", "paused-1"]
    finally:
        env.worker.stop_tasks([task], connector_deleted=False)


@pytest.mark.timeout(300)
def test_stop_ends_a_java_task_within_the_shutdown_timeout_and_parks_its_host(
    env: JavaEnv, unique_topic: str
) -> None:
    env.worker._warm_hosts.end_parked()  # so that the task launches its host itself
    create_topic(env.admin, unique_topic)
    source = env.tmp / f"stop-{unique_topic}.txt"
    write_lines(source, ["one"])
    task = start_source(env, f"java-stop-{uuid.uuid4().hex[:6]}", source, unique_topic)
    env.wait_state(task, State.RUNNING)
    began = time.monotonic()
    env.worker.stop_tasks([task], connector_deleted=False)
    took = time.monotonic() - began
    assert took < SHUTDOWN_TIMEOUT_MS / 1000 + 5, f"the stop took {took:.1f} s"
    assert task not in env.worker.task_ids()
    assert task not in env.worker.hosted_tasks()
    # stopped cleanly: the host's Spark job (in the task's hosting job group) runs on,
    # parked for the next Java task, until it is let go
    tracker = env.worker._spark.context.statusTracker()  # test-only peek at Spark's jobs
    jobs = tracker.getJobIdsForGroup(host_job_tag(task.connector, task.task))
    assert jobs, "the task was hosted by a Spark job"
    assert env.worker.parked_hosts() == 1
    assert any(_job_status(env, job) == "RUNNING" for job in jobs)
    env.worker._warm_hosts.end_parked()  # what the worker's stop and the idle time do
    wait_for(lambda: all(_job_status(env, job) != "RUNNING" for job in jobs), timeout=20,
             what="the host's Spark job to end")


@pytest.mark.timeout(300)
def test_the_next_java_task_adopts_the_parked_host_of_the_last_one(
    env: JavaEnv, unique_topic: str
) -> None:
    env.worker._warm_hosts.end_parked()
    create_topic(env.admin, unique_topic)
    tasks = []
    tags = []
    try:
        for i in range(2):  # one after the other, of two connectors
            source = env.tmp / f"adopted-{i}-{unique_topic}.txt"
            write_lines(source, [f"task-{i}"])
            task = start_source(env, f"java-adopt-{i}-{uuid.uuid4().hex[:6]}", source,
                                unique_topic)
            tasks.append(task)
            env.wait_state(task, State.RUNNING)

            def written(line: str = f"task-{i}") -> bool:
                return line in topic_values(env, unique_topic)

            wait_for(written, timeout=60, what=f"task {i}'s line")
            tags.append(env.worker.host_job_tags()[task])
            env.worker.stop_tasks([task], connector_deleted=True)
            assert env.worker.parked_hosts() == 1
        assert tags[0] == tags[1], "the second task was hosted by the first one's Spark job"
    finally:
        env.worker.stop_tasks(tasks, connector_deleted=False)
        env.worker._warm_hosts.end_parked()


def _job_status(env: JavaEnv, job: int) -> str:
    info = env.worker._spark.context.statusTracker().getJobInfo(job)
    return "" if info is None else str(info.status)


@pytest.mark.timeout(300)
def test_a_failing_java_task_shows_failed_with_its_java_root_cause_first(
    env: JavaEnv, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    directory = env.tmp / f"a-directory-{unique_topic}"
    directory.mkdir()
    name = f"java-failing-{uuid.uuid4().hex[:6]}"
    task = start_sink(env, name, unique_topic, directory)  # FileStreamSink cannot open it
    try:
        status = env.wait_state(task, State.FAILED)
        headline, _, rest = status.trace.partition("\n")
        assert headline == (
            f"Couldn't find or create file '{directory}' for FileStreamSinkTask: "
            f"java.nio.file.FileSystemException: {directory}: Is a directory"
        )
        # Kafka's exception and the Java stack trace follow
        assert "org.apache.kafka.connect.errors.ConnectException" in rest
        assert "at org.apache.kafka.connect.file.FileStreamSinkTask.start" in rest
    finally:
        env.worker.stop_tasks([task], connector_deleted=False)
    assert task not in env.worker.task_ids()


@pytest.mark.timeout(420)
def test_a_cancelled_host_job_is_hosted_again_and_resumes_from_committed_offsets(
    env: JavaEnv, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    source = env.tmp / f"rehost-{unique_topic}.txt"
    first = [f"first-{i}" for i in range(200)]
    write_lines(source, first)
    name = f"java-rehost-{uuid.uuid4().hex[:6]}"
    task = start_source(env, name, source, unique_topic)
    try:
        env.wait_state(task, State.RUNNING)
        wait_for(lambda: len(topic_values(env, unique_topic)) >= 200, timeout=60,
                 what="the first lines")
        position = json.dumps({"position": source.stat().st_size}, separators=(",", ":"))
        wait_for(lambda: any(v == position.encode() for _, v in source_offsets(env, name)),
                 timeout=60, what="the first lines' offset committed")
        tag = env.worker.host_job_tags()[task]
        env.worker._spark.cancel_tag(tag)  # as Spark cancels a job whose executor went away
        wait_for(lambda: env.worker.host_job_tags().get(task, tag) != tag, timeout=120,
                 what="the task hosted by a new Spark job")
        status = env.wait_state(task, State.RUNNING, timeout=60)
        assert status.placement == executor_placement(LOCAL_EXECUTOR_ID, DRIVER_HOST)
        # the task's state machine saw the host go: RETRYING, where the task ran nowhere
        lost = [s for s in env.listener.tasks[task] if s.state is State.RETRYING]
        assert lost and lost[0].placement is None, env.listener.tasks[task]
        assert "HostLostError" in lost[0].trace.partition("\n")[0]
        second = [f"second-{i}" for i in range(200)]
        write_lines(source, second)
        wait_for(lambda: set(first + second) <= set(topic_values(env, unique_topic)),
                 timeout=60, what="the lines written after the host was replaced")
        # nothing lost, and the new instance resumed from the committed offset: the lines
        # before it are not written again
        values = topic_values(env, unique_topic)
        assert values[:200] == first
        assert sorted(set(values[200:])) == sorted(second)
        assert len(values) == 400
    finally:
        env.worker.stop_tasks([task], connector_deleted=False)


@pytest.mark.timeout(300)
def test_java_tasks_beyond_the_spark_slots_run_in_the_drivers_jvm(
    env: JavaEnv, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    tasks = []
    try:
        for i in range(3):  # local[2]: two slots
            source = env.tmp / f"placed-{i}-{unique_topic}.txt"
            write_lines(source, [f"task-{i}"])
            tasks.append(start_source(env, f"java-placed-{i}-{uuid.uuid4().hex[:6]}", source,
                                      unique_topic))
        placements = [env.wait_state(task, State.RUNNING).placement for task in tasks]
        assert placements[:2] == [executor_placement(LOCAL_EXECUTOR_ID, DRIVER_HOST)] * 2
        assert placements[2] == driver_placement()
        assert placements[2] is not None and placements[2].kind is PlacementKind.DRIVER
        wait_for(lambda: sorted(topic_values(env, unique_topic)) == ["task-0", "task-1", "task-2"],
                 timeout=60, what="each task's line")
    finally:
        env.worker.stop_tasks(tasks, connector_deleted=False)
