"""Reading ranges [start, end) of partitions: the function Spark runs on executors
(``read_ranges``), a sink task's own reader on the driver (``DriverReader``), the plain
assigned consumer both keep across batches, and what a reader makes of each message (a row
to pickle, or a SinkRecord).

``read_ranges`` is shipped to executors by reference (this module is importable there
because executors run the worker's own interpreter); it takes only plain dicts and tuples,
and reports a Kafka error in its result rather than raising it (``kafka_results``).

The hottest code of the sink. A batch's ranges are read together (one assignment, one fetch
for all their partitions); each consumed batch is split into runs of one partition's
messages, and each run cut at its range's end by bisection, with per-message calls through
``Message``'s own method descriptors; what a read consumed past a range's end is kept,
within a byte budget, for the next batch's range of the partition.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, NamedTuple

from confluent_kafka import KafkaError, Message

from connect_grpc.connectors.api import TIMESTAMP_TYPES, SinkRecord
from connect_grpc.kernel.gc_tuning import collector_paused
from connect_grpc.kernel.kafka_clients import kafka_error_of, with_client_log
from connect_grpc.runtime.batching import OffsetRange
from connect_grpc.runtime.client_cache import CLIENTS, DriverClient, prepare_executor
from connect_grpc.runtime.kafka_results import FLUSH_SLICE_S, KafkaFailure, R, RangeResult, never
from connect_grpc.runtime.spark_rows import ConsumedRow

#: Seconds a reader may go without progress before the batch fails (retriable).
READ_STALL_TIMEOUT_S = 30.0
#: A read of several ranges keeps, of a partition's messages consumed past its range's
#: end, at most this many times the range's size, for the ranges of the next reads.
AHEAD_RANGES = 4
#: ... and, of all its partitions together, at most this many bytes: the messages' values,
#: and AHEAD_MESSAGE_BYTES more for each message's objects (a message, its key and value).
AHEAD_MAX_BYTES = 64 * 1024 * 1024
AHEAD_MESSAGE_BYTES = 256


class _CachedConsumer:
    """A plain assigned consumer kept across batches (each range assigns its partition)."""

    def __init__(self, conf: Mapping[str, str]) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(with_client_log(conf, conf.get("client.id", "reader")))
        #: What its last read consumed past its ranges' ends, by partition (``_Ahead``).
        self.ahead: dict[tuple[str, int], _Ahead] = {}

    def release(self) -> bool:
        """Unassigns the last range's partition, so the idle consumer fetches nothing;
        False if the client failed (it is then to be dropped)."""
        from confluent_kafka import KafkaException

        try:
            self.consumer.unassign()
        except KafkaException:
            return False
        return True

    def close(self) -> None:
        self.consumer.close()


def _row(msg: Any) -> ConsumedRow:
    ts_type, ts = msg.timestamp()
    headers = msg.headers()
    return (
        msg.offset(),
        msg.key(),
        msg.value(),
        ts if ts_type else -1,
        tuple((k, b"" if v is None else v) for k, v in headers) if headers else (),
        ts_type,
    )


def _tuple_rows(topic: str, partition: int) -> Callable[[Any], ConsumedRow]:
    return _row


def sink_record_builder(topic: str, partition: int) -> Callable[[Any], SinkRecord]:
    """Builds each message's SinkRecord at once (in-process readers: nothing to pickle)."""

    def record(msg: Any) -> SinkRecord:
        ts_type, ts = msg.timestamp()
        headers = msg.headers()
        return SinkRecord(
            topic,
            partition,
            msg.offset(),
            msg.key(),
            msg.value(),
            ts if ts_type and ts >= 0 else None,
            tuple((k, b"" if v is None else v) for k, v in headers) if headers else (),
            None,
            None,
            TIMESTAMP_TYPES[ts_type],
        )

    return record


def _stalled(rng: OffsetRange, reached: int) -> KafkaFailure:
    return KafkaFailure(
        KafkaError._TIMED_OUT,
        "_TIMED_OUT",
        True,
        f"no progress reading {rng.topic}[{rng.partition}] at offset {reached} "
        f"(range end {rng.end}) for {READ_STALL_TIMEOUT_S}s",
    )


def _interrupted(rng: OffsetRange, reached: int) -> KafkaFailure:
    return KafkaFailure(
        KafkaError._INTR,
        "_INTR",
        True,
        f"stopped reading {rng.topic}[{rng.partition}] at offset {reached}: the task is stopping",
    )


