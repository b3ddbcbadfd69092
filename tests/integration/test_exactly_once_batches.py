"""Exactly-once source batches against the real broker, at the edges of the producer's
client: a batch that fills the client's queue still commits with its offsets."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient

from connect_grpc.connectors.api import SourceRecord
from connect_grpc.runtime.transactions import TransactionalProducer, Transactions
from connect_grpc.storage.kafka_offsets import KafkaOffsetStore
from connect_grpc.testing.cluster import wait_until
from tests.integration.helpers import create_topic, read_committed

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TIMEOUT_S = 30.0
PARTITION = {"task": 0}
#: The client's queue holds exactly one batch.
QUEUE_RECORDS = 500


@pytest.fixture
def store(kafka_bootstrap: str) -> Iterator[KafkaOffsetStore]:
    offsets = KafkaOffsetStore(
        {"bootstrap.servers": kafka_bootstrap},
        f"eos-batches-offsets-{uuid.uuid4().hex[:8]}",
        1,
        timeout=TIMEOUT_S,
    )
    offsets.start()
    yield offsets
    offsets.stop()


def test_a_batch_as_large_as_the_clients_queue_commits_with_its_offsets(
    kafka_bootstrap: str, kafka_admin: AdminClient, store: KafkaOffsetStore
) -> None:
    """The batch fills the queue (its records wait a second to be sent), so the offset
    record finds no room until they are delivered: it waits for room, and the transaction
    commits the records and the offsets together (the task does not fail)."""
    topic = create_topic(kafka_admin, f"eos-batches-{uuid.uuid4().hex[:8]}")
    conf = {
        "bootstrap.servers": kafka_bootstrap,
        "client.id": "eos-batches-test",
        "queue.buffering.max.messages": str(QUEUE_RECORDS),
        "linger.ms": "1000",
    }
    producer = TransactionalProducer(conf, Transactions("g-queue-0", store.topic, "c"))
    batch = [
        SourceRecord(PARTITION, {"seq": i}, topic, str(i), str(i)) for i in range(QUEUE_RECORDS)
    ]
    try:
        assert producer.write(batch, lambda: False)
    finally:
        producer.close()
    # the commit's markers reach the partition after commit_transaction returned: the last
    # stable offset moves past the records a moment later
    wait_until(lambda: len(read_committed(kafka_bootstrap, topic)) >= QUEUE_RECORDS, TIMEOUT_S)
    values = [v.decode() for v in read_committed(kafka_bootstrap, topic)]
    assert values == [str(i) for i in range(QUEUE_RECORDS)]
    wait_until(lambda: store.get("c", PARTITION) == {"seq": QUEUE_RECORDS - 1}, TIMEOUT_S)
