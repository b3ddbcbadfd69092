"""Reading several ranges at once (``range_reader._read_together``) with a scripted consumer:
each range ends as a read of it alone would end it, whatever order the partitions' messages
come in; a partition whose range is done is paused, and resumed before the read returns.
(The same against a real broker: tests/integration/test_runtime.py's multi-partition sinks
and tests/integration/test_read_together.py.)"""

from __future__ import annotations

import functools
import random
from typing import Any

import pytest
from confluent_kafka import KafkaError, Message, TopicPartition

from connect_grpc.runtime import kafka_results, range_reader
from connect_grpc.runtime.batching import OffsetRange

EOF = KafkaError(KafkaError._PARTITION_EOF)


def _m(partition: int, offset: int, topic: str = "t", error: KafkaError | None = None) -> Any:
    return Message(
        topic=topic, partition=partition, offset=offset, key=b"k",
        value=f"{topic}/{partition}/{offset}".encode(), error=error,
        timestamp=(1, 1_700_000_000_000),
    )


class _ScriptedConsumer:
    """Answers each consume with the next batch of its script; remembers what it was told."""

    def __init__(self, batches: list[list[Any]], positions: dict[tuple[str, int], int]) -> None:
        self._batches = list(batches)
        self._positions = positions
        self.assigned: list[tuple[str, int, int]] = []
        self.paused: list[tuple[str, int]] = []
        self.resumed: list[tuple[str, int]] = []
        self.asked_for: list[int] = []

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = [(tp.topic, tp.partition, tp.offset) for tp in partitions]

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        self.asked_for.append(num_messages)
        return self._batches.pop(0) if self._batches else []

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [
            TopicPartition(tp.topic, tp.partition, self._positions[(tp.topic, tp.partition)])
            for tp in partitions
        ]

    def pause(self, partitions: list[TopicPartition]) -> None:
        self.paused += [(tp.topic, tp.partition) for tp in partitions]

    def resume(self, partitions: list[TopicPartition]) -> None:
        self.resumed += [(tp.topic, tp.partition) for tp in partitions]


read = functools.partial(range_reader._read_together, make_row=range_reader.sink_record_builder)


def _values(result: kafka_results.RangeResult[Any]) -> list[str]:
    return [row.value.decode() for row in result.rows]


def test_ranges_read_together_end_as_each_would_alone_and_their_done_partitions_pause() -> None:
    consumer = _ScriptedConsumer(
        [
            # runs of each partition, interleaved; partition 0's last offsets go past its end
            [_m(0, 10), _m(0, 11), _m(1, 5), _m(2, 0)],
            [_m(1, 6), _m(0, 12), _m(0, 13), _m(0, 14), _m(2, 1)],
            # partition 0 fetched before its pause: ignored; partition 2 reaches its end
            [_m(0, 15), _m(2, 2, error=EOF), _m(1, 7)],
        ],
        positions={("t", 2): 2},
    )
    ranges = [OffsetRange("t", 0, 10, 13), OffsetRange("t", 1, 5, 8), OffsetRange("t", 2, 0, 9)]

    results = read(consumer, ranges)

    assert consumer.assigned == [("t", 0, 10), ("t", 1, 5), ("t", 2, 0)]
    assert [(r.partition, r.next_offset, r.failure) for r in results] == [
        (0, 13, None), (1, 8, None), (2, 2, None),
    ]
    assert [_values(r) for r in results] == [
        ["t/0/10", "t/0/11", "t/0/12"], ["t/1/5", "t/1/6", "t/1/7"], ["t/2/0", "t/2/1"],
    ]
    assert [row.kafka_offset for row in results[1].rows] == [5, 6, 7]
    assert consumer.paused == [("t", 0), ("t", 2), ("t", 1)]
    assert sorted(consumer.resumed) == sorted(consumer.paused)
    # it asks for no more than what is left of the open ranges
    assert consumer.asked_for[0] == 3 + 3 + 9


