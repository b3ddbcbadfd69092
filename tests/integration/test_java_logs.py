"""A Java task's log lines in the worker's log, against a real broker and real Spark
(local[2]): Kafka Connect's runtime and Kafka's FileStream plugin (the connect-file jar on
``plugin.path``) log through slf4j into the Spark JVM's log4j, and the JVM's bridge hands the
lines to the worker, which writes them as ``java_log`` events naming the connector and task,
with the values resolved from config references masked; a level set through the worker's
levels (what SetLogLevel calls) on ``org.apache.kafka.connect.file`` changes which of the
plugin's lines arrive, and GetLogger reads the Java logger's level.

A task's threads outside Kafka's logging context: its producer's network thread's lines name
the task (by the client id Kafka's worker gave the producer), and Debezium PostgreSQL's (its
jar on ``plugin.path``, against the session's PostgreSQL) change-event coordinator's lines name
the connector and task (Debezium 3.x copies Kafka's context onto its threads itself). The
Java loggers of a task's host JVM reach the worker's list of loggers over the host's
connection, as an executor's JVM (not the driver's) has them listed.

The setup is ``test_java_tasks``': one in-process worker serves the module, its plugin loader
giving Kafka's FileStream connector classes tasks that stand for Java tasks, started with the
task configs Kafka's connectors generate. The worker's log is configured as in production
(JSON lines), and what its handler writes is read back. The same over gRPC on a distributed
worker process (a Java connector's own line, ListLoggers, GetLogger and SetLogLevel) is
``test_java_tasks_grpc``'s, which has such a worker already.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.config_providers.providers import FileConfigProvider
from connect_grpc.config_providers.transformer import ConfigTransformer
from connect_grpc.connectors.api import Connector, SourceConnector, Task
from connect_grpc.java.plugin_jars import ensure_plugins
from connect_grpc.kernel.configdef import ConfigDef
from connect_grpc.kernel.domain import InstanceStatus, State, TargetState, TaskId
from connect_grpc.logs.java import HOST_LOGGERS, JAVA_LOGGERS
from connect_grpc.logs.levels import LoggerLevels
from connect_grpc.logs.output import configure_logging
from connect_grpc.runtime.java_task_classes import JavaSourceTask
from connect_grpc.runtime.worker import Worker
from connect_grpc.storage.file_offsets import FileOffsetStore
from connect_grpc.testing.postgres import PostgresServer
from tests.integration.debezium import POSTGRES_CONNECTOR, TABLE, Names, postgres_config
from tests.integration.helpers import fresh_spark_jvm
from tests.integration.test_runtime import RecordingListener, wait_for

pytestmark = [pytest.mark.integration]

configure_logging("json")

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SOURCE_TASK = "org.apache.kafka.connect.file.FileStreamSourceTask"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
FILE_LOGGERS = "org.apache.kafka.connect.file"
POSTGRES_TASK = "io.debezium.connector.postgresql.PostgresConnectorTask"
#: The thread Debezium runs its snapshot and streaming on, which it starts itself.
COORDINATOR_THREAD = "change-event-source-coordinator"
#: How long a Java task may take to run (the first one builds Kafka's worker in the JVM).
START_S = 120.0
#: How long a line may take to reach the worker's log.
LINE_S = 30.0
#: How long a task with a missing file is let poll (FileStreamSourceTask waits 1 s a poll).
POLLS_S = 3.0


class _SourceStandIn(SourceConnector):
    """What the worker's plugin loader gives for Kafka's FileStreamSourceConnector: its task
    class stands for a Java task (tasks are started with Kafka's task configs)."""

    def config_def(self) -> ConfigDef:
        return ConfigDef()

    def start(self, config: Mapping[str, str]) -> None:
        return None

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []

    def stop(self, connector_deleted: bool = False) -> None:
        return None

    def task_class(self) -> type[Task]:
        return JavaSourceTask


class KafkaFileSource:
    def new_connector(self, name: str, version: str | None = None, /) -> Connector:
        if name in (FILE_SOURCE, POSTGRES_CONNECTOR):
            return _SourceStandIn()
        raise KeyError(name)


class WrittenLog(logging.Handler):
    """The worker's log as its handler writes it (JSON lines, masked), read back."""

    def __init__(self, formatter: logging.Formatter) -> None:
        super().__init__()
        self.setFormatter(formatter)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in list(self.lines)]

    def java(self, connector: str) -> list[dict[str, Any]]:
        return [e for e in self.events()
                if e.get("event") == "java_log" and e.get("connector") == connector]


