"""The local broker supports what the Kafka-backed stores and the cluster layer rely on.

Transactions (commit / abort / fencing), compacted topics with tombstones, and consumer-group
offset administration, all against the real broker from the ``kafka_bootstrap`` fixture.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from connect_grpc.kafka import broker, ports, processes
from connect_grpc.testing.cluster import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def create_topic(admin: AdminClient, name: str, partitions: int = 1, **config: str) -> None:
    """Creates the topic and waits until the broker serves it: the controller acknowledges a
    creation before the broker has applied it, and a describe_configs in between was
    answered UNKNOWN_TOPIC_OR_PART (a CI failure)."""
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config)],
        operation_timeout=30,
    )
    futures[name].result(timeout=30)
    wait_until(lambda: _served(admin, name, partitions), timeout=30, interval=0.05)


def _served(admin: AdminClient, name: str, partitions: int) -> bool:
    topic = admin.list_topics(timeout=10).topics.get(name)
    return topic is not None and topic.error is None and len(topic.partitions) == partitions


def consumer(bootstrap: str, group: str | None = None, **extra: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group or f"g-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **extra,
        }
    )


def read_until(
    c: Consumer, done: Callable[[list[Any]], bool], timeout: float = 60.0
) -> list[Any]:
    """Polls messages until ``done(messages)``; fails on a consumer error or timeout."""
    messages: list[Any] = []
    deadline = time.monotonic() + timeout
    while not done(messages):
        assert time.monotonic() < deadline, f"timed out; got {[m.value() for m in messages]}"
        msg = c.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                continue
            raise KafkaException(msg.error())
        messages.append(msg)
    return messages


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.2)


def transactional_producer(bootstrap: str, transactional_id: str) -> Producer:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5}
    )
    producer.init_transactions(30)
    return producer


# ------------------------------------------------------------------------------- transactions


def test_read_committed_sees_committed_not_aborted(kafka_bootstrap: str, unique_topic: str) -> None:
    producer = transactional_producer(kafka_bootstrap, f"tx-{uuid.uuid4().hex}")
    producer.begin_transaction()
    for i in range(3):
        producer.produce(unique_topic, key=b"k", value=f"committed-{i}".encode())
    producer.commit_transaction(30)

    producer.begin_transaction()
    producer.produce(unique_topic, key=b"k", value=b"aborted")
    producer.flush(30)  # the aborted record really reaches the log
    producer.abort_transaction(30)

    producer.begin_transaction()
    producer.produce(unique_topic, key=b"k", value=b"after")
    producer.commit_transaction(30)

    c = consumer(kafka_bootstrap, **{"isolation.level": "read_committed"})
    try:
        c.subscribe([unique_topic])
        messages = read_until(c, lambda ms: any(m.value() == b"after" for m in ms))
    finally:
        c.close()
    assert [m.value() for m in messages] == [
        b"committed-0", b"committed-1", b"committed-2", b"after"
    ]

    uncommitted = consumer(kafka_bootstrap, **{"isolation.level": "read_uncommitted"})
    try:
        uncommitted.subscribe([unique_topic])
        raw = read_until(uncommitted, lambda ms: any(m.value() == b"after" for m in ms))
    finally:
        uncommitted.close()
    assert b"aborted" in [m.value() for m in raw]


def test_init_transactions_fences_the_older_producer(
    kafka_bootstrap: str, unique_topic: str
) -> None:
    transactional_id = f"tx-{uuid.uuid4().hex}"
    zombie = transactional_producer(kafka_bootstrap, transactional_id)
    zombie.begin_transaction()
    zombie.produce(unique_topic, value=b"zombie")
    zombie.flush(30)

    # the new instance bumps the epoch and aborts the zombie's open transaction
    successor = transactional_producer(kafka_bootstrap, transactional_id)

    with pytest.raises(KafkaException) as fenced:
        zombie.produce(unique_topic, value=b"zombie-2")
        zombie.commit_transaction(30)
    error: KafkaError = fenced.value.args[0]
    assert error.fatal(), error
    assert error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED), error
    # once fatal, the fenced producer refuses every further transactional call
    with pytest.raises(KafkaException):
        zombie.begin_transaction()

    successor.begin_transaction()
    successor.produce(unique_topic, value=b"successor")
    successor.commit_transaction(30)

    c = consumer(kafka_bootstrap, **{"isolation.level": "read_committed"})
    try:
        c.subscribe([unique_topic])
        messages = read_until(c, lambda ms: any(m.value() == b"successor" for m in ms))
    finally:
        c.close()
    assert [m.value() for m in messages] == [b"successor"]


# --------------------------------------------------------------------------------- compaction


def test_compacted_topic_accepts_config_and_tombstones(
    kafka_bootstrap: str, kafka_admin: AdminClient, unique_topic: str
) -> None:
    create_topic(
        kafka_admin,
        unique_topic,
        partitions=1,
        **{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
           "segment.ms": "1000"},
    )
    resource = ConfigResource(ConfigResource.Type.TOPIC, unique_topic)
    configs = kafka_admin.describe_configs([resource])[resource].result(timeout=30)
    assert configs["cleanup.policy"].value == "compact"
    assert configs["min.cleanable.dirty.ratio"].value == "0.01"

    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    producer.produce(unique_topic, key=b"connector-a", value=b'{"v": 1}', on_delivery=on_delivery)
    producer.produce(unique_topic, key=b"connector-a", value=None, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    assert errors == []

    c = consumer(kafka_bootstrap)
    try:
        c.subscribe([unique_topic])
        messages = read_until(c, lambda ms: len(ms) >= 2)
    finally:
        c.close()
    assert [(m.key(), m.value()) for m in messages] == [
        (b"connector-a", b'{"v": 1}'),
        (b"connector-a", None),
    ]

    # a compacted topic rejects records without a key
    producer.produce(unique_topic, key=None, value=b"no key", on_delivery=on_delivery)
    producer.flush(30)
    assert len(errors) == 1
    assert errors[0].code() == KafkaError.INVALID_RECORD, errors[0]


# ---------------------------------------------------------------------------- consumer groups


def committed_offsets(admin: AdminClient, group: str) -> dict[int, int]:
    request = ConsumerGroupTopicPartitions(group)
    result = admin.list_consumer_group_offsets([request])[group].result(timeout=30)
    return {tp.partition: tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def test_consumer_group_offsets_admin(
    kafka_bootstrap: str, kafka_admin: AdminClient, unique_topic: str
) -> None:
    create_topic(kafka_admin, unique_topic, partitions=2)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(10):
        producer.produce(unique_topic, value=str(i).encode(), partition=i % 2)
    assert producer.flush(30) == 0

    group = f"group-{uuid.uuid4().hex}"
    rewind = ConsumerGroupTopicPartitions(group, [TopicPartition(unique_topic, 0, 1)])
    member = consumer(kafka_bootstrap, group)
    try:
        member.subscribe([unique_topic])
        read_until(member, lambda ms: len(ms) == 10)
        member.commit(asynchronous=False)
        assert committed_offsets(kafka_admin, group) == {0: 5, 1: 5}

        # a group with an active member cannot be deleted: GROUP_NOT_EMPTY (68)
        with pytest.raises(KafkaException) as not_empty:
            kafka_admin.delete_consumer_groups([group], request_timeout=30)[group].result(30)
        assert not_empty.value.args[0].code() == KafkaError.NON_EMPTY_GROUP

        # nor can its offsets be altered from outside: the future succeeds, but the partition
        # carries UNKNOWN_MEMBER_ID (25) and the offset is unchanged
        active = kafka_admin.alter_consumer_group_offsets([rewind])[group].result(timeout=30)
        [partition] = active.topic_partitions
        assert partition.error is not None
        assert partition.error.code() == KafkaError.UNKNOWN_MEMBER_ID, partition.error
        assert committed_offsets(kafka_admin, group) == {0: 5, 1: 5}
    finally:
        member.close()

    altered = kafka_admin.alter_consumer_group_offsets([rewind])[group].result(timeout=30)
    assert [(tp.partition, tp.offset, tp.error) for tp in altered.topic_partitions] == [
        (0, 1, None)
    ]
    assert committed_offsets(kafka_admin, group) == {0: 1, 1: 5}

    kafka_admin.delete_consumer_groups([group], request_timeout=30)[group].result(timeout=30)

    def gone() -> bool:
        listed = kafka_admin.list_consumer_groups(request_timeout=10).result(timeout=30)
        return group not in {g.group_id for g in listed.valid}

    wait_for(gone)
    assert committed_offsets(kafka_admin, group) == {}


# ------------------------------------------------------------------ the CLI's state-dir broker


def test_background_start_status_stop(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    assert broker.status(state_dir) is None
    port = ports.free_port()
    bootstrap = broker.start_background(state_dir, timeout=90, port=port)
    try:
        assert bootstrap == f"127.0.0.1:{port}"
        assert broker.status(state_dir) == bootstrap
        # already running: the same broker, whatever port is asked for
        assert broker.start_background(state_dir, port=ports.free_port()) == bootstrap
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", 0))
            busy = holder.getsockname()[1]
            with pytest.raises(processes.KafkaBrokerError, match=f"port {busy} .*--port"):
                broker.start_background(tmp_path / "other", port=busy)
        pid = broker.read_state(state_dir).pid  # type: ignore[union-attr]
        assert broker.is_kafka_process(pid)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        assert admin.list_topics(timeout=10).brokers
    finally:
        assert broker.stop(state_dir)
    assert broker.status(state_dir) is None
    assert not broker.is_kafka_process(pid)
    assert broker.stop(state_dir) is False


def test_a_port_taken_between_its_choice_and_the_brokers_bind_is_chosen_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # another process binds the chosen port first (an outgoing connection's local port, a
    # parallel test's server): the broker starts on ports chosen again
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        chosen = iter([taken])
        choose = broker.free_port
        monkeypatch.setattr(
            broker, "free_port", lambda host="127.0.0.1": next(chosen, 0) or choose(host)
        )
        kafka = broker.LocalKafka(tmp_path / "kafka", die_with_parent=True)
        try:
            bootstrap = kafka.start(timeout=90)
            assert AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).brokers
        finally:
            kafka.stop()
    assert bootstrap != f"127.0.0.1:{taken}"
    assert kafka.config is not None
    assert b"Address already in use" in (kafka.config.logs_dir / "server.log").read_bytes()
