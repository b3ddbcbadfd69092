"""Rewind a sink by time (issue 26 item 7), without a broker: the validation of record
times, their proto conversion, the lookup over a fake consumer (offsets_for_times, the end
offset past the last record, the caller's deadline, Kafka errors) and the offset manager's
answers, for today's inputs unchanged and for record times."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from google.protobuf.timestamp_pb2 import Timestamp

from connect_grpc.api import convert
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.ctl.cmd_change import parse_time
from connect_grpc.herder import offsets as rules
from connect_grpc.herder.offset_manager import OffsetManager
from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import ConnectorOffset, OffsetsChange
from connect_grpc.kernel.errors import (
    ConnectError,
    FailedPreconditionError,
    InvalidArgumentError,
    UnavailableError,
)
from connect_grpc.runtime.record_times import RecordTimes, ResolvedOffset
from connect_grpc.storage.consumer_groups import ConsumerGroupOffsets
from connect_grpc.storage.file_offsets import FileOffsetStore
from connect_grpc.testing.plugins import read_events
from connect_grpc.v1 import connect_pb2 as pb

SINK = "connect_grpc.testing.plugins.InstrumentedSinkConnector"
SOURCE = "connect_grpc.testing.plugins.InstrumentedSourceConnector"
ALTERED = "The offsets for this connector have been altered successfully"
#: The record timestamps of each partition, by offset.
TIMESTAMPS = {("orders", 0): [100, 200, 300], ("orders", 1): [150, 250], ("order-log", 0): [50]}


def _tp(topic: str, partition: int) -> dict[str, Any]:
    return {"kafka_topic": topic, "kafka_partition": partition}


def _at(topic: str, partition: int, time_ms: int) -> ConnectorOffset:
    return ConnectorOffset(_tp(topic, partition), None, time_ms)


class FakeConsumer:
    """A consumer over ``TIMESTAMPS``: what the lookups ask of confluent-kafka's."""

    def __init__(self, fail: BaseException | None = None, answer_none: bool = False) -> None:
        self.fail = fail
        self.answer_none = answer_none
        self.timeouts: list[float] = []
        self.closed = False
        self.topics = {"orders": 2, "order-log": 1, "__consumer_offsets": 50, "refunds": 1}

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        self._called(timeout)
        return SimpleNamespace(topics={
            name: SimpleNamespace(partitions=dict.fromkeys(range(count)), error=None)
            for name, count in self.topics.items()
        })

    def offsets_for_times(self, partitions: list[Any], timeout: float = -1) -> list[Any]:
        self._called(timeout)
        answer = []
        for tp in partitions:
            stamps = TIMESTAMPS.get((tp.topic, tp.partition), [])
            found = next((i for i, ts in enumerate(stamps) if ts >= tp.offset), -1)
            answer.append(SimpleNamespace(topic=tp.topic, partition=tp.partition, offset=found,
                                          error=None))
        return answer

    def get_watermark_offsets(
        self, partition: Any, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int] | None:
        self._called(timeout)
        assert not cached
        if self.answer_none:
            return None
        return 0, len(TIMESTAMPS.get((partition.topic, partition.partition), []))

    def close(self) -> None:
        self.closed = True

    def _called(self, timeout: float) -> None:
        self.timeouts.append(timeout)
        if self.fail is not None:
            raise self.fail


def _record_times(consumer: FakeConsumer) -> RecordTimes:
    return RecordTimes(lambda name, config: {"group.id": f"{name}-lookup"}, lambda conf: consumer)


# ---- validation ------------------------------------------------------------------------


def test_a_partition_given_a_time_is_parsed_apart_from_the_offsets() -> None:
    given = [_at("orders", 0, 200), ConnectorOffset(_tp("orders", 1), {"kafka_offset": 4})]
    assert rules.parse_sink_offsets(given) == {("orders", 1): 4}
    assert rules.parse_sink_times(given) == {("orders", 0): 200}


@pytest.mark.parametrize(
    ("entry", "field", "text"),
    [
        (ConnectorOffset(_tp("t", 0), {"kafka_offset": 1}, 5), "offsets[0].record_time",
         "either an offset or a record time, not both"),
        (_at("t", 0, -1), "offsets[0].record_time", "must not be before 1970-01-01T00:00:00Z"),
        (ConnectorOffset({"kafka_topic": "t"}, None, 5), "offsets[0].partition.kafka_partition",
         "must contain the keys"),
    ],
)
def test_bad_record_times_name_the_field(entry: ConnectorOffset, field: str, text: str) -> None:
    with pytest.raises(InvalidArgumentError) as excinfo:
        rules.parse_sink_times([entry])
    assert excinfo.value.violations[0].field == field
    assert text in excinfo.value.violations[0].description