@dataclass
class LogEnv:
    worker: Worker
    listener: RecordingListener
    log: WrittenLog
    tmp: Path
    secrets: Path

    def status(self, task: TaskId) -> InstanceStatus | None:
        return self.listener.task_state(task)

    def wait_running(self, task: TaskId) -> None:
        wait_for(lambda: (s := self.status(task)) is not None and s.state is State.RUNNING,
                 timeout=START_S, what=f"{task} RUNNING (now {self.status(task)})")

    def wait_line(self, connector: str, what: str, **fields: object) -> dict[str, Any]:
        """The first java_log event of ``connector`` whose fields are ``fields`` and whose
        message contains ``what``."""
        def found() -> dict[str, Any] | None:
            for event in self.log.java(connector):
                if what in event.get("message", "") and all(
                    event.get(key) == value for key, value in fields.items()
                ):
                    return event
            return None

        wait_for(lambda: found() is not None, timeout=LINE_S,
                 what=f"a java_log of {connector} with {what!r} and {fields}")
        event = found()
        assert event is not None
        return event


@pytest.fixture(scope="module")
def env(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LogEnv]:
    tmp = tmp_path_factory.mktemp("java-logs")
    run = uuid.uuid4().hex[:8]
    config = WorkerConfig.from_properties({
        "bootstrap.servers": kafka_bootstrap,
        "worker.id": "java-logs-test",
        "spark.master": "local[2]",
        "plugin.path": str(ensure_plugins()),
        "plugin.discovery": "service_load",
        "group.id": f"java-logs-{run}",
        "config.storage.topic": f"java-logs-configs-{run}",
        "offset.storage.topic": f"java-logs-offsets-{run}",
        "status.storage.topic": f"java-logs-status-{run}",
        "offset.storage.replication.factor": "1",
        "offset.storage.partitions": "1",
        "offset.flush.interval.ms": "500",
        "task.shutdown.graceful.timeout.ms": "4000",
        "key.converter": STRING_CONVERTER,
        "value.converter": STRING_CONVERTER,
    })
    secrets = tmp / "secrets"
    secrets.mkdir()
    # the worker's config provider: a task config's ${file:...} references resolve from here
    transformer = ConfigTransformer({"file": FileConfigProvider("file", (secrets.resolve(),))})
    # the formatter configure_logging gave the worker's handler
    [formatter] = [h.formatter for h in logging.getLogger().handlers
                   if isinstance(h.formatter, structlog.stdlib.ProcessorFormatter)]
    written = WrittenLog(formatter)
    logging.getLogger().addHandler(written)
    offsets = FileOffsetStore(tmp / "python-offsets.json")
    offsets.start()
    listener = RecordingListener()
    fresh_spark_jvm()  # the driver's classpath must hold jvm/'s classes
    worker = Worker(config, KafkaFileSource(), offsets, listener, transformer=transformer)
    worker.start()
    try:
        yield LogEnv(worker, listener, written, tmp, secrets)
    finally:
        worker.stop()
        logging.getLogger().removeHandler(written)


def start_source(env: LogEnv, name: str, file: str) -> TaskId:
    """Starts task 0 of a Java FileStreamSource of ``file`` (a path, or a reference to one)."""
    task = TaskId(name, 0)
    topic = f"{name}-topic"
    connector = {"name": name, "connector.class": FILE_SOURCE, "tasks.max": "1",
                 "file": file, "topic": topic}
    # what FileStreamSourceConnector.taskConfigs generates, and the task.class Kafka adds
    task_config = {"task.class": SOURCE_TASK, "file": file, "topic": topic}
    assert env.worker.start_task(task, connector, task_config, TargetState.STARTED)
    return task


def stop(env: LogEnv, task: TaskId) -> None:
    """Stops the task, and waits for Kafka's worker's line saying so: every line the task logged
    before it has reached the worker's log (one connection, in order)."""
    env.worker.stop_tasks([task], connector_deleted=False)
    env.wait_line(task.connector, f"Stopping task {task.connector}-{task.task}",
                  logger="org.apache.kafka.connect.runtime.Worker", task=task.task)


