"""KafkaBasedLog's tail without a broker: a batch of records is applied, the waiters that
asked to be released before ``after_batch`` are woken, then ``after_batch`` runs, then the
other waiters are woken (a fake consumer hands the batch to one ``_poll_once``)."""

from __future__ import annotations

import threading
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, TopicPartition

from connect_grpc.storage.kafka_config import KafkaConfigStore
from connect_grpc.storage.kafka_log import KafkaBasedLog
from connect_grpc.storage.log_records import LogRecord
from connect_grpc.storage.log_topic import TopicSpec
from tests.task_fakes import DeliveredMessage

WAIT_S = 10.0


class _Message(DeliveredMessage):
    """A record as the consumer hands it to the tail."""

    def error(self) -> None:
        return None

    def timestamp(self) -> tuple[int, int]:
        return TIMESTAMP_NOT_AVAILABLE, 0

    def headers(self) -> None:
        return None


class _Consumer:
    """Hands out one batch of records on partition 0, then nothing."""

    def __init__(self, values: list[bytes]) -> None:
        self._batch = [_Message(b"k", value, offset) for offset, value in enumerate(values)]
        self._position = 0

    def poll(self, timeout: float) -> Any:
        if not self._batch:
            return None
        self._position = self._batch[-1].offset() + 1
        return self._batch.pop(0)

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        batch, self._batch = self._batch, []
        return batch

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(p.topic, p.partition, self._position) for p in partitions]


def _running(log: KafkaBasedLog) -> KafkaBasedLog:
    """The log as if started: one partition, a tail thread (never run) and no broker."""
    log._partitions = [TopicPartition("t", 0)]
    log._thread = threading.Thread(target=lambda: None)
    return log


def _waiting(log: KafkaBasedLog, record: LogRecord, *, before_batch_end: bool) -> threading.Event:
    """Starts a thread waiting for ``record``; the event is set once that wait returned."""
    returned = threading.Event()

    def wait() -> None:
        log.read_past([record], WAIT_S, before_batch_end=before_batch_end)
        returned.set()

    threading.Thread(target=wait, daemon=True).start()
    return returned


def _until_registered(log: KafkaBasedLog, count: int) -> None:
    while len(log._waiters) < count:
        threading.Event().wait(0.001)


def test_a_writer_waiting_only_for_its_records_is_woken_before_after_batch_runs() -> None:
    seen_in_after_batch: list[tuple[bool, bool]] = []
    applied: list[bytes | None] = []
    early: threading.Event
    late: threading.Event

    def after_batch() -> None:
        # the early waiter's wait returns on its own thread: give it the time to
        early.wait(WAIT_S)
        seen_in_after_batch.append((early.is_set(), late.is_set()))

    log = _running(KafkaBasedLog(
        {"bootstrap.servers": "127.0.0.1:1"}, TopicSpec("t", 1, 1),
        lambda record: applied.append(record.value), after_batch=after_batch,
    ))
    last = LogRecord(b"k", b"2", 0, 1)
    early = _waiting(log, last, before_batch_end=True)
    late = _waiting(log, last, before_batch_end=False)
    _until_registered(log, 2)

    log._poll_once(_Consumer([b"1", b"2"]))  # type: ignore[arg-type]  # a fake consumer

    assert applied == [b"1", b"2"]
    assert seen_in_after_batch == [(True, False)]
    assert late.wait(WAIT_S)


def test_a_waiter_for_records_read_already_returns_at_once_either_way() -> None:
    log = _running(KafkaBasedLog(
        {"bootstrap.servers": "127.0.0.1:1"}, TopicSpec("t", 1, 1), lambda record: None,
        after_batch=lambda: None,
    ))
    log._poll_once(_Consumer([b"1"]))  # type: ignore[arg-type]  # a fake consumer
    record = LogRecord(b"k", b"1", 0, 0)
    log.read_past([record], 0.0, before_batch_end=True)
    log.read_past([record], 0.0)


def test_the_config_store_tells_its_listener_of_a_batch_in_order_after_applying_it() -> None:
    heard: list[tuple[str, str, int]] = []
    store: KafkaConfigStore

    def listener(kind: str, connector: str, restart: object) -> None:
        heard.append((kind, connector, store.position()))

    store = KafkaConfigStore({"bootstrap.servers": "127.0.0.1:1"}, "configs", on_change=listener)
    for offset, key in enumerate((b"connector-a", b"target-state-a")):
        value = b'{"properties":{}}' if key.startswith(b"connector") else b'{"state":"PAUSED"}'
        store._apply(LogRecord(key, value, 0, offset))
    assert heard == []

    store._tell_listener()

    assert heard == [("connector", "a", 2), ("target_state", "a", 2)]
