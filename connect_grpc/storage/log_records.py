"""What a KafkaBasedLog hands over: records read from its topic or written to it.

:class:`LogRecord` is one record as every store applies it, whether read back by the log's
tail or just acknowledged to its writer (:class:`_Deliveries` for the log's own writes,
:func:`delivery_reporter` for other producers, such as the cluster's fenced writer);
:class:`Freshness` lets a store ignore a record read late that is older than one it applied
already. Separate from the log itself (:mod:`.kafka_log`) because the stores, the cluster
layer and the herder use these records without a log of their own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, KafkaError, Message

from connect_grpc.kernel.errors import UnavailableError


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record of the topic: its raw key and value (None is a tombstone), position,
    timestamp (ms since the epoch; None when the broker gave none) and headers."""

    key: bytes | None
    value: bytes | None
    partition: int
    offset: int
    timestamp_ms: int | None = None
    headers: tuple[tuple[str, bytes], ...] = ()

    def header(self, name: str) -> bytes | None:
        """The value of the last header called ``name``; None when there is none."""
        for key, value in reversed(self.headers):
            if key == name:
                return value
        return None


class Freshness:
    """The log offset last applied per key, so that a record read late never overrides a newer one.

    A key's records all land on one partition (the key decides it), so their offsets are
    comparable; should the same key appear on another partition (a writer with another
    partitioner), the later arrival wins. Not thread-safe: use it under the store's lock.
    """

    def __init__(self) -> None:
        self._applied: dict[object, tuple[int, int]] = {}

    def accept(self, key: object, record: LogRecord) -> bool:
        """Whether ``record`` is newer than what was applied for ``key``; remembers it if so."""
        if self.covers(key, record):
            return False
        self._applied[key] = (record.partition, record.offset)
        return True

    def covers(self, key: object, record: LogRecord) -> bool:
        """Whether ``record`` or a newer record of ``key`` was applied already (remembers
        nothing): a store skips reading it again, e.g. its own write read back."""
        previous = self._applied.get(key)
        return (
            previous is not None
            and previous[0] == record.partition
            and previous[1] >= record.offset
        )


def _timestamp_ms(message: Message) -> int | None:
    kind, value = message.timestamp()
    return None if kind == TIMESTAMP_NOT_AVAILABLE else int(value)


def _headers(message: Message) -> tuple[tuple[str, bytes], ...]:
    raw: list[tuple[str, bytes | None]] | None = message.headers()  # type: ignore[assignment]
    if not raw:
        return ()
    return tuple((key, value or b"") for key, value in raw)


def _as_bytes(data: Any) -> bytes | None:
    if data is None or isinstance(data, bytes):
        return data
    return str(data).encode()


class _Deliveries:
    """What became of each record of one ``send_all``, as the delivery callbacks report it.

    A slot per record rather than a Future per record: a write may hold tens of thousands
    of records (an offsets alter), and a Future's lock and condition cost more than the
    produce itself. The callbacks run in ``flush``, before the outcomes are read.
    """

    def __init__(self, count: int, to_exception: Callable[[KafkaError], Exception]) -> None:
        self._outcomes: list[LogRecord | Exception | None] = [None] * count
        self._to_exception = to_exception

    def reporter(self, index: int) -> Callable[[KafkaError | None, Message], None]:
        """The delivery callback of the record at ``index``."""
        return functools.partial(self._delivered, index)

    def _delivered(self, index: int, error: KafkaError | None, message: Message) -> None:
        # on error, nothing of ``message`` is touched (see delivery_reporter)
        self._outcomes[index] = (
            self._to_exception(error) if error is not None else _written(message)
        )

    def written(self, topic: str) -> list[LogRecord]:
        """Every record as written, in order; raises the first record's failure, or
        UnavailableError for a record no callback reported."""
        written: list[LogRecord] = []
        for outcome in self._outcomes:
            if isinstance(outcome, Exception):
                raise outcome
            if outcome is None:
                raise UnavailableError(f"a record to topic {topic} was not acknowledged")
            written.append(outcome)
        return written


def _written(message: Message) -> LogRecord:
    return LogRecord(
        _as_bytes(message.key()),
        _as_bytes(message.value()),
        message.partition() or 0,
        message.offset() or 0,
    )


def delivery_reporter(
    report: Future[LogRecord], to_exception: Callable[[KafkaError], Exception]
) -> Callable[[KafkaError | None, Message], None]:
    """A delivery callback completing ``report`` with the written record, or with
    ``to_exception(error)``.

    On error it touches nothing of ``message``: once a producer failed fatally, librdkafka
    may call it while a Python exception is pending, and any call into the message raises.
    """

    def on_delivery(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            report.set_exception(to_exception(error))
            return
        report.set_result(_written(message))

    return on_delivery