@pytest.mark.timeout(300)
def test_a_java_tasks_lines_are_java_log_events_naming_it_with_secrets_masked(
    env: LogEnv,
) -> None:
    name = f"java-logs-{uuid.uuid4().hex[:6]}"
    # the task's file is a resolved secret: a missing one, which the plugin names in a warning
    secret_path = str(env.tmp / f"missing-{uuid.uuid4().hex}.txt")
    (env.secrets / "paths.properties").write_text(f"input={secret_path}\n", encoding="utf-8")
    task = start_source(env, name, f"${{file:{env.secrets / 'paths.properties'}:input}}")
    try:
        env.wait_running(task)
        # Kafka Connect's runtime, on the task's thread
        started = env.wait_line(name, "Source task finished initialization and start", task=0)
        assert started["logger"] == "org.apache.kafka.connect.runtime.AbstractWorkerSourceTask"
        assert started["level"] == "info"
        assert started["executor"] == "driver"  # a local master's executor is the driver's JVM
        # the plugin's own warning, its path (a resolved secret) masked
        missing = env.wait_line(name, "Couldn't find file", task=0)
        assert missing["logger"] == "org.apache.kafka.connect.file.FileStreamSourceTask"
        assert missing["level"] == "warning"
        assert missing["message"] == (
            "Couldn't find file [hidden] for FileStreamSourceTask, sleeping to wait for it to "
            "be created"
        )
    finally:
        stop(env, task)
    assert not [line for line in env.log.lines if secret_path in line], (
        "the resolved path is in no line of the worker's log"
    )


@pytest.mark.timeout(300)
def test_a_level_set_on_the_file_plugins_loggers_changes_which_of_its_lines_arrive(
    env: LogEnv,
) -> None:
    levels = LoggerLevels()  # what the herder's SetLogLevel and GetLogger call
    source = env.tmp / "present.txt"
    source.write_text("a\nb\n", encoding="utf-8")
    try:
        # INFO (the default): the plugin's DEBUG line does not arrive
        quiet = start_source(env, f"java-info-{uuid.uuid4().hex[:6]}", str(source))
        env.wait_running(quiet)
        stop(env, quiet)
        assert not [e for e in env.log.java(quiet.connector) if e["logger"] == SOURCE_TASK]
        task_logger = levels.level(SOURCE_TASK)
        assert task_logger is not None and task_logger.level == "INFO", "the JVM's logger is listed"
        assert SOURCE_TASK in levels.all_levels()

        # DEBUG: "Opened <file> for reading" arrives
        changed = levels.set_level(FILE_LOGGERS, "DEBUG")
        assert SOURCE_TASK in changed
        task_logger = levels.level(SOURCE_TASK)
        assert task_logger is not None and task_logger.level == "DEBUG"
        loud = start_source(env, f"java-debug-{uuid.uuid4().hex[:6]}", str(source))
        env.wait_running(loud)
        opened = env.wait_line(loud.connector, f"Opened {source} for reading", task=0)
        assert (opened["logger"], opened["level"]) == (SOURCE_TASK, "debug")
        stop(env, loud)

        # ERROR: the plugin's warning about a missing file does not arrive (the first test
        # shows it does at INFO); Kafka's runtime lines still do
        levels.set_level(FILE_LOGGERS, "ERROR")
        silent = start_source(env, f"java-error-{uuid.uuid4().hex[:6]}",
                              str(env.tmp / f"absent-{uuid.uuid4().hex}.txt"))
        env.wait_running(silent)
        env.wait_line(silent.connector, "Source task finished initialization and start", task=0)
        time.sleep(POLLS_S)  # FileStreamSourceTask warns on each poll of a missing file
        stop(env, silent)
        plugin_lines = [e for e in env.log.java(silent.connector) if e["logger"] == SOURCE_TASK]
        assert plugin_lines == []
    finally:
        levels.set_level(FILE_LOGGERS, "INFO")


