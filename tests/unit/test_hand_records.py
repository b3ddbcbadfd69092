"""``produce.hand_records``, the loop that hands a source batch to an in-process producer,
against the loop it replaced (``reference_hand_records`` below, kept verbatim in its
behaviour: it encoded ``str`` keys and values itself and looked at the stop and the fatal
error before every record). A differential property test (hypothesis, derandomized): the
same records, the same full-queue refusals, fatal errors, client errors and stops give
the same calls to the producer, in the same order, with the same bytes, the same count
and the same errors. Each record's timestamp (none, Kafka's -1, one, or one Kafka cannot be
given) is part of the calls. The producer stands in for confluent_kafka's as far as the loop uses
it; that the real client encodes a ``str`` as ``str.encode()`` does is checked against a
broker by ``tests/integration/test_hand_records_bytes.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from connect_grpc.connectors.api import SourceRecord
from connect_grpc.kernel.kafka_clients import kafka_error_of
from connect_grpc.runtime import produce
from connect_grpc.runtime.kafka_results import KafkaFailure
from connect_grpc.runtime.produce import ProduceErrors, hand_records
from connect_grpc.runtime.spark_rows import InvalidRecordTimestampError

pytestmark = pytest.mark.timeout(120)

#: A value the stand-in client refuses at once with a KafkaException (not a queue full).
CLIENT_REFUSED = b"client-refuses-this"


def reference_hand_records(
    records: Sequence[SourceRecord],
    producer: Any,
    errors: ProduceErrors,
    stopping: Callable[[], bool],
) -> int:
    """The loop as it was before ``str`` values went to the client as they are, with a
    record's timestamp checked as Kafka Connect checks it and passed as the client's
    ``timestamp`` when the record has one (written here independently of the loop's)."""
    produce_one, on_delivery = producer.produce, errors.on_delivery
    produced = 0
    try:
        for record in records:
            if errors.fatal or (
                produced % produce.STOP_CHECK_ROWS == 0 and produced and stopping()
            ):
                return produced
            key, value, partition = record.key, record.value, record.kafka_partition
            # before the encoding: the loop checks it before the client reads its arguments
            stamp = _reference_timestamp(record.timestamp_ms)
            if isinstance(key, str):
                key = key.encode()
            if isinstance(value, str):
                value = value.encode()
            partition = -1 if partition is None else partition
            while True:
                try:
                    if stamp is not None:
                        produce_one(
                            record.topic, value, key, partition, on_delivery,
                            timestamp=stamp,
                            headers=list(record.headers) if record.headers else None,
                        )
                    elif record.headers:
                        headers = list(record.headers)
                        produce_one(
                            record.topic, value, key, partition, on_delivery, headers=headers
                        )
                    else:
                        produce_one(record.topic, value, key, partition, on_delivery)
                    break
                except BufferError:
                    producer.poll(0.05)
            produced += 1
        producer.poll(0)
    except KafkaException as exc:
        error = kafka_error_of(exc)
        if error is None:
            raise
        errors.add(KafkaFailure.of(error, "produce"))
    return produced


def _reference_timestamp(timestamp_ms: int | None) -> int | None:
    """ConnectUtils.checkAndConvertTimestamp, for a client that writes 0 as its own time:
    None → no argument, -1 → 0 (the producer's time), ≥ 1 → itself; anything else
    refused (0 as the epoch cannot be written)."""
    if timestamp_ms is None:
        return None
    if timestamp_ms == -1:
        return 0
    if timestamp_ms < 1:
        raise InvalidRecordTimestampError(timestamp_ms, "refused")
    return timestamp_ms


class StandInClient:
    """confluent_kafka.Producer as far as the loop uses it: a ``str`` key or value is
    encoded as UTF-8 first (strictly: a lone surrogate raises UnicodeEncodeError, as the
    client does while it reads its arguments), the calls numbered in ``full_at`` find the
    queue full (BufferError), the poll numbered ``fatal_at_poll`` runs the fatal-error
    callback (callbacks run only while the client is polled) and ``CLIENT_REFUSED`` is
    refused with a KafkaException. Every call is logged, with what the client would send."""

    def __init__(
        self, errors: ProduceErrors, full_at: frozenset[int], fatal_at_poll: int | None
    ) -> None:
        self._errors = errors
        self._full_at = full_at
        self._fatal_at_poll = fatal_at_poll
        self._calls = 0
        self._polls = 0
        self.log: list[tuple[Any, ...]] = []

    def produce(
        self, topic: str, value: Any = None, key: Any = None, partition: int = -1,
        on_delivery: Any = None, *, timestamp: int = 0, headers: Any = None,
    ) -> None:
        # The client reads its arguments (encoding a str) before it queues the record.
        sent_value = value.encode() if isinstance(value, str) else value
        sent_key = key.encode() if isinstance(key, str) else key
        self._calls += 1
        if self._calls in self._full_at:
            self.log.append(("full", topic))
            raise BufferError("queue full")
        if sent_value == CLIENT_REFUSED:
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "refused by the client"))
        self.log.append((
            "produce", topic, sent_value, sent_key, partition, headers or None, timestamp,
            on_delivery == self._errors.on_delivery,
        ))

    def poll(self, timeout: float) -> int:
        self._polls += 1
        self.log.append(("poll", timeout))
        if self._polls == self._fatal_at_poll:
            self._errors.on_fatal(KafkaError(KafkaError._FENCED, "fenced", fatal=True))
        return 0


