"""The long-lived Kafka clients of the data plane (issue 9): an executor's, one per
configuration, reused from batch to batch, closed exactly once when dropped after a failure,
evicted, or idle; and a task's own driver clients, whose waits end when the task stops."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping

import pytest
from confluent_kafka import KafkaError, Message, TopicPartition

from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.runtime import client_cache, kafka_results, produce, range_reader
from connect_grpc.runtime.batching import OffsetRange
from connect_grpc.runtime.client_cache import ClientCache


class Client:
    created: list[Client] = []

    def __init__(self, conf: Mapping[str, str]) -> None:
        self.conf = dict(conf)
        self.closed = 0
        Client.created.append(self)

    def close(self) -> None:
        self.closed += 1


@pytest.fixture(autouse=True)
def _fresh() -> None:
    Client.created.clear()


def test_one_client_per_configuration_is_reused() -> None:
    cache = ClientCache()
    first = cache.get(Client, {"a": "1", "b": "2"})
    assert cache.get(Client, {"b": "2", "a": "1"}) is first  # order does not matter
    other = cache.get(Client, {"a": "2"})
    assert other is not first
    assert len(Client.created) == 2 and first.closed == other.closed == 0


def test_a_dropped_client_is_closed_once_and_replaced() -> None:
    cache = ClientCache()
    first = cache.get(Client, {"a": "1"})
    cache.drop(first)
    second = cache.get(Client, {"a": "1"})
    assert second is not first
    assert first.closed == 1 and second.closed == 0


def test_the_least_recently_used_client_is_evicted_beyond_capacity() -> None:
    cache = ClientCache(capacity=2)
    a = cache.get(Client, {"n": "a"})
    b = cache.get(Client, {"n": "b"})
    cache.get(Client, {"n": "a"})  # a used again: b is now the oldest
    cache.get(Client, {"n": "c"})
    assert (a.closed, b.closed) == (0, 1)
    assert len(cache) == 2


def test_idle_clients_are_dropped_on_next_use(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(client_cache.time, "monotonic", lambda: now[0])
    cache = ClientCache(idle_s=10)
    idle = cache.get(Client, {"n": "idle"})
    now[0] += 11
    fresh = cache.get(Client, {"n": "idle"})
    assert fresh is not idle and idle.closed == 1


# ---- the driver's own clients for small batches -----------------------------------------


def _stop_after(seconds: float) -> Callable[[], bool]:
    at = time.monotonic() + seconds
    return lambda: time.monotonic() >= at


def test_a_driver_batch_nobody_can_deliver_ends_when_the_task_stops() -> None:
    # a real librdkafka producer; nothing listens on port 1, so nothing is ever delivered
    producer = produce.DriverProducer(
        {"bootstrap.servers": "127.0.0.1:1", "client.id": "driver-test", "linger.ms": "1"}
    )
    records = [SourceRecord({"p": 0}, {"o": i}, "t", b"v", key=b"k") for i in range(5)]
    begun = time.monotonic()

    result = producer.produce(records, _stop_after(0.3))

    assert time.monotonic() - begun < 0.3 + 2 * kafka_results.FLUSH_SLICE_S + 0.3
    assert (result.produced, result.failed, result.retriable) == (5, 5, True)
    assert "the task is stopping" in result.messages[-1]
    assert producer._cached is None, "a producer that failed a batch is dropped"
    producer.close()  # nothing left to close: no error


class _SilentConsumer:
    """A consumer whose partition never answers (a broker that went away)."""

    def __init__(self) -> None:
        self.consumed = 0

    def assign(self, partitions: object) -> None:
        return None

    def consume(self, num_messages: int, timeout: float) -> list[object]:
        self.consumed += 1
        time.sleep(timeout)
        return []


def test_a_driver_read_of_a_silent_partition_ends_when_the_task_stops() -> None:
    consumer = _SilentConsumer()
    begun = time.monotonic()

    result = range_reader._read_range(
        consumer, OffsetRange("t", 0, 10, 20), range_reader._tuple_rows, _stop_after(0.3)
    )

    assert time.monotonic() - begun < 0.3 + 2 * kafka_results.FLUSH_SLICE_S + 0.3
    assert result.failure is not None and result.failure.retriable
    assert result.failure.name == "_INTR" and "stopping" in result.failure.message
    assert (result.next_offset, result.rows) == (10, [])
    assert consumer.consumed >= 2, "it kept waiting for records until the task stopped"


def test_a_driver_read_of_a_silent_partition_fails_as_stalled_after_the_stall_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(range_reader, "READ_STALL_TIMEOUT_S", 0.3)
    begun = time.monotonic()

    result = range_reader._read_range(
        _SilentConsumer(), OffsetRange("t", 0, 10, 20), range_reader._tuple_rows
    )

    assert time.monotonic() - begun < 0.3 + 2 * kafka_results.FLUSH_SLICE_S + 0.3
    assert result.failure is not None and result.failure.retriable
    assert result.failure.name == "_TIMED_OUT" and "no progress" in result.failure.message
    assert (result.next_offset, result.rows) == (10, [])


def _message(offset: int, error: KafkaError | None = None) -> Message:
    return Message(
        topic="t", partition=0, offset=offset, key=b"k%d" % offset, value=b"v%d" % offset,
        error=error, timestamp=(1, 1_700_000_000_000 + offset),
    )


class _ScriptedConsumer:
    """Answers each consume with the next batch of its script; its position is ``position``."""

    def __init__(self, batches: list[list[Message]], position: int = 0) -> None:
        self._batches, self._position = list(batches), position

    def assign(self, partitions: object) -> None:
        return None

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        return self._batches.pop(0) if self._batches else []

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(p.topic, p.partition, self._position) for p in partitions]


def _offsets(rows: list[SinkRecord]) -> list[int]:
    return [row.kafka_offset for row in rows]


def test_a_read_takes_whole_batches_and_stops_at_the_range_end_or_the_partition_end() -> None:
    eof = KafkaError(KafkaError._PARTITION_EOF)
    read = functools.partial(range_reader._read_range, make_row=range_reader.sink_record_builder)
    # whole batches, the last one ending at the range's end
    whole = read(_ScriptedConsumer([[_message(10), _message(11)], [_message(12)]]),
                 OffsetRange("t", 0, 10, 13))
    assert (whole.failure, whole.next_offset, _offsets(whole.rows)) == (None, 13, [10, 11, 12])
    assert (whole.rows[0].key, whole.rows[0].value, whole.rows[0].timestamp_ms) == (
        b"k10", b"v10", 1_700_000_000_010
    )
    # a batch going past the range's end (offsets with a gap): only what is in the range
    past = read(_ScriptedConsumer([[_message(10), _message(12), _message(15)]]),
                OffsetRange("t", 0, 10, 14))
    assert (past.failure, past.next_offset, _offsets(past.rows)) == (None, 14, [10, 12])
    # the partition's end within a batch: the rows before it, up to the consumer's position
    ended = read(_ScriptedConsumer([[_message(10)], [_message(11), _message(12, eof)]], 12),
                 OffsetRange("t", 0, 10, 20))
    assert (ended.failure, ended.next_offset, _offsets(ended.rows)) == (None, 12, [10, 11])
    # any other error: a failure, no rows (the batch is read again)
    failed = read(
        _ScriptedConsumer([[_message(10)], [_message(11), _message(12, KafkaError(
            KafkaError._TRANSPORT)), _message(13)]]),
        OffsetRange("t", 0, 10, 20),
    )
    assert failed.failure is not None and (failed.next_offset, failed.rows) == (12, [])