def test_a_partition_number_shared_by_two_topics_is_told_apart() -> None:
    consumer = _ScriptedConsumer(
        [[_m(0, 0, "a"), _m(0, 0, "b"), _m(0, 1, "a"), _m(0, 1, "b")]], positions={}
    )
    results = read(consumer, [OffsetRange("a", 0, 0, 2), OffsetRange("b", 0, 0, 2)])
    assert [_values(r) for r in results] == [["a/0/0", "a/0/1"], ["b/0/0", "b/0/1"]]


def test_an_error_fails_its_range_and_ends_the_read() -> None:
    transport = KafkaError(KafkaError._TRANSPORT)
    consumer = _ScriptedConsumer(
        [[_m(0, 0), _m(1, 0)], [_m(1, 1, error=transport), _m(0, 1)], [_m(0, 2)]], positions={}
    )
    results = read(consumer, [OffsetRange("t", 0, 0, 3), OffsetRange("t", 1, 0, 3)])
    assert results[1].failure is not None and results[1].failure.name == "_TRANSPORT"
    assert (results[1].next_offset, results[1].rows) == (1, [])
    assert results[0].failure is None and results[0].next_offset < 3, "the read ended there"
    with_failure = range_reader._CachedConsumer.__new__(range_reader._CachedConsumer)
    with_failure.consumer = _ScriptedConsumer([[_m(1, 0, error=transport)]], positions={})
    with_failure.ahead = {}
    _, fit = range_reader._read_each(
        with_failure, [OffsetRange("t", 0, 0, 3), OffsetRange("t", 1, 0, 3)],
        range_reader.sink_record_builder,
    )
    assert not fit, "a consumer that failed a read is dropped"


def test_an_error_of_the_whole_consumer_fails_the_read() -> None:
    down = KafkaError(KafkaError._ALL_BROKERS_DOWN)
    consumer = _ScriptedConsumer([[_m(0, 0)], [Message(offset=-1, error=down)]], positions={})
    results = read(consumer, [OffsetRange("t", 0, 0, 3), OffsetRange("t", 1, 0, 3)])
    failures = [r.failure for r in results if r.failure is not None]
    assert [f.name for f in failures] == ["_ALL_BROKERS_DOWN"]


def test_a_read_of_several_ends_when_the_task_stops_and_resumes_what_it_paused() -> None:
    consumer = _ScriptedConsumer([[_m(0, 0)], [], []], positions={})
    asked = iter([False, False, True])
    ranges = [OffsetRange("t", 0, 0, 1), OffsetRange("t", 1, 0, 3)]
    results = read(consumer, ranges, stopping=lambda: next(asked))
    assert results[0].failure is None and _values(results[0]) == ["t/0/0"]
    assert results[1].failure is not None and results[1].failure.name == "_INTR"
    assert consumer.paused == [("t", 0)] and consumer.resumed == [("t", 0)]


def _cached(batches: list[list[Any]]) -> Any:
    cached = range_reader._CachedConsumer.__new__(range_reader._CachedConsumer)
    cached.consumer = _ScriptedConsumer(batches, positions={})
    cached.consumer.unassign = lambda: None
    cached.ahead = {}
    return cached


def _read_each(cached: Any, ranges: list[OffsetRange]) -> list[kafka_results.RangeResult[Any]]:
    results, fit = range_reader._read_each(cached, ranges, range_reader.sink_record_builder)
    assert fit
    return results


