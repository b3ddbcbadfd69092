"""MirrorMaker 2's own connectors (Kafka's ``connect-mirror`` on ``plugin.path``) on a real
distributed worker, over gRPC, between two real local brokers: the session's broker is the
target cluster (the worker's own), a second one this module starts is the source.

MirrorSourceConnector copies a topic into the target's ``<alias>.<topic>`` with its keys,
values and headers; MirrorCheckpointConnector translates a source consumer group's offsets
into a checkpoint in the target's ``<alias>.checkpoints.internal``; and, the worker running
with ``exactly.once.source.support=enabled``, every record appears exactly once under
read_committed across a restart of the connector and its task. MirrorHeartbeatConnector
emits heartbeats naming both clusters into the target's ``heartbeats``."""

from __future__ import annotations

import contextlib
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from connect_grpc.client import ConnectClient
from connect_grpc.kafka.broker import LocalKafka
from connect_grpc.kernel.domain import State
from connect_grpc.kernel.errors import NotFoundError
from connect_grpc.testing.cluster import WorkerProcess, wait_until
from tests.integration.helpers import create_topic, end_offset

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

MIRROR_SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
MIRROR_CHECKPOINT = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
MIRROR_HEARTBEAT = "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"
#: The target cluster's topic of heartbeats (MM2's default replication policy names it).
HEARTBEATS_TOPIC = "heartbeats"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
SOURCE_ALIAS, TARGET_ALIAS = "upstream", "downstream"
#: The first call that needs the Java plugins waits for the scan of plugin.path.
CALL_TIMEOUT_S = 240
STATE_TIMEOUT_S = 120
RECORDS = 50