def _read_range(
    consumer: Any,
    rng: OffsetRange,
    make_row: Callable[[str, int], Callable[[Any], R]],
    stopping: Callable[[], bool] = never,
) -> RangeResult[R]:
    """Reads [start, end) of one partition; stops early at the partition's (stable) end.
    Each consumed batch is taken as ``_Reading.take`` takes a run of a read of several."""
    from confluent_kafka import TopicPartition

    consumer.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
    reading = _Reading(rng, make_row(rng.topic, rng.partition))
    last_progress = time.monotonic()
    while not reading.done:
        if stopping():
            reading.failure = _interrupted(rng, reading.reached)
            break
        messages = consumer.consume(
            num_messages=min(rng.end - reading.reached, 10_000), timeout=FLUSH_SLICE_S
        )
        if messages:
            reading.take(messages, consumer)
            last_progress = time.monotonic()
        elif time.monotonic() - last_progress > READ_STALL_TIMEOUT_S:
            reading.failure = _stalled(rng, reading.reached)
            break
    return reading.result()


def _has_event(messages: list[Any]) -> bool:
    """Whether any of the messages is an event (an error, a partition's end included); the
    errors are asked for and told from None by ``map`` rather than by a loop (a KafkaError
    cannot be compared with None: only ``is`` tells them apart)."""
    errors = map(_MESSAGE_ERROR, messages)
    return any(map(operator.is_not, errors, itertools.repeat(None)))


def _cut(run: list[Any], end: int, checked: bool = False) -> int | None:
    """Where a run of one partition's messages reaches ``end``: the index of its first
    message at or past it (the run's length when none is), found by bisection (a
    partition's offsets only grow); None when an event comes first, or is the first at or
    past ``end`` (the run is then taken a message at a time). ``checked``: the run is known
    to hold no event."""
    if _offset_of(run[-1]) < end:
        cut = len(run)
    else:
        # on any list, bisect_left ends between an offset below ``end`` and one at or past
        # it; with no event before it, that is the first message at or past ``end``
        cut = bisect.bisect_left(run, end, key=_offset_of)
        if cut < len(run) and run[cut].error() is not None:
            return None
    if not checked and _has_event(run[:cut] if cut < len(run) else run):
        return None
    return cut


def _offset_of(message: Any) -> int:
    """A message's offset; -1 for an event that has none (its ``offset()`` is None)."""
    offset: int | None = message.offset()
    return -1 if offset is None else offset


#: Per-message calls of a consumed batch, through Message's own method descriptors rather
#: than ``operator.methodcaller``, which looks the method up by name on every call: the
#: event check of 200k messages 86 → 28 ns a message, their split into runs 88 → 37.
_MESSAGE_ERROR = Message.error


def _read_or_fail(
    consumer: Any,
    rng: OffsetRange,
    make_row: Callable[[str, int], Callable[[Any], R]],
    stopping: Callable[[], bool] = never,
) -> RangeResult[R]:
    from confluent_kafka import KafkaException

    try:
        return _read_range(consumer, rng, make_row, stopping)
    except KafkaException as exc:
        error = kafka_error_of(exc)
        if error is None:
            raise
        failure = KafkaFailure.of(error, f"{rng.topic}[{rng.partition}]")
        return RangeResult(rng.topic, rng.partition, rng.start, [], failure)


def _read_each(
    cached: _CachedConsumer,
    ranges: Iterable[OffsetRange],
    make_row: Callable[[str, int], Callable[[Any], R]],
    stopping: Callable[[], bool] = never,
) -> tuple[list[RangeResult[R]], bool]:
    """Reads the ranges (several at once, ``_read_together``); returns the results and
    whether the consumer is fit for the next batch (nothing failed, and it let go of its
    partitions)."""
    ranges = list(ranges)
    if len(ranges) == 1 and not cached.ahead:
        results = [_read_or_fail(cached.consumer, ranges[0], make_row, stopping)]
    else:
        results = _read_together_or_fail(cached.consumer, ranges, make_row, stopping, cached.ahead)
    if any(result.failure is not None for result in results):
        return results, False
    return results, cached.release()


class _Ahead(NamedTuple):
    """A partition's messages a read consumed past its range's end, in order from ``start``
    (that end), for the next batch's range of the partition, which starts there."""

    start: int
    messages: list[Any]