def test_what_a_read_consumed_past_a_range_serves_the_next_range_that_starts_there() -> None:
    cached = _cached([
        # partition 0 fetched far past its range (2 records), partition 1 just to its end
        [_m(0, 0), _m(0, 1), _m(0, 2), _m(0, 3), _m(0, 4), _m(1, 0)],
        [_m(1, 1)],
    ])
    first = _read_each(cached, [OffsetRange("t", 0, 0, 2), OffsetRange("t", 1, 0, 2)])
    assert [_values(r) for r in first] == [["t/0/0", "t/0/1"], ["t/1/0", "t/1/1"]]
    kept = {key: (a.start, [m.offset() for m in a.messages]) for key, a in cached.ahead.items()}
    assert kept == {("t", 0): (2, [2, 3, 4])}
    # the next batch: partition 0's range is all in what was kept (never assigned), the
    # rest of what was kept is kept again; partition 1 is read from the consumer
    cached.consumer._batches = [[_m(1, 2), _m(1, 3)]]
    second = _read_each(cached, [OffsetRange("t", 0, 2, 4), OffsetRange("t", 1, 2, 4)])
    assert [_values(r) for r in second] == [["t/0/2", "t/0/3"], ["t/1/2", "t/1/3"]]
    assert [(r.next_offset, r.failure) for r in second] == [(4, None), (4, None)]
    assert cached.consumer.assigned == [("t", 1, 2)]
    assert {key: a.start for key, a in cached.ahead.items()} == {("t", 0): 4}
    # a range that starts elsewhere (the batch before was not committed) reads afresh, one
    # range alone included, and what was kept is let go
    cached.consumer._batches = [[_m(0, 2), _m(0, 3)]]
    again = _read_each(cached, [OffsetRange("t", 0, 2, 4)])
    assert _values(again[0]) == ["t/0/2", "t/0/3"]
    assert cached.consumer.assigned == [("t", 0, 2)] and cached.ahead == {}


def test_a_range_served_partly_by_what_was_kept_reads_the_rest_from_after_it() -> None:
    cached = _cached([[_m(0, 0), _m(0, 1), _m(0, 2), _m(1, 0)]])
    _read_each(cached, [OffsetRange("t", 0, 0, 1), OffsetRange("t", 1, 0, 1)])
    assert [m.offset() for m in cached.ahead[("t", 0)].messages] == [1, 2]
    cached.consumer._batches = [[_m(0, 3), _m(0, 4)]]
    results = _read_each(cached, [OffsetRange("t", 0, 1, 5)])
    assert _values(results[0]) == ["t/0/1", "t/0/2", "t/0/3", "t/0/4"]
    assert cached.consumer.assigned == [("t", 0, 3)]


def test_what_is_kept_past_a_range_is_bounded_and_stops_at_an_event() -> None:
    past = [_m(0, offset) for offset in range(1, 1 + 10 * range_reader.AHEAD_RANGES)]
    cached = _cached([[_m(0, 0), *past, _m(1, 0), _m(1, 1, error=EOF), _m(1, 2)]])
    cached.consumer._positions[("t", 1)] = 1
    _read_each(cached, [OffsetRange("t", 0, 0, 1), OffsetRange("t", 1, 0, 9)])
    kept = cached.ahead[("t", 0)].messages
    assert len(kept) == range_reader.AHEAD_RANGES * 1 and kept[0].offset() == 1
    assert ("t", 1) not in cached.ahead, "a range cut short by its partition's end keeps nothing"


def test_a_failed_read_keeps_nothing() -> None:
    transport = KafkaError(KafkaError._TRANSPORT)
    cached = _cached([[_m(0, 0), _m(0, 1), _m(1, 0, error=transport)]])
    results, fit = range_reader._read_each(
        cached,
        [OffsetRange("t", 0, 0, 1), OffsetRange("t", 1, 0, 2)],
        range_reader.sink_record_builder,
    )
    assert not fit and results[1].failure is not None and cached.ahead == {}