def test_offsets_and_one_time_for_all_partitions_exclude_each_other() -> None:
    fields = ("offsets", "all_partitions_record_time")
    with pytest.raises(InvalidArgumentError) as excinfo:
        rules.require_offsets_or_time([_at("t", 0, 1)], 5, *fields)
    assert excinfo.value.violations[0].field == "all_partitions_record_time"
    with pytest.raises(InvalidArgumentError) as excinfo:
        rules.require_offsets_or_time([], -5, *fields)
    assert excinfo.value.violations[0].field == "all_partitions_record_time"
    with pytest.raises(InvalidArgumentError, match="Partitions / offsets need to be provided"):
        rules.require_offsets_or_time([], None, *fields)
    rules.require_offsets_or_time([], 0, *fields)


def test_a_partition_given_a_time_must_exist() -> None:
    with pytest.raises(InvalidArgumentError) as excinfo:
        rules.check_partitions_exist([_at("orders", 2, 5)], {"orders": 2})
    assert excinfo.value.violations[0].field == "offsets[0].partition.kafka_partition"


def test_times_given_for_a_source_connector_are_refused_naming_the_field() -> None:
    with pytest.raises(InvalidArgumentError) as excinfo:
        rules.refuse_times_for_source(
            [ConnectorOffset({"p": 1}, None), ConnectorOffset({"p": 2}, None, 5)], None,
            "offsets", "all_partitions_record_time", "src",
        )
    assert excinfo.value.violations[0].field == "offsets[1].record_time"
    assert "connector src is a source connector" in excinfo.value.message


# ---- proto conversion ------------------------------------------------------------------


def test_a_timestamp_is_read_in_milliseconds_rounded_up() -> None:
    assert convert.record_time_from_pb(Timestamp(seconds=1, nanos=0), "f") == 1000
    assert convert.record_time_from_pb(Timestamp(seconds=1, nanos=1), "f") == 1001
    assert convert.record_time_from_pb(Timestamp(seconds=1, nanos=999_000_000), "f") == 1999
    assert convert.record_time_from_pb(Timestamp(seconds=-1), "f") == -1000
    with pytest.raises(InvalidArgumentError) as excinfo:
        convert.record_time_from_pb(Timestamp(seconds=1, nanos=-1), "offsets[0].record_time")
    assert excinfo.value.violations[0].field == "offsets[0].record_time"


def test_record_times_round_trip_and_today_s_entries_carry_none() -> None:
    entries = [_at("orders", 0, 1_764_064_800_123), ConnectorOffset(_tp("o", 1), None)]
    messages = [convert.connector_offset_to_pb(e) for e in entries]
    assert not messages[1].HasField("record_time")
    assert convert.connector_offsets_from_pb(messages, "offsets") == entries
    request = pb.AlterOffsetsRequest(name="s")
    assert convert.optional_record_time_from_pb(request, "all_partitions_record_time") is None
    request.all_partitions_record_time.FromMilliseconds(7)
    assert convert.optional_record_time_from_pb(request, "all_partitions_record_time") == 7


# ---- the lookup ------------------------------------------------------------------------


def test_each_time_resolves_to_the_first_record_at_or_after_it_or_to_the_end() -> None:
    consumer = FakeConsumer()
    found = _record_times(consumer).resolve(
        "s", {}, {("orders", 0): 200, ("orders", 1): 251, ("order-log", 0): 0}
    )
    assert found == {
        ("orders", 0): ResolvedOffset(1, False),
        ("orders", 1): ResolvedOffset(2, True),
        ("order-log", 0): ResolvedOffset(0, False),
    }
    assert consumer.closed


def test_every_wait_is_bounded_by_the_caller_s_deadline() -> None:
    consumer = FakeConsumer()
    with deadline.scope(3.0):
        _record_times(consumer).resolve("s", {}, {("orders", 1): 999})
    assert len(consumer.timeouts) == 2 and all(0 < t <= 3.0 for t in consumer.timeouts)
    with deadline.scope(0.0), pytest.raises(UnavailableError, match="deadline") as excinfo:
        _record_times(FakeConsumer()).resolve("s", {}, {("orders", 0): 1})
    assert excinfo.value.retry_after_seconds > 0