class _AheadBudget:
    """The bytes a read may still keep past its ranges' ends, all partitions together."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = AHEAD_MAX_BYTES

    def fit(self, messages: list[Any]) -> list[Any]:
        """The longest head of ``messages`` that fits, taken from what is left."""
        size = sum(map(len, messages)) + AHEAD_MESSAGE_BYTES * len(messages)
        if size <= self.left:
            self.left -= size
            return messages
        fitting = []
        for msg in messages:
            size = len(msg) + AHEAD_MESSAGE_BYTES
            if size > self.left:
                break
            self.left -= size
            fitting.append(msg)
        self.left = 0
        return fitting


class _Reading(Generic[R]):
    """One range of a read of several at once: what it has read, and whether it is done."""

    __slots__ = (
        "budget", "done", "failure", "keeping", "past", "range", "reached", "row", "rows",
        "whole",
    )

    def __init__(
        self, rng: OffsetRange, row: Callable[[Any], R], budget: _AheadBudget | None = None
    ) -> None:
        self.range = rng
        self.row = row
        self.rows: list[R] = []
        self.reached = rng.start
        self.done = rng.end <= rng.start
        self.failure: KafkaFailure | None = None
        #: Whether the range was read to its end (not cut short by its partition's end).
        self.whole = self.done
        #: Its partition's messages consumed past the range's end, in order (``_Ahead``).
        self.past: list[Any] = []
        self.budget = budget if budget is not None else _AheadBudget()
        #: False once something was not kept: what comes after would not continue ``past``.
        self.keeping = True

    def keep_past(self, messages: list[Any]) -> None:
        """Keeps messages consumed after the range was read whole, up to the first error
        event, ``AHEAD_RANGES`` times the range's size and the read's byte budget."""
        if not self.whole or not self.keeping:
            return
        room = AHEAD_RANGES * max(1, self.range.size) - len(self.past)
        head = messages[: max(0, room)]
        if _has_event(head):
            head = list(itertools.takewhile(lambda m: m.error() is None, head))
        kept = self.budget.fit(head)
        self.past.extend(kept)
        self.keeping = len(kept) == len(messages)

    def take(self, run: list[Any], consumer: Any, checked: bool = False) -> None:
        """Takes a run of its partition's messages, as ``_read_range`` takes a batch
        (``checked``: the run is known to hold no event, as what a read kept)."""
        rng = self.range
        cut = _cut(run, rng.end, checked)
        if cut is None:
            self._take_one_by_one(run, consumer)
        elif cut == len(run):
            self.rows.extend(map(self.row, run))
            self.reached = run[-1].offset() + 1
            self.whole = self.reached >= rng.end
        else:
            self.rows.extend(map(self.row, run[:cut]))
            self.reached = rng.end
            self.whole = True
            self.keep_past(run[cut:])
        self.done = self.done or self.failure is not None or self.whole

    def _take_one_by_one(self, run: list[Any], consumer: Any) -> None:
        from confluent_kafka import TopicPartition

        rng = self.range
        for index, msg in enumerate(run):
            error = msg.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    self.failure = KafkaFailure.of(error, f"{rng.topic}[{rng.partition}]")
                    return
                tp = TopicPartition(rng.topic, rng.partition)
                position = consumer.position([tp])[0].offset
                self.reached = max(self.reached, min(position, rng.end))
                self.done = True
                return
            offset = msg.offset()
            if offset >= rng.end:
                self.reached = rng.end
                self.whole = True
                self.keep_past(run[index:])
                return
            self.rows.append(self.row(msg))
            self.reached = offset + 1
        self.whole = self.reached >= rng.end

    def result(self) -> RangeResult[R]:
        rng = self.range
        if self.failure is not None:
            return RangeResult(rng.topic, rng.partition, self.reached, [], self.failure)
        return RangeResult(rng.topic, rng.partition, self.reached, self.rows)


_PARTITION = Message.partition
_TOPIC = Message.topic


def _runs(messages: list[Any], one_topic: bool) -> Iterator[list[Any]]:
    """A consumed batch in runs of one partition's messages (a fetch answer's messages of
    one partition come together), in order. ``one_topic``: the consumer is assigned
    partitions of one topic only, so a partition's number tells it."""
    for _, same_number in itertools.groupby(messages, _PARTITION):
        run = list(same_number)
        if one_topic or len(set(map(_TOPIC, run))) == 1:
            yield run
        else:  # partitions of the same number of different topics, one after the other
            for _, same_topic in itertools.groupby(run, _TOPIC):
                yield list(same_topic)