@pytest.fixture(scope="module")
def source_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second broker, the source cluster: its own data dir and free ports."""
    broker = LocalKafka(tmp_path_factory.mktemp("mirror-source-kafka"), die_with_parent=True)
    broker.start(timeout=90)
    try:
        yield broker.bootstrap_servers
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def worker(java_eos_worker: WorkerProcess) -> Iterator[ConnectClient]:
    """A distributed worker on the target cluster, with exactly-once source support (the one
    ``test_java_exactly_once_validation`` uses too: :mod:`java_eos_worker`)."""
    with ConnectClient(java_eos_worker.address, timeout=CALL_TIMEOUT_S,
                       retry_unavailable=True) as client:
        yield client


def _mirror_config(source: str, target: str, **extra: str) -> dict[str, str]:
    return {
        "tasks.max": "1",
        "source.cluster.alias": SOURCE_ALIAS,
        "target.cluster.alias": TARGET_ALIAS,
        "source.cluster.bootstrap.servers": source,
        "target.cluster.bootstrap.servers": target,
        "key.converter": BYTES,
        "value.converter": BYTES,
        "header.converter": BYTES,
        **extra,
    }


def _running(client: ConnectClient, name: str) -> None:
    def reached() -> bool:
        status = client.get_connector_status(name)
        return status.connector.state is State.RUNNING and bool(status.tasks) and all(
            t.status.state is State.RUNNING for t in status.tasks)

    try:
        wait_until(reached, timeout=STATE_TIMEOUT_S, interval=0.5)
    except TimeoutError:
        raise AssertionError(f"{name} not RUNNING: {client.get_connector_status(name)}") from None


#: A record as produced and as read back: key, value, headers.
Record = tuple[bytes, bytes, list[Any]]


def _produce(bootstrap: str, topic: str, first: int, count: int) -> list[Record]:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    records: list[Record] = []
    for i in range(first, first + count):
        key, value = f"key-{i}".encode(), f"value-{i}".encode()
        headers: list[tuple[str, str | bytes | None]] = [("n", str(i).encode()),
                                                         ("origin", b"mirror-test")]
        producer.produce(topic, key=key, value=value, headers=headers)
        records.append((key, value, headers))
    assert producer.flush(30) == 0
    return records


def _read(bootstrap: str, topic: str) -> list[Any]:
    """Every record of partition 0 a read_committed consumer sees up to the partition's
    last stable offset now: (offset, key, value, headers)."""
    stable = end_offset(bootstrap, topic)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    records: list[Any] = []
    try:
        while True:
            message = consumer.poll(5)
            assert message is not None, f"{topic} not read to its end {stable}"
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                if (message.offset() or 0) >= stable:
                    return records
                continue
            records.append((message.offset(), message.key(), message.value(),
                            message.headers() or []))
    finally:
        consumer.close()


def _copied(bootstrap: str, topic: str, count: int) -> list[Any]:
    def enough() -> list[Any]:
        records = _read(bootstrap, topic)
        return records if len(records) >= count else []

    try:
        return wait_until(enough, timeout=STATE_TIMEOUT_S, interval=1)
    except TimeoutError:
        raise AssertionError(f"{topic} never held {count} records") from None


def _checkpoints(bootstrap: str, topic: str) -> list[tuple[str, str, int, int, int]]:
    """Kafka's Checkpoint records: (group, topic, partition, upstream, downstream offset).
    Both are structs in Kafka's protocol types, the value's after a version (int16)."""
    decoded = []
    for _offset, key, value, _headers in _read(bootstrap, topic):
        group, at = _string(key, 0)
        remote_topic, at = _string(key, at)
        (partition,) = struct.unpack_from(">i", key, at)
        upstream, downstream = struct.unpack_from(">qq", value, 2)
        decoded.append((group, remote_topic, partition, upstream, downstream))
    return decoded


def _string(data: bytes, at: int) -> tuple[str, int]:
    (length,) = struct.unpack_from(">h", data, at)
    return data[at + 2:at + 2 + length].decode(), at + 2 + length


def test_mirror_maker_2_replicates_a_topic_exactly_once_and_checkpoints_a_group(
    source_cluster: str, worker: ConnectClient, kafka_bootstrap: str
) -> None:
    # (the source cluster first: it is stopped after the worker)
    run = uuid.uuid4().hex[:8]
    topic = f"mirrored-{run}"
    remote = f"{SOURCE_ALIAS}.{topic}"
    create_topic(AdminClient({"bootstrap.servers": source_cluster}), topic)
    produced = _produce(source_cluster, topic, 0, RECORDS)
    source_name, checkpoint_name = f"mm2-source-{run}", f"mm2-checkpoint-{run}"
    worker.create_connector(source_name, {
        "connector.class": MIRROR_SOURCE,
        **_mirror_config(
            source_cluster, kafka_bootstrap,
            topics=topic,
            **{"replication.factor": "1",
               "offset-syncs.topic.replication.factor": "1",
               "sync.topic.acls.enabled": "false",
               "refresh.topics.interval.seconds": "1",
               "offset.lag.max": "0",
               # so that it declares exactly-once support (KIP-618), as MM2's docs ask
               "consumer.isolation.level": "read_committed"}),
    })
    try:
        _running(worker, source_name)
        copied = _copied(kafka_bootstrap, remote, RECORDS)
        assert [(k, v, h) for _o, k, v, h in copied] == produced

        # A consumer group on the source, committed at the end of the topic, is checkpointed
        group = f"mirrored-group-{run}"
        consumer = Consumer({"bootstrap.servers": source_cluster, "group.id": group,
                             "enable.auto.commit": False})

        def committed() -> bool:
            consumer.commit(offsets=[TopicPartition(topic, 0, RECORDS)], asynchronous=False)
            return True

        try:
            # the source broker's first group: NOT_COORDINATOR while __consumer_offsets is made
            wait_until(committed, timeout=60, interval=0.5)
        finally:
            consumer.close()
        worker.create_connector(checkpoint_name, {
            "connector.class": MIRROR_CHECKPOINT,
            **_mirror_config(
                source_cluster, kafka_bootstrap,
                topics=topic, groups=group,
                **{"checkpoints.topic.replication.factor": "1",
                   "emit.checkpoints.interval.seconds": "1",
                   "refresh.groups.interval.seconds": "1",
                   "sync.group.offsets.enabled": "false"}),
        })
        _running(worker, checkpoint_name)
        checkpoints_topic = f"{SOURCE_ALIAS}.checkpoints.internal"
        checkpoint = wait_until(
            lambda: [c for c in _checkpoints(kafka_bootstrap, checkpoints_topic)
                     if c[0] == group],
            timeout=STATE_TIMEOUT_S, interval=1)[-1]
        assert checkpoint[:4] == (group, remote, 0, RECORDS)
        # translated into the target's offsets: at most just past the copy of the last record
        # the group consumed (MM2 never lets a translated group skip a record)
        assert 0 < checkpoint[4] <= copied[RECORDS - 1][0] + 1

        # Exactly once across a restart of the connector and its task: records produced
        # just before the restart and after it appear once each under read_committed.
        produced += _produce(source_cluster, topic, RECORDS, RECORDS)
        restarting = worker.restart_connector(source_name, include_tasks=True)
        assert restarting is not None
        assert [t.status.state for t in restarting.tasks] == [State.RESTARTING]
        produced += _produce(source_cluster, topic, 2 * RECORDS, RECORDS)
        _running(worker, source_name)
        copied = _copied(kafka_bootstrap, remote, len(produced))
        assert [(k, v, h) for _o, k, v, h in copied] == produced
        # written in transactions: their commit markers take offsets of the partition
        assert copied[-1][0] + 1 > len(copied)
    finally:
        for name in (source_name, checkpoint_name):
            # the checkpoint connector may never have been made
            with contextlib.suppress(NotFoundError):
                worker.delete_connector(name)



def _heartbeats(bootstrap: str) -> list[tuple[str, str, int]]:
    """Kafka's Heartbeat records: (source alias, target alias, timestamp in ms). The key is a
    struct of the two aliases, the value a version (int16) then the timestamp (int64)."""
    decoded = []
    for _offset, key, value, _headers in _read(bootstrap, HEARTBEATS_TOPIC):
        source, at = _string(key, 0)
        target, _ = _string(key, at)
        (timestamp,) = struct.unpack_from(">q", value, 2)
        decoded.append((source, target, timestamp))
    return decoded


def test_mirror_maker_2s_heartbeat_connector_emits_heartbeats_into_the_target(
    source_cluster: str, worker: ConnectClient, kafka_bootstrap: str
) -> None:
    run = uuid.uuid4().hex[:8]
    # aliases of this run's own, so that its heartbeats are told apart in the shared topic
    source_alias, target_alias = f"up-{run}", f"down-{run}"
    name = f"mm2-heartbeat-{run}"
    worker.create_connector(name, {
        "connector.class": MIRROR_HEARTBEAT,
        **_mirror_config(
            source_cluster, kafka_bootstrap,
            **{"source.cluster.alias": source_alias,
               "target.cluster.alias": target_alias,
               "heartbeats.topic.replication.factor": "1",
               "emit.heartbeats.interval.seconds": "1"}),
    })
    try:
        _running(worker, name)

        def beats() -> list[int]:
            found = [ts for source, target, ts in _heartbeats(kafka_bootstrap)
                     if (source, target) == (source_alias, target_alias)]
            return found if len(found) >= 3 else []

        try:
            timestamps = wait_until(beats, timeout=STATE_TIMEOUT_S, interval=1)
        except TimeoutError:
            raise AssertionError(
                f"no heartbeats of {source_alias}->{target_alias} in {HEARTBEATS_TOPIC}: "
                f"{worker.get_connector_status(name)}") from None
        # one a second, each later than the one before
        assert timestamps == sorted(timestamps) and len(set(timestamps)) == len(timestamps)
    finally:
        worker.delete_connector(name)
