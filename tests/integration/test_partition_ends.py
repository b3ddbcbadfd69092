"""``partition_ends.partition_ends`` against a real broker: the ends of several partitions asked in
two rounds are exactly what ``get_watermark_offsets`` says of each, under either isolation
level (an open transaction, an empty partition and deleted records included)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

from connect_grpc.runtime.partition_ends import partition_ends
from tests.integration.helpers import create_topic, open_transaction

PARTITIONS = 4


@pytest.fixture(scope="module")
def topic(kafka_bootstrap: str, kafka_admin: AdminClient) -> Iterator[str]:
    """Partition 0: 10 committed records, 5 of a transaction left open, 3 after them;
    1: empty; 2: 7 records; 3: 6 records of which the first 4 deleted."""
    name = create_topic(kafka_admin, f"test-ends-{uuid.uuid4().hex}", PARTITIONS)
    plain = Producer({"bootstrap.servers": kafka_bootstrap})
    for partition, count in ((0, 10), (2, 7), (3, 6)):
        for _ in range(count):
            plain.produce(name, b"x", partition=partition)
    plain.flush(30)
    transaction = open_transaction(kafka_bootstrap, name, 0, 5)
    for _ in range(3):
        plain.produce(name, b"z", partition=0)
    plain.flush(30)
    deleted = kafka_admin.delete_records([TopicPartition(name, 3, 4)])
    for future in deleted.values():
        future.result(timeout=30)
    try:
        yield name
    finally:
        transaction.abort_transaction(30)


def _consumer(bootstrap: str, isolation: str) -> Any:
    conf = {"bootstrap.servers": bootstrap, "group.id": f"ends-{isolation}"}
    return Consumer({**conf, "isolation.level": isolation})


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_the_ends_of_several_partitions_are_each_partitions_watermarks(
    kafka_bootstrap: str, topic: str, isolation: str
) -> None:
    consumer = _consumer(kafka_bootstrap, isolation)
    try:
        keys = [(topic, partition) for partition in range(PARTITIONS)]
        each = {
            key: consumer.get_watermark_offsets(TopicPartition(*key), timeout=10, cached=False)
            for key in keys
        }
        assert partition_ends(consumer, keys, 10) == each
        assert {key: partition_ends(consumer, [key], 10)[key] for key in keys} == each
        assert partition_ends(consumer, [], 10) == {}
    finally:
        consumer.close()
    # what the fixture made, so that the comparison above is not between two wrong answers
    stable_end = 10 if isolation == "read_committed" else 18
    assert each == {
        (topic, 0): (0, stable_end), (topic, 1): (0, 0), (topic, 2): (0, 7), (topic, 3): (4, 6),
    }


def test_a_partition_that_does_not_exist_raises_as_the_watermarks_do(
    kafka_bootstrap: str, topic: str
) -> None:
    consumer = _consumer(kafka_bootstrap, "read_committed")
    try:
        with pytest.raises(KafkaException):
            partition_ends(consumer, [(topic, 0), (topic, PARTITIONS + 5)], 5)
        with pytest.raises(KafkaException):
            partition_ends(consumer, [(topic, PARTITIONS + 5)], 5)
    finally:
        consumer.close()