def test_what_is_kept_past_the_ranges_of_a_read_fits_its_byte_budget_without_a_gap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    size = len(_m(0, 1)) + range_reader.AHEAD_MESSAGE_BYTES  # each message here the same
    monkeypatch.setattr(range_reader, "AHEAD_MAX_BYTES", 3 * size)
    cached = _cached([
        # partition 0: two kept, then partition 1: one kept of two, and the budget is
        # spent: nothing is kept after it (partition 0's later run included)
        [_m(0, 0), _m(0, 1), _m(0, 2), _m(1, 0), _m(1, 1), _m(1, 2)],
        [_m(2, 0), _m(0, 3)],
    ])
    ranges = [OffsetRange("t", 0, 0, 1), OffsetRange("t", 1, 0, 1), OffsetRange("t", 2, 0, 1)]
    _read_each(cached, ranges)
    kept = {key: [m.offset() for m in a.messages] for key, a in cached.ahead.items()}
    assert kept == {("t", 0): [1, 2], ("t", 1): [1]}


def test_a_partition_keeps_nothing_after_an_event_it_did_not_keep() -> None:
    # an error event (here a reset's) and then messages from elsewhere in the partition:
    # the next range must not take them as following what was kept
    reset = KafkaError(KafkaError._AUTO_OFFSET_RESET)
    cached = _cached([
        [_m(0, 0), _m(0, 1), _m(0, 2, error=reset)],
        [_m(0, 90), _m(1, 0)],
    ])
    _read_each(cached, [OffsetRange("t", 0, 0, 1), OffsetRange("t", 1, 0, 1)])
    assert [m.offset() for m in cached.ahead[("t", 0)].messages] == [1]


def _offsets(messages: list[Any]) -> list[int]:
    return [m.offset() for m in messages]


def test_a_run_is_cut_at_its_first_message_at_or_past_the_end_unless_an_event_comes_first() -> None:
    run = [_m(0, offset) for offset in (5, 6, 9, 12, 13)]  # gaps, as compaction leaves
    assert range_reader._cut(run, 14) == 5
    assert range_reader._cut(run, 10) == 3 and range_reader._cut(run, 9) == 2
    assert range_reader._cut(run, 5) == 0
    reset = KafkaError(KafkaError._AUTO_OFFSET_RESET)
    assert range_reader._cut([*run, _m(0, 14, error=EOF)], 10) == 3, "an event past the cut"
    assert range_reader._cut([*run[:3], _m(0, 10, error=EOF)], 10) is None, "the end an event"
    assert range_reader._cut([run[0], _m(0, -1001, error=reset), *run[1:]], 10) is None
    assert range_reader._cut([*run[:3], _m(0, -1001, error=reset), *run[3:]], 10) is None
    assert range_reader._cut([*run, _m(0, -1001, error=reset)], 99) is None
    assert range_reader._cut(run, 99, checked=True) == 5


def test_a_run_taken_whole_or_cut_gives_what_a_message_at_a_time_gives() -> None:
    chooser = random.Random(2026)
    reset = KafkaError(KafkaError._AUTO_OFFSET_RESET)
    for _ in range(400):
        offsets = sorted(chooser.sample(range(100), chooser.randint(1, 30)))
        run = [_m(0, offset) for offset in offsets]
        if chooser.random() < 0.3:
            run.append(_m(0, offsets[-1] + 1, error=EOF))
        if chooser.random() < 0.2:
            run.insert(chooser.randrange(len(run) + 1), _m(0, -1001, error=reset))
        start = chooser.randint(0, offsets[0])
        rng = OffsetRange("t", 0, start, chooser.randint(start, 110))
        consumer = _ScriptedConsumer([], positions={("t", 0): offsets[-1] + 1})
        fast, slow = (
            range_reader._Reading(rng, range_reader.sink_record_builder("t", 0)) for _ in "ab"
        )
        fast.take(run, consumer)
        slow._take_one_by_one(run, consumer)
        slow.done = slow.done or slow.failure is not None or slow.whole
        assert (_offsets(fast.past), fast.reached, fast.whole, fast.done, fast.failure) == (
            _offsets(slow.past), slow.reached, slow.whole, slow.done, slow.failure
        ), (offsets, rng)
        assert [r.kafka_offset for r in fast.rows] == [r.kafka_offset for r in slow.rows]