@pytest.mark.parametrize(
    ("consumer", "error", "text"),
    [
        (FakeConsumer(fail=KafkaException(KafkaError(KafkaError._TIMED_OUT))), UnavailableError,
         "did not answer in time"),
        (FakeConsumer(fail=KafkaException(KafkaError(KafkaError._TRANSPORT))), UnavailableError,
         "unreachable"),
        (FakeConsumer(fail=KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))),
         ConnectError, "Failed to look up the offsets"),
        (FakeConsumer(answer_none=True), UnavailableError, "end offset of orders-1"),
    ],
)
def test_kafka_failures_are_unavailable_when_retrying_may_help(
    consumer: FakeConsumer, error: type[ConnectError], text: str
) -> None:
    with pytest.raises(error, match=text) as excinfo:
        _record_times(consumer).resolve("s", {}, {("orders", 1): 999})
    assert type(excinfo.value) is error
    assert consumer.closed


def test_a_partition_s_own_error_is_reported_with_the_partition() -> None:
    class Refusing(FakeConsumer):
        def offsets_for_times(self, partitions: list[Any], timeout: float = -1) -> list[Any]:
            refused = KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)
            return [SimpleNamespace(topic="orders", partition=0, offset=-1, error=refused)]

    with pytest.raises(UnavailableError, match="orders-0"):
        _record_times(Refusing()).resolve("s", {}, {("orders", 0): 1})


def test_all_partitions_are_the_listed_topics_or_those_the_pattern_matches() -> None:
    times = _record_times(FakeConsumer())
    assert times.partitions("s", {}, ["orders"]) == [("orders", 0), ("orders", 1)]
    # as librdkafka subscribes to "^order": from the name's start, internal topics left out
    assert times.partitions("s", {}, ["^order"]) == [
        ("order-log", 0), ("orders", 0), ("orders", 1)
    ]
    assert times.partitions("s", {}, ["^.*"]) == [
        ("order-log", 0), ("orders", 0), ("orders", 1), ("refunds", 0)
    ]


def test_all_partitions_of_topics_the_cluster_lacks_is_a_failed_precondition() -> None:
    times = _record_times(FakeConsumer())
    with pytest.raises(FailedPreconditionError, match=r"Topic\(s\) nope of the connector's"):
        times.partitions("s", {}, ["orders", "nope"])
    with pytest.raises(FailedPreconditionError, match=r"matches the connector's topics\.regex"):
        times.partitions("s", {}, ["^nothing.*"])


# ---- the offset manager: answers for today's inputs and for times ----------------------


class FakeGroupAdmin:
    """The admin calls of ConsumerGroupOffsets, for an empty group of a cluster with the
    fake consumer's topics; records the offsets written."""

    def __init__(self) -> None:
        self.written: list[list[tuple[str, int, int]]] = []
        self.deleted = 0

    def call(self, op: str, *args: Any) -> Any:
        if op == "describe_group":
            return False
        if op == "list_group_offsets":
            return []
        if op == "partition_counts":
            return {t: n for t, n in FakeConsumer().topics.items() if t in args[0]}
        if op == "alter_group_offsets":
            self.written.append(args[1])
            return []
        if op == "delete_group":
            self.deleted += 1
            return None
        raise AssertionError(op)

    def close(self) -> None:
        return None


@pytest.fixture
def admin() -> FakeGroupAdmin:
    return FakeGroupAdmin()


@pytest.fixture
def manager(tmp_path: Path, admin: FakeGroupAdmin) -> OffsetManager:
    store = FileOffsetStore(tmp_path / "offsets.json")
    store.start()
    return OffsetManager(
        Plugins(include_testing=True), lambda config: store,
        ConsumerGroupOffsets({}, admin=admin), record_times=_record_times(FakeConsumer()),
    )


def _sink(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"name": "s", "connector.class": SINK, "topics": "orders",
            "test.events.file": str(tmp_path / "events.jsonl"), **extra}


def test_today_s_alter_keeps_today_s_answer(
    manager: OffsetManager, admin: FakeGroupAdmin, tmp_path: Path
) -> None:
    change = manager.alter("s", _sink(tmp_path), [
        ConnectorOffset(_tp("orders", 0), {"kafka_offset": 2})
    ])
    assert change == OffsetsChange(ALTERED)
    assert admin.written == [[("orders", 0, 2)]]


def test_a_rewind_of_all_partitions_writes_and_answers_what_each_time_resolved_to(
    manager: OffsetManager, admin: FakeGroupAdmin, tmp_path: Path
) -> None:
    change = manager.alter("s", _sink(tmp_path), [], all_partitions_time_ms=200)
    assert admin.written == [[("orders", 0, 1), ("orders", 1, 1)]]
    assert change.resolved == (
        ConnectorOffset(_tp("orders", 0), {"kafka_offset": 1}),
        ConnectorOffset(_tp("orders", 1), {"kafka_offset": 1}),
    )
    assert change.message == (
        f"{ALTERED}. Offsets resolved from record times: orders-0 at 200 ms -> offset 1; "
        "orders-1 at 200 ms -> offset 1."
    )
    # the plugin's hook saw the resolved offsets, not the times
    [hook] = [e for e in read_events(tmp_path / "events.jsonl") if e["event"] == "alter_offsets"]
    assert sorted(map(tuple, hook["offsets"])) == [("orders", 0, 1), ("orders", 1, 1)]