def _run(
    hand: Callable[..., int],
    records: list[SourceRecord],
    full_at: frozenset[int],
    fatal_at_poll: int | None,
    stop_at_call: int | None,
) -> tuple[Any, ...]:
    errors = ProduceErrors()
    client = StandInClient(errors, full_at, fatal_at_poll)
    asked: list[int] = []

    def stopping() -> bool:
        asked.append(len(client.log))
        return stop_at_call is not None and len(asked) >= stop_at_call

    try:
        outcome: Any = hand(records, client, errors, stopping)
    except UnicodeEncodeError as exc:
        outcome = ("raised", type(exc).__name__, str(exc))
    except InvalidRecordTimestampError as exc:  # the reasons are worded apart
        outcome = ("raised", type(exc).__name__, exc.timestamp_ms)
    return (
        outcome, client.log, asked,
        errors.count, errors.messages, errors.fatal, errors.retriable,
    )


_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=6) | st.sampled_from(
    ["", "é€😀", "plain"]
)
_BYTES = st.binary(max_size=6) | st.just(CLIENT_REFUSED)
_HEADERS = st.lists(st.tuples(st.text(max_size=3), st.binary(max_size=3)), max_size=2).map(
    tuple
)


@st.composite
def _records(draw: st.DrawFn) -> SourceRecord:
    value = draw(st.none() | _TEXT | _BYTES | st.sampled_from(["bad\ud800", bytearray(b"ba")]))
    return SourceRecord(
        {"p": 0},
        {"o": 0},
        draw(st.sampled_from(["a", "b"])),
        value,
        draw(st.none() | _TEXT | st.binary(max_size=4)),
        draw(st.none() | st.integers(0, 3)),
        draw(_HEADERS),
        timestamp_ms=draw(
            st.none() | st.integers(1, 2**42) | st.sampled_from([-1, 0, -2, -(2**40)])
        ),
    )


@settings(
    derandomize=True, max_examples=300, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    records=st.lists(_records(), max_size=14),
    full_at=st.frozensets(st.integers(1, 20), max_size=4),
    fatal_at_poll=st.none() | st.integers(1, 4),
    stop_at_call=st.none() | st.integers(1, 4),
    run_size=st.integers(1, 5),
)
@example(  # a fatal error found while waiting for room: no record after that one
    records=[SourceRecord({}, {}, "a", b"1"), SourceRecord({}, {}, "a", "2")],
    full_at=frozenset({1}), fatal_at_poll=1, stop_at_call=None, run_size=5,
)
@example(  # a fatal error found while waiting for room for the last record: polled at the end
    records=[SourceRecord({}, {}, "a", None), SourceRecord({}, {}, "a", None)],
    full_at=frozenset({2}), fatal_at_poll=1, stop_at_call=None, run_size=1,
)
@example(  # timestamps: none, Kafka's "none", one, then the epoch, refused after the others
    records=[
        SourceRecord({}, {}, "a", b"1"), SourceRecord({}, {}, "a", b"2", timestamp_ms=-1),
        SourceRecord({}, {}, "a", b"3", headers=(("h", b""),), timestamp_ms=7),
        SourceRecord({}, {}, "a", b"4", timestamp_ms=0),
    ],
    full_at=frozenset({3}), fatal_at_poll=None, stop_at_call=None, run_size=5,
)
@example(  # stopped at the second run's start
    records=[SourceRecord({}, {}, "a", "x")] * 5,
    full_at=frozenset(), fatal_at_poll=None, stop_at_call=1, run_size=2,
)
def test_hands_the_records_as_the_loop_it_replaced(
    records: list[SourceRecord],
    full_at: frozenset[int],
    fatal_at_poll: int | None,
    stop_at_call: int | None,
    run_size: int,
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(produce, "STOP_CHECK_ROWS", run_size)
        expected = _run(reference_hand_records, records, full_at, fatal_at_poll, stop_at_call)
        got = _run(hand_records, records, full_at, fatal_at_poll, stop_at_call)
    assert got == expected
