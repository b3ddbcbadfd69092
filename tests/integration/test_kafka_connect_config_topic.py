"""A config topic written by Apache Kafka Connect 4.x is read correctly (issue 8, item 2).

The records below are what a Kafka Connect 4.x distributed worker writes to its config
topic (JsonConverter, schemas disabled, as its internal converter) for two FileStream
connectors created over REST, one of them then stopped (KIP-875), one paused by a 3.4-era
worker that knew only ``state``, and a restart request (KIP-745): a session key first, then
each connector's target state and config, its task configs and their commit, and a logger
level. They are produced raw, byte for byte, and the store must read Kafka Connect's view.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

from connect_grpc.kernel.domain import RestartRequest, TargetState
from connect_grpc.storage.config_snapshot import ChangeKind
from connect_grpc.storage.kafka_config import KafkaConfigStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SOURCE = {
    "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
    "tasks.max": "1",
    "file": "/var/data/in.txt",
    "topic": "lines",
    "name": "local-file-source",
}
SINK = {
    "connector.class": "FileStreamSink",
    "tasks.max": "1",
    "file": "/var/data/out.txt",
    "topics": "lines",
    "name": "local-file-sink",
}
SOURCE_TASK = {**SOURCE, "task.class": "org.apache.kafka.connect.file.FileStreamSourceTask"}
SINK_TASK = {**SINK, "task.class": "org.apache.kafka.connect.file.FileStreamSinkTask"}


def _json(config: dict[str, str]) -> bytes:
    body = ",".join(f'"{key}":"{value}"' for key, value in config.items())
    return b'{"properties":{' + body.encode() + b"}}"


#: In the order a Kafka Connect 4.x worker writes them.
KAFKA_CONNECT_RECORDS: list[tuple[bytes, bytes | None]] = [
    (b"session-key", b'{"key":"c2VjcmV0LWtleS1ieXRlcw==","algorithm":"HmacSHA256",'
                     b'"creation-timestamp":1763900000000}'),
    (b"target-state-local-file-source", b'{"state":"STARTED","state.v2":"STARTED"}'),
    (b"connector-local-file-source", _json(SOURCE)),
    (b"task-local-file-source-0", _json(SOURCE_TASK)),
    (b"commit-local-file-source", b'{"tasks":1}'),
    (b"target-state-local-file-sink", b'{"state":"STARTED","state.v2":"STARTED"}'),
    (b"connector-local-file-sink", _json(SINK)),
    (b"task-local-file-sink-0", _json(SINK_TASK)),
    (b"commit-local-file-sink", b'{"tasks":1}'),
    # PUT /connectors/local-file-sink/stop: STOPPED, tasks emptied (old readers see PAUSED)
    (b"target-state-local-file-sink", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
    (b"commit-local-file-sink", b'{"tasks":0}'),
    (b"restart-connector-local-file-source", b'{"include-tasks":true,"only-failed":false}'),
    (b"logger-cluster-org.apache.kafka.connect", b'{"level":"DEBUG"}'),
    # a connector paused by an older worker (no state.v2)
    (b"target-state-legacy", b'{"state":"PAUSED"}'),
    (b"connector-legacy", _json({**SOURCE, "name": "legacy"})),
]


@pytest.fixture
def kafka_connect_topic(kafka_bootstrap: str, kafka_admin: Any, unique_topic: str) -> str:
    """The topic as Kafka Connect creates it (one partition, compacted), with its records."""
    spec = NewTopic(unique_topic, 1, 1, config={"cleanup.policy": "compact"})
    kafka_admin.create_topics([spec])[unique_topic].result(30)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    for key, value in KAFKA_CONNECT_RECORDS:
        producer.produce(unique_topic, key=key, value=value, partition=0)
    assert producer.flush(30) == 0
    return unique_topic


@pytest.fixture
def store(kafka_bootstrap: str, kafka_connect_topic: str) -> Iterator[KafkaConfigStore]:
    changes: list[tuple[ChangeKind, str, RestartRequest | None]] = []
    started = KafkaConfigStore(
        {"bootstrap.servers": kafka_bootstrap}, kafka_connect_topic, timeout=30,
        on_change=lambda kind, name, restart: changes.append((kind, name, restart)),
    )
    started.start()
    yield started
    started.stop()


def test_kafka_connect_config_topic_reads_as_kafka_connect_sees_it(
    store: KafkaConfigStore,
) -> None:
    snapshot = store.snapshot()
    assert sorted(snapshot.connectors) == ["legacy", "local-file-sink", "local-file-source"]
    assert dict(snapshot.connectors["local-file-source"]) == SOURCE
    assert dict(snapshot.connectors["local-file-sink"]) == SINK
    assert [dict(t) for t in snapshot.task_configs("local-file-source")] == [SOURCE_TASK]
    assert snapshot.task_configs("local-file-sink") == ()
    assert snapshot.target_state("local-file-source") is TargetState.STARTED
    assert snapshot.target_state("local-file-sink") is TargetState.STOPPED
    assert snapshot.target_state("legacy") is TargetState.PAUSED
    assert snapshot.inconsistent == frozenset()
    assert snapshot.offset == len(KAFKA_CONNECT_RECORDS)


def test_our_writes_after_kafka_connects_keep_its_records(store: KafkaConfigStore) -> None:
    store.put_target_state("local-file-sink", TargetState.STARTED)
    store.remove_connector("legacy")
    snapshot = store.snapshot()
    assert snapshot.target_state("local-file-sink") is TargetState.STARTED
    assert sorted(snapshot.connectors) == ["local-file-sink", "local-file-source"]
    assert dict(snapshot.connectors["local-file-source"]) == SOURCE
