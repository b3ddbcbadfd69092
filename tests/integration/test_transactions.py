"""A source task's transactional producer against the real broker: each batch one
transaction holding its records and its offsets, zombies fenced by the transactional id,
failed batches aborted and written again exactly once."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka.admin import AdminClient

from connect_grpc.connectors.api import SourceRecord, TransactionBoundary
from connect_grpc.kernel.kafka_clients import KafkaIoError
from connect_grpc.runtime.transactions import (
    TaskFencedError,
    TransactionalProducer,
    Transactions,
    task_transactional_id,
)
from connect_grpc.storage.kafka_offsets import KafkaOffsetStore
from connect_grpc.testing.cluster import wait_until
from tests.integration.helpers import create_topic, read_committed

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TIMEOUT_S = 30.0
OFFSETS_PARTITIONS = 5
PARTITION = {"file": "/data/in.txt"}
INTERVAL_S = 60.0


@pytest.fixture
def store(kafka_bootstrap: str) -> Iterator[KafkaOffsetStore]:
    """The worker's offset store on a fresh offsets topic (which it creates, compacted)."""
    offsets = KafkaOffsetStore(
        {"bootstrap.servers": kafka_bootstrap},
        f"eos-offsets-{uuid.uuid4().hex[:8]}",
        OFFSETS_PARTITIONS,
        timeout=TIMEOUT_S,
    )
    offsets.start()
    yield offsets
    offsets.stop()


@pytest.fixture
def topics(kafka_admin: AdminClient, store: KafkaOffsetStore) -> tuple[str, str]:
    return create_topic(kafka_admin, f"eos-data-{uuid.uuid4().hex[:8]}"), store.topic


@pytest.fixture
def producers(
    kafka_bootstrap: str, topics: tuple[str, str]
) -> Iterator[Callable[[str], TransactionalProducer]]:
    """Opens producers of connector ``c``'s task 0 (or another id); closes them at teardown."""
    opened: list[TransactionalProducer] = []

    def open_producer(
        transactional_id: str = "",
        boundary: TransactionBoundary = TransactionBoundary.POLL,
        clock: Callable[[], float] = time.monotonic,
    ) -> TransactionalProducer:
        tid = transactional_id or task_transactional_id("g", "c", 0)
        producer = TransactionalProducer(
            {"bootstrap.servers": kafka_bootstrap, "client.id": "eos-test"},
            Transactions(tid, topics[1], "c", boundary, INTERVAL_S),
            clock,
        )
        opened.append(producer)
        return producer

    yield open_producer
    for producer in opened:
        producer.close()


def _batch(topic: str, start: int, count: int) -> list[SourceRecord]:
    return [
        SourceRecord(PARTITION, {"position": i + 1}, topic, f"v{i}")
        for i in range(start, start + count)
    ]


def _committed(bootstrap: str, topic: str, expected: list[str]) -> None:
    """Waits until a read_committed consumer sees exactly ``expected`` in partition 0 (a
    commit returns before its markers reach the partition, so a reader may lag)."""
    seen: list[list[str]] = []

    def matches() -> bool:
        seen.append([value.decode() for value in read_committed(bootstrap, topic)])
        return seen[-1] == expected

    try:
        wait_until(matches, timeout=TIMEOUT_S, interval=0.1)
    except TimeoutError:
        pytest.fail(f"read_committed saw {seen[-1][:20]}… ({len(seen[-1])} values)")


def _never() -> bool:
    return False


def test_a_batch_and_its_offsets_commit_together_and_the_offset_store_reads_them(
    producers: Callable[..., TransactionalProducer],
    topics: tuple[str, str],
    store: KafkaOffsetStore,
    kafka_bootstrap: str,
) -> None:
    data = topics[0]
    producer = producers()
    first, second = _batch(data, 0, 3), _batch(data, 3, 2)
    producer.write(first, _never)
    producer.write(second, _never)

    _committed(kafka_bootstrap, data, [f"v{i}" for i in range(5)])
    wait_until(lambda: store.get("c", PARTITION) == {"position": 5}, timeout=TIMEOUT_S)
    # the store's own write of that key lands in the same partition (both murmur2), so
    # it supersedes the task's, as a later transactional write would supersede it
    store.put("c", [(PARTITION, {"position": 6})])
    batch = _batch(data, 6, 1)
    producer.write(batch, _never)
    wait_until(lambda: store.get("c", PARTITION) == {"position": 7}, timeout=TIMEOUT_S)


def test_a_zombie_cannot_commit_once_a_new_instance_claimed_the_id(
    producers: Callable[..., TransactionalProducer], topics: tuple[str, str], kafka_bootstrap: str
) -> None:
    data = topics[0]
    zombie = producers()
    zombie.write(_batch(data, 0, 2), _never)
    successor = producers()
    claimed = []

    def successor_claims_mid_batch() -> bool:
        """Asked by the zombie every 10 000 records: the successor starts meanwhile."""
        if not claimed:
            batch = _batch(data, 100, 1)
            successor.write(batch, _never)
            claimed.append(True)
        return False

    big = _batch(data, 2, 25_000)
    with pytest.raises(TaskFencedError) as raised:
        zombie.write(big, successor_claims_mid_batch)
    assert "g-c-0" in str(raised.value) and not raised.value.retriable
    with pytest.raises(TaskFencedError):  # and never claims the id back
        zombie.write(_batch(data, 9, 1), _never)

    _committed(kafka_bootstrap, data, ["v0", "v1", "v100"])