@pytest.mark.timeout(300)
def test_a_java_tasks_producer_network_thread_lines_name_it_by_its_client_id(env: LogEnv) -> None:
    """The task's producer logs on its own network thread, outside Kafka's logging context
    (Kafka Connect prints those lines with an empty context); the JVM hosting the task names it
    by the client id Kafka's worker gave the producer, which the thread's name carries."""
    source = env.tmp / "network.txt"
    source.write_text("a\n", encoding="utf-8")
    name = f"java-net-{uuid.uuid4().hex[:6]}"
    task = start_source(env, name, str(source))
    thread = f"kafka-producer-network-thread | connector-producer-{name}-0"
    try:
        env.wait_running(task)
        line = env.wait_line(name, "", thread=thread)
    finally:
        stop(env, task)
    assert line["task"] == 0
    assert line["inferred_from"] == "kafka_client_id"
    assert line["logger"].startswith("org.apache.kafka.clients")


@pytest.mark.timeout(300)
def test_a_debezium_tasks_own_threads_lines_name_its_connector_and_task(
    env: LogEnv, postgres: PostgresServer, postgres_database: str,
) -> None:
    postgres.execute(f"CREATE TABLE {TABLE} (id INT PRIMARY KEY, name TEXT, score INT);\n"
                     f"INSERT INTO {TABLE} VALUES (1, 'a', 1);", postgres_database)
    names = Names.fresh("javalogs")
    name = f"java-dbz-{uuid.uuid4().hex[:6]}"
    task = TaskId(name, 0)
    connector = {"name": name, **postgres_config(postgres, postgres_database, names)}
    # what PostgresConnector.taskConfigs generates (its config), and the task.class Kafka adds
    assert env.worker.start_task(task, connector, {**connector, "task.class": POSTGRES_TASK},
                                 TargetState.STARTED)
    try:
        env.wait_running(task)

        def coordinator() -> list[dict[str, Any]]:
            return [e for e in env.log.events() if e.get("event") == "java_log"
                    and names.prefix in e.get("thread", "")
                    and COORDINATOR_THREAD in e.get("thread", "")]

        # Debezium's snapshot ends, then streams, on its coordinator thread
        wait_for(lambda: any("Starting streaming" in e.get("message", "")
                             for e in coordinator()),
                 timeout=START_S, what="Debezium's streaming start on its coordinator thread")
    finally:
        stop(env, task)  # the database's fixture drops the slot Debezium made
    lines = coordinator()
    assert lines, "Debezium logged on its own thread"
    unnamed = [(e["logger"], e["message"]) for e in lines
               if (e.get("connector"), e.get("task")) != (name, 0)]
    assert unnamed == [], "every line of Debezium's own thread names its connector and task"
    # by Kafka's context (Debezium's copy of it), else by Debezium's own MDC
    assert {e.get("inferred_from") for e in lines} <= {None, "debezium_context"}


@pytest.mark.timeout(300)
def test_a_task_hosts_java_loggers_are_listed_and_set_through_its_connection(
    env: LogEnv,
) -> None:
    """Which Java loggers a task's host JVM has reaches the worker over the host's connection:
    with the driver JVM's own loggers out of the list (an executor's JVM is not the driver's;
    on a local master they are one JVM), the task's plugin's loggers are still listed and set."""
    levels = LoggerLevels()
    source = env.tmp / "listed.txt"
    source.write_text("a\n", encoding="utf-8")
    task = start_source(env, f"java-listed-{uuid.uuid4().hex[:6]}", str(source))
    driver_jvm = JAVA_LOGGERS.current()
    assert driver_jvm is not None
    try:
        env.wait_running(task)
        env.wait_line(task.connector, "Source task finished initialization and start", task=0)
        wait_for(lambda: SOURCE_TASK in HOST_LOGGERS.names(), timeout=LINE_S,
                 what="the host's report of its JVM's loggers")
        JAVA_LOGGERS.unregister(driver_jvm)
        try:
            listed = levels.all_levels()
            assert listed[SOURCE_TASK].level == "INFO"
            assert "org.apache.kafka.connect.runtime.WorkerSourceTask" in listed
            changed = levels.set_level(FILE_LOGGERS, "WARN")
            assert SOURCE_TASK in changed
            read = levels.level(SOURCE_TASK)
            assert read is not None and read.level == "WARN"
        finally:
            JAVA_LOGGERS.register(driver_jvm)
            levels.set_level(FILE_LOGGERS, "INFO")
    finally:
        stop(env, task)
