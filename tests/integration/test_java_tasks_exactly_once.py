"""A Kafka Connect Java source task with exactly-once support (KIP-618) in its JVM host,
against a real broker and real Spark: Kafka's worker writes the task's records and its
offsets in transactions under ``<group.id>-<connector>-<task>``, after asking the driver,
which answers once its fencing wait returned, as for a Python task. The task is started on
the worker directly, as in ``test_java_tasks.py``."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.java.plugin_jars import ensure_plugins
from connect_grpc.kernel.domain import State
from connect_grpc.runtime.transactions import ExactlyOnceSource
from connect_grpc.runtime.worker import Worker
from connect_grpc.storage.file_offsets import FileOffsetStore
from tests.integration.helpers import create_topic, end_offset, fresh_spark_jvm
from tests.integration.test_java_tasks import (
    STRING_CONVERTER,
    JavaEnv,
    KafkaFileConnectors,
    source_offsets,
    start_source,
    topic_values,
    write_lines,
)
from tests.integration.test_runtime import RecordingListener, wait_for

pytestmark = [pytest.mark.integration]


class FencingWaits:
    """The worker's fencing wait (the herder's ``await_fenced_generation``): records the
    connectors it was asked for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.asked: list[str] = []

    def __call__(self, connector: str) -> None:
        with self._lock:
            self.asked.append(connector)


@pytest.fixture(scope="module")
def fencing() -> FencingWaits:
    return FencingWaits()


@pytest.fixture(scope="module")
def env(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, fencing: FencingWaits
) -> Iterator[JavaEnv]:
    tmp = tmp_path_factory.mktemp("java-tasks-eos")
    run = uuid.uuid4().hex[:8]
    offsets_topic = f"java-eos-offsets-{run}"
    group_id = f"java-eos-{run}"
    config = WorkerConfig.from_properties({
        "bootstrap.servers": kafka_bootstrap,
        "worker.id": "java-tasks-eos-test",
        "spark.master": "local[2]",
        "plugin.path": str(ensure_plugins()),
        "plugin.discovery": "service_load",
        "group.id": group_id,
        "config.storage.topic": f"java-eos-configs-{run}",
        "offset.storage.topic": offsets_topic,
        "status.storage.topic": f"java-eos-status-{run}",
        "offset.storage.replication.factor": "1",
        "offset.storage.partitions": "1",
        "exactly.once.source.support": "enabled",
        "key.converter": STRING_CONVERTER,
        "value.converter": STRING_CONVERTER,
    })
    offsets = FileOffsetStore(tmp / "python-offsets.json")
    offsets.start()
    listener = RecordingListener()
    fresh_spark_jvm()  # the driver's classpath must hold jvm/'s classes
    worker = Worker(config, KafkaFileConnectors(), offsets, listener,
                    exactly_once=ExactlyOnceSource(group_id, offsets_topic, fencing))
    worker.start()
    try:
        yield JavaEnv(worker, listener, kafka_bootstrap, tmp,
                      AdminClient({"bootstrap.servers": kafka_bootstrap}), offsets_topic, group_id)
    finally:
        worker.stop()


@pytest.mark.timeout(300)
def test_an_exactly_once_java_source_writes_its_records_and_offsets_in_transactions(
    env: JavaEnv, fencing: FencingWaits, unique_topic: str
) -> None:
    create_topic(env.admin, unique_topic)
    source = env.tmp / "lines.txt"
    values = [f"line-{i}" for i in range(300)]
    write_lines(source, values)
    name = f"java-eos-{uuid.uuid4().hex[:6]}"
    task = start_source(env, name, source, unique_topic)
    try:
        env.wait_state(task, State.RUNNING)
        # Kafka's worker asked before creating the task's transactional producer, and the
        # driver answered after its fencing wait for the connector
        assert fencing.asked == [name]
        wait_for(lambda: topic_values(env, unique_topic) == values, timeout=60,
                 what="the lines, read committed")
        # transactions leave their commit markers in the partition: more offsets than records
        assert end_offset(env.bootstrap, unique_topic) > len(values)
        key = json.dumps([name, {"filename": str(source)}], separators=(",", ":")).encode()
        position = json.dumps({"position": source.stat().st_size}, separators=(",", ":"))
        wait_for(lambda: (key, position.encode()) in source_offsets(env, name), timeout=60,
                 what="the offset committed with the records")
        assert end_offset(env.bootstrap, env.offsets_topic) > len(source_offsets(env, name))
    finally:
        env.worker.stop_tasks([task], connector_deleted=False)