def _read_together(
    consumer: Any,
    ranges: list[OffsetRange],
    make_row: Callable[[str, int], Callable[[Any], R]],
    stopping: Callable[[], bool] = never,
    ahead: dict[tuple[str, int], _Ahead] | None = None,
) -> list[RangeResult[R]]:
    """Reads several ranges at once: all their partitions assigned together, so that one
    fetch asks for all of them, rather than a range at a time, each paying a fetch's start
    (a FileStreamSink of a 50-partition topic, steady: 163k records/s a range at a time,
    326k together). A partition whose range is done is paused (and resumed before this returns:
    a paused partition would stay so in the next batch's assignment). Each range ends as
    ``_read_range`` ends it; a failure ends the read.

    ``ahead`` carries from one read to the next what a read consumed past a range's end
    (a fetch brings up to ``max.partition.fetch.bytes`` of each partition, and one
    partition's messages come in a run: reaching the last partitions' records goes through
    the first ones' surplus). A range that starts where such messages start takes them
    first, and its partition is read from after them, or not at all."""
    from confluent_kafka import TopicPartition

    carried = dict(ahead or {})
    if ahead is not None:
        ahead.clear()
    budget = _AheadBudget()
    readings = [_Reading(rng, make_row(rng.topic, rng.partition), budget) for rng in ranges]
    reading_of = {(r.range.topic, r.range.partition): r for r in readings}
    one_topic = len({rng.topic for rng in ranges}) == 1
    for key, reading in reading_of.items():
        kept = carried.get(key)
        if kept is not None and kept.start == reading.range.start and not reading.done:
            reading.take(kept.messages, consumer, checked=True)  # no event: consumer not asked
    unread = [r for r in readings if not r.done]
    if unread:
        consumer.assign(
            [TopicPartition(r.range.topic, r.range.partition, r.reached) for r in unread]
        )
    paused: list[Any] = []
    try:
        last_progress = time.monotonic()
        while True:
            open_ = [r for r in readings if not r.done]
            if not open_:
                break
            if stopping():
                for reading in open_:
                    reading.failure = _interrupted(reading.range, reading.reached)
                break
            left = sum(r.range.end - r.reached for r in open_)
            messages = consumer.consume(num_messages=min(left, 10_000), timeout=FLUSH_SLICE_S)
            if messages:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > READ_STALL_TIMEOUT_S:
                for reading in open_:
                    reading.failure = _stalled(reading.range, reading.reached)
                break
            if _take_runs(consumer, messages, reading_of, open_[0], paused, one_topic):
                break
    finally:
        if paused:
            consumer.resume(paused)
    if ahead is not None and all(r.failure is None for r in readings):
        for key, reading in reading_of.items():
            if reading.past:
                ahead[key] = _Ahead(reading.reached, reading.past)
    return [reading.result() for reading in readings]


def _take_runs(
    consumer: Any,
    messages: list[Any],
    reading_of: Mapping[tuple[str, int], _Reading[R]],
    first_open: _Reading[R],
    paused: list[Any],
    one_topic: bool,
) -> bool:
    """Hands each run of a batch to its range; a range done is paused. True when a range
    failed (an error that names no range of the read fails the first open one)."""
    from confluent_kafka import TopicPartition

    for run in _runs(messages, one_topic):
        first = run[0]
        reading = reading_of.get((first.topic(), first.partition()))
        if reading is None:
            error = next((m.error() for m in run if m.error() is not None), None)
            if error is None or error.code() == KafkaError._PARTITION_EOF:
                continue
            first_open.failure = KafkaFailure.of(error, "the consumer")
            return True
        if reading.done:
            reading.keep_past(run)  # fetched before its partition was paused
            continue
        reading.take(run, consumer)
        if reading.failure is not None:
            return True
        if reading.done:
            paused.append(TopicPartition(reading.range.topic, reading.range.partition))
            consumer.pause(paused[-1:])
    return False


def _read_together_or_fail(
    consumer: Any, ranges: list[OffsetRange], *args: Any
) -> list[RangeResult[Any]]:
    """``_read_together``, a client error (raised) a failure of every range."""
    from confluent_kafka import KafkaException

    try:
        return _read_together(consumer, ranges, *args)
    except KafkaException as exc:
        error = kafka_error_of(exc)
        if error is None:
            raise
        failure = KafkaFailure.of(error, ", ".join(f"{r.topic}[{r.partition}]" for r in ranges))
        return [RangeResult(r.topic, r.partition, r.start, [], failure) for r in ranges]


def read_ranges(
    conf: Mapping[str, str], ranges: Iterable[OffsetRange]
) -> Iterator[RangeResult[ConsumedRow]]:
    """Reads each range of this Spark partition with this process's plain assigned
    consumer for ``conf``; stops at the first failed range (and drops the consumer)."""
    prepare_executor()
    cached: _CachedConsumer = CLIENTS.get(_CachedConsumer, conf)
    try:
        results, fit = _read_each(cached, ranges, _tuple_rows)
    except BaseException:
        CLIENTS.drop(cached)
        raise
    if not fit:
        CLIENTS.drop(cached)
    yield from results


class DriverReader(DriverClient[_CachedConsumer]):
    """A sink task's own plain assigned consumer on the driver."""

    def __init__(self, conf: Mapping[str, str]) -> None:
        super().__init__(_CachedConsumer, conf)

    def read(
        self, ranges: Iterable[OffsetRange], stopping: Callable[[], bool]
    ) -> list[RangeResult[SinkRecord]]:
        """Reads each range as SinkRecords; stops at the first failed one (and drops the
        consumer). The cyclic collector is paused meanwhile (``kernel.gc_tuning``)."""
        with collector_paused():
            results, fit = _read_each(self._client(), ranges, sink_record_builder, stopping)
        if not fit:
            self.close()
        return results