def test_a_batch_that_failed_midway_is_aborted_and_written_once_by_its_retry(
    producers: Callable[..., TransactionalProducer], topics: tuple[str, str], kafka_bootstrap: str
) -> None:
    data = topics[0]
    producer = producers()
    batch = _batch(data, 0, 25_000)
    with pytest.raises(KafkaIoError) as raised:
        producer.write(batch, lambda: True)  # stopped after 10 000
    assert raised.value.retriable and "transaction aborted" in str(raised.value)
    producer.write(batch, _never)

    _committed(kafka_bootstrap, data, [f"v{i}" for i in range(25_000)])


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _offset_of(store: KafkaOffsetStore) -> object:
    store.refresh()
    return store.get("c", PARTITION)


def test_interval_boundaries_commit_every_batch_of_an_interval_in_one_transaction(
    producers: Callable[..., TransactionalProducer],
    topics: tuple[str, str],
    store: KafkaOffsetStore,
    kafka_bootstrap: str,
) -> None:
    data, clock = topics[0], FakeClock()
    producer = producers(boundary=TransactionBoundary.INTERVAL, clock=clock)
    assert not producer.write(_batch(data, 0, 3), _never)
    assert not producer.write(_batch(data, 3, 2), _never)
    assert not producer.idle(_never)  # the interval has not passed
    assert read_committed(kafka_bootstrap, data) == [] and _offset_of(store) is None

    clock.now += INTERVAL_S
    assert producer.idle(_never)  # an empty poll once the interval passed commits
    _committed(kafka_bootstrap, data, [f"v{i}" for i in range(5)])
    assert _offset_of(store) == {"position": 5}

    assert not producer.write(_batch(data, 5, 1), _never)
    clock.now += INTERVAL_S
    assert producer.write(_batch(data, 6, 1), _never)  # so does a batch
    assert not producer.write(_batch(data, 7, 1), _never)
    assert producer.wind_down(_never)  # and pausing or stopping
    _committed(kafka_bootstrap, data, [f"v{i}" for i in range(8)])
    assert _offset_of(store) == {"position": 8}


def test_a_failure_that_aborts_earlier_batches_fails_the_task_rather_than_skip_them(
    producers: Callable[..., TransactionalProducer],
    topics: tuple[str, str],
    store: KafkaOffsetStore,
    kafka_bootstrap: str,
) -> None:
    data = topics[0]
    producer = producers(boundary=TransactionBoundary.INTERVAL, clock=FakeClock())
    producer.write(_batch(data, 0, 3), _never)
    big = _batch(data, 3, 25_000)
    with pytest.raises(KafkaIoError) as raised:
        producer.write(big, lambda: True)  # stopped after 10 000: the transaction aborts
    assert not raised.value.retriable
    assert "restart the task, it resumes from the committed offsets" in str(raised.value)
    with pytest.raises(KafkaIoError):  # and the instance never writes again
        producer.write(big, _never)

    successor = producers(boundary=TransactionBoundary.INTERVAL, clock=FakeClock())
    successor.claim()
    assert read_committed(kafka_bootstrap, data) == [] and _offset_of(store) is None


def test_connector_boundaries_end_transactions_where_the_task_asks(
    producers: Callable[..., TransactionalProducer],
    topics: tuple[str, str],
    store: KafkaOffsetStore,
    kafka_bootstrap: str,
) -> None:
    data = topics[0]
    producer = producers(boundary=TransactionBoundary.CONNECTOR)
    context = producer.boundary.context
    assert context is not None
    batch = _batch(data, 0, 10)
    context.commit_transaction(batch[3])  # v0..v3 in one transaction
    context.abort_transaction(batch[6])  # v4..v6 dropped, their offsets kept
    assert producer.write(batch, _never)
    _committed(kafka_bootstrap, data, ["v0", "v1", "v2", "v3"])
    assert _offset_of(store) == {"position": 7}

    assert not producer.idle(_never)  # v7..v9 stay open until the task asks
    context.commit_transaction()
    context.abort_transaction()  # asked both for one point: abort wins
    assert producer.write(_batch(data, 10, 2), _never)
    assert not producer.wind_down(_never)  # nothing asked since
    _committed(kafka_bootstrap, data, ["v0", "v1", "v2", "v3"])
    assert _offset_of(store) == {"position": 12}

    producer.write(_batch(data, 12, 1), _never)
    context.commit_transaction()
    assert producer.wind_down(_never)  # a request made after the last batch, at the end
    _committed(kafka_bootstrap, data, ["v0", "v1", "v2", "v3", "v12"])
    assert _offset_of(store) == {"position": 13}


def test_a_task_may_not_write_to_its_offsets_topic_when_transactions_span_polls(
    producers: Callable[..., TransactionalProducer], topics: tuple[str, str]
) -> None:
    producer = producers(boundary=TransactionBoundary.INTERVAL, clock=FakeClock())
    with pytest.raises(KafkaIoError) as raised:
        producer.write([SourceRecord(PARTITION, {"position": 1}, topics[1], "x")], _never)
    assert not raised.value.retriable and topics[1] in str(raised.value)
