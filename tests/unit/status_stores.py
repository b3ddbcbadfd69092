"""The Kafka-backed status store without a broker: over :class:`StatusLog`, its status topic
in memory, which can be down as Kafka can; or never started, for what it does with the records
it reads (``_apply``, the tailing thread's entry point)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from connect_grpc.kernel.errors import ConnectError
from connect_grpc.storage import kafka_status
from connect_grpc.storage.kafka_status import KafkaStatusStore
from connect_grpc.storage.log_records import LogRecord
from connect_grpc.storage.status_codec import decode_status

#: The store's topic when it runs over a :class:`StatusLog`.
STATUS_TOPIC = "connect-status"


class StatusLog:
    """The store's KafkaBasedLog, in memory: keeps what is written and counts the attempts;
    while ``down`` is set, a write fails as a real one does when the broker is away (after its
    delivery timeout). :meth:`next_record` makes a record as if another writer (Kafka Connect,
    another worker) had written it, at the next offset."""

    topic = STATUS_TOPIC

    def __init__(self) -> None:
        self.down = threading.Event()
        self.written: list[tuple[bytes, bytes | None]] = []
        self.attempts = 0
        #: What the store's stop gave the log's close (None: the log's own timeout).
        self.stop_flush_timeout: float | None = None
        self._offset = 0

    def start(self) -> None:
        return None

    def stop(self, flush_timeout: float | None = None) -> None:
        self.stop_flush_timeout = flush_timeout

    def send_all(self, records: Sequence[tuple[bytes, bytes | None]]) -> list[LogRecord]:
        self.attempts += 1
        if self.down.is_set():
            raise ConnectError(f"write to {self.topic} failed: Local: Message timed out")
        result = []
        for key, value in records:
            self.written.append((key, value))
            result.append(self.next_record(key, value))
        return result

    def next_record(self, key: bytes, value: bytes | None) -> LogRecord:
        record = LogRecord(key, value, 0, self._offset)
        self._offset += 1
        return record

    def states(self) -> list[tuple[str, str | None]]:
        """Each status written, in order: its key and state (None for a tombstone)."""
        out = []
        for key, value in self.written:
            decoded = None if value is None else decode_status(value)
            out.append((key.decode(), None if decoded is None else decoded[0].state.value))
        return out


def status_log(monkeypatch: pytest.MonkeyPatch) -> StatusLog:
    """A :class:`StatusLog`, with the store's retries of a failed write made short (10 ms,
    at most 20 ms) for the test."""
    monkeypatch.setattr(kafka_status, "WRITE_RETRY_INITIAL_S", 0.01)
    monkeypatch.setattr(kafka_status, "WRITE_RETRY_MAX_S", 0.02)
    return StatusLog()


def unstarted_store(topic: str = STATUS_TOPIC, **kwargs: Any) -> KafkaStatusStore:
    """A store whose broker (``127.0.0.1:1``) is never reached: not started, or started over
    a :class:`StatusLog`."""
    return KafkaStatusStore({"bootstrap.servers": "127.0.0.1:1"}, topic, **kwargs)


@contextmanager
def started_store(log: StatusLog) -> Iterator[KafkaStatusStore]:
    """A store started over ``log``; at the end, ``log`` up again and the store stopped."""
    store = unstarted_store()
    store._log = log  # type: ignore[assignment]
    store.start()
    try:
        yield store
    finally:
        log.down.clear()
        store.stop()
