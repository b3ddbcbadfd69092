"""KafkaBasedLog.send_all without a broker: a fake producer reports each delivery from
``flush``, in any order, as librdkafka does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError

from connect_grpc.kernel.errors import ConnectError, UnavailableError
from connect_grpc.storage.kafka_log import KafkaBasedLog
from connect_grpc.storage.log_records import LogRecord
from connect_grpc.storage.log_topic import TopicSpec
from tests.task_fakes import DeliveredMessage

Callback = Callable[[KafkaError | None, Any], None]


class _Producer:
    """Holds each record's callback until ``flush``, which reports them last first; a
    record whose value is in ``failing`` fails with that error code, one in ``unreported``
    is never reported."""

    def __init__(self, failing: dict[bytes, int] | None = None,
                 unreported: tuple[bytes, ...] = (), remaining: int = 0) -> None:
        self._pending: list[tuple[bytes | None, bytes | None, Callback]] = []
        self.headers: list[list[tuple[str, bytes]] | None] = []
        self._failing = failing or {}
        self._unreported, self._remaining = unreported, remaining

    def produce(self, topic: str, value: bytes | None, key: bytes | None,
                headers: list[tuple[str, bytes]] | None, on_delivery: Callback) -> None:
        self._pending.append((key, value, on_delivery))
        self.headers.append(headers)

    def flush(self, timeout: float) -> int:
        for offset, (key, value, callback) in reversed(list(enumerate(self._pending))):
            if value in self._unreported:
                continue
            if value in self._failing:
                callback(KafkaError(self._failing[value]), None)
            else:
                callback(None, DeliveredMessage(key, value, 100 + offset, partition=3))
        self._pending = []
        return self._remaining


def _log(producer: _Producer) -> KafkaBasedLog:
    log = KafkaBasedLog({"bootstrap.servers": "127.0.0.1:1"}, TopicSpec("t", 1, 1), print)
    log._producer = producer  # type: ignore[assignment]  # no broker
    return log


def test_every_record_is_returned_as_written_in_the_order_sent() -> None:
    written = _log(_Producer()).send_all([(b"a", b"1"), (b"b", None), (None, b"3")])
    assert written == [
        LogRecord(b"a", b"1", 3, 100),
        LogRecord(b"b", None, 3, 101),
        LogRecord(None, b"3", 3, 102),
    ]


def test_the_first_failed_record_in_order_is_raised() -> None:
    failing = {b"2": KafkaError.MSG_SIZE_TOO_LARGE, b"3": KafkaError._MSG_TIMED_OUT}
    log = _log(_Producer(failing=failing))
    with pytest.raises(ConnectError, match="write to t failed") as excinfo:
        log.send_all([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")])
    assert "MSG_SIZE_TOO_LARGE" in excinfo.value.message


def test_records_left_unacknowledged_by_flush_are_unavailable() -> None:
    with pytest.raises(UnavailableError, match="2 records to topic t not acknowledged"):
        _log(_Producer(remaining=2)).send_all([(b"a", b"1")])


def test_a_record_no_callback_reported_is_unavailable() -> None:
    with pytest.raises(UnavailableError, match="a record to topic t was not acknowledged"):
        _log(_Producer(unreported=(b"2",))).send_all([(b"a", b"1"), (b"b", b"2")])


def test_nothing_to_write_writes_nothing() -> None:
    assert _log(_Producer()).send_all([]) == []


@pytest.mark.parametrize(("carrier_index", "carrier"), [(-1, 2), (0, 0), (1, 1)])
def test_the_carrier_headers_go_on_the_record_at_the_carrier_index(
    carrier_index: int, carrier: int
) -> None:
    """Every record has ``headers``; the change's record (the last by default, a removal's
    first) has ``carrier_headers`` too."""
    producer = _Producer()
    _log(producer).send_all(
        [(b"a", b"1"), (b"b", None), (b"c", b"3")],
        headers=[("term", b"4")],
        carrier_headers=[("carried", b"x")],
        carrier_index=carrier_index,
    )
    assert producer.headers == [
        [("term", b"4"), ("carried", b"x")] if n == carrier else [("term", b"4")]
        for n in range(3)
    ]


def test_a_carrier_index_outside_the_records_is_refused_before_any_write() -> None:
    producer = _Producer()
    with pytest.raises(IndexError):
        _log(producer).send_all([(b"a", b"1")], carrier_headers=[("c", b"x")], carrier_index=1)
    assert producer.headers == []