def test_a_time_past_the_end_resolves_to_the_end_and_mixes_with_offsets(
    manager: OffsetManager, admin: FakeGroupAdmin, tmp_path: Path
) -> None:
    change = manager.alter("s", _sink(tmp_path, topics="orders,order-log"), [
        _at("orders", 1, 10_000), ConnectorOffset(_tp("order-log", 0), {"kafka_offset": 0})
    ])
    assert admin.written == [[("order-log", 0, 0), ("orders", 1, 2)]]
    assert change.resolved == (ConnectorOffset(_tp("orders", 1), {"kafka_offset": 2}),)
    assert change.message.endswith(
        "orders-1 at 10000 ms -> offset 2 (its end: no record at or after that time)."
    )


def test_a_pattern_sink_is_rewound_on_every_topic_it_matches(
    manager: OffsetManager, admin: FakeGroupAdmin, tmp_path: Path
) -> None:
    config = {**_sink(tmp_path), "topics": "", "topics.regex": "order.*"}
    manager.alter("s", config, [], all_partitions_time_ms=0)
    assert admin.written == [[("order-log", 0, 0), ("orders", 0, 0), ("orders", 1, 0)]]


def test_initial_offsets_by_time_replace_the_group_s_offsets(
    manager: OffsetManager, admin: FakeGroupAdmin, tmp_path: Path
) -> None:
    change = manager.set_initial("s", _sink(tmp_path), [], all_partitions_time_ms=250)
    assert admin.deleted == 1
    assert admin.written == [[("orders", 0, 2), ("orders", 1, 1)]]
    assert change.message.startswith(
        "The offsets for this connector have been set successfully. Offsets resolved"
    )


def test_initial_offsets_of_a_source_refuse_a_time_naming_the_field(
    manager: OffsetManager, tmp_path: Path
) -> None:
    config: Mapping[str, str] = {"name": "src", "connector.class": SOURCE}
    with pytest.raises(InvalidArgumentError) as excinfo:
        manager.set_initial("src", config, [], all_partitions_time_ms=5)
    assert excinfo.value.violations[0].field == "initial_offsets.all_partitions_record_time"
    with pytest.raises(InvalidArgumentError) as excinfo:
        manager.alter("src", config, [ConnectorOffset({"p": 0}, None, 5)])
    assert excinfo.value.violations[0].field == "offsets[0].record_time"


def test_a_lookup_that_times_out_writes_nothing(
    tmp_path: Path, admin: FakeGroupAdmin
) -> None:
    timed_out = FakeConsumer(fail=KafkaException(KafkaError(KafkaError._TIMED_OUT)))
    manager = OffsetManager(
        Plugins(include_testing=True), lambda config: FileOffsetStore(tmp_path / "o.json"),
        ConsumerGroupOffsets({}, admin=admin), record_times=_record_times(timed_out),
    )
    with pytest.raises(UnavailableError):
        manager.alter("s", _sink(tmp_path), [], all_partitions_time_ms=5)
    assert admin.written == []


def test_topic_partition_is_what_the_lookup_sends() -> None:
    # the real client takes TopicPartition(topic, partition, time) for offsets_for_times
    sent: list[Any] = []

    class Recording(FakeConsumer):
        def offsets_for_times(self, partitions: list[Any], timeout: float = -1) -> list[Any]:
            sent.extend(partitions)
            return super().offsets_for_times(partitions, timeout)

    _record_times(Recording()).resolve("s", {}, {("orders", 0): 123})
    assert sent == [TopicPartition("orders", 0, 123)]


# ---- ctl: offsets alter --to-time --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-25T10:00:00Z", 1_795_600_800_000),
        ("2026-11-25T11:00:00+01:00", 1_795_600_800_000),
        ("2026-11-25T10:00:00.0001Z", 1_795_600_800_001),
        (" 1764064800000 ", 1_764_064_800_000),
        ("1970-01-01T00:00:00Z", 0),
    ],
)
def test_ctl_reads_rfc_3339_times_and_epoch_milliseconds(text: str, expected: int) -> None:
    assert parse_time(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [("2026-11-25T10:00:00", "has no time zone"), ("yesterday", "neither an RFC 3339 time")],
)
def test_ctl_refuses_a_time_it_cannot_read_without_guessing(text: str, why: str) -> None:
    with pytest.raises(InvalidArgumentError, match=why) as excinfo:
        parse_time(text)
    assert excinfo.value.violations[0].field == "--to-time"
