"""The runtime's pure helpers: batch sizing, slicing, record conversions, client settings."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.api import SourceRecord, TimestampType
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.kernel.gc_tuning import (
    BATCH_GC_THRESHOLDS,
    collector_paused,
    tune_for_batches,
)
from connect_grpc.runtime import range_reader
from connect_grpc.runtime.batching import (
    DEFAULT_INITIAL_RECORDS,
    BatchSizer,
    OffsetRange,
    clip_ranges,
    slice_count,
)
from connect_grpc.runtime.client_settings import (
    member_conf,
    producer_conf,
    reader_conf,
    sink_group_id,
)
from connect_grpc.runtime.kafka_results import ProduceResult
from connect_grpc.runtime.sink_member import incremental_rebalancing
from connect_grpc.runtime.sink_task import subscription
from connect_grpc.runtime.source_batch import DeliveryError, check_delivery
from connect_grpc.runtime.spark import job_tag, spark_conf
from connect_grpc.runtime.spark_rows import (
    InvalidRecordTimestampError,
    group_for_slices,
    latest_offsets,
    next_offsets,
    to_produce_row,
    to_sink_records,
)

pytestmark = pytest.mark.timeout(10)


def worker_config(**props: str) -> WorkerConfig:
    return WorkerConfig.from_properties(
        {"bootstrap.servers": "b:9092", "worker.id": "w1", **props}
    )


def record(file: str, position: int, value: str | None = "v") -> SourceRecord:
    return SourceRecord({"filename": file}, {"position": position}, "t", value)


# batch sizing


def test_batch_size_doubles_while_full_up_to_the_cap() -> None:
    sizer = BatchSizer(initial=1000, maximum=5000)
    sizes = []
    for _ in range(5):
        sizes.append(sizer.size)
        sizer.observe(sizer.size)
    assert sizes == [1000, 2000, 4000, 5000, 5000]


def test_batch_size_halves_when_mostly_empty_but_not_below_initial() -> None:
    sizer = BatchSizer(initial=1000, maximum=50_000)
    for _ in range(4):
        sizer.observe(sizer.size)
    assert sizer.size == 16_000
    sizer.observe(100)
    assert sizer.size == 8000
    sizer.observe(5000)  # more than a quarter: unchanged
    assert sizer.size == 8000
    for _ in range(10):
        sizer.observe(0)
    assert sizer.size == 1000


def test_batch_max_records_caps_initial_and_maximum() -> None:
    sizer = BatchSizer.from_config({"batch.max.records": "10"})
    assert (sizer.size, sizer.maximum) == (10, 10)
    sizer.observe(10)
    assert sizer.size == 10
    assert BatchSizer.from_config({}).size == DEFAULT_INITIAL_RECORDS == 10_000
    with pytest.raises(ValueError):
        BatchSizer.from_config({"batch.max.records": "0"})


def test_slice_count_is_bounded_by_parallelism_and_size() -> None:
    assert slice_count(0, 4) == 1
    assert slice_count(10, 4) == 1
    assert slice_count(12_000, 4, per_slice=5000) == 3
    assert slice_count(1_000_000, 4) == 4


def test_clip_ranges_drops_empty_and_shares_the_budget() -> None:
    ranges = [
        OffsetRange("a", 0, 5, 5),
        OffsetRange("a", 1, 0, 100),
        OffsetRange("b", 0, 10, 12),
    ]
    clipped = clip_ranges(ranges, 10)
    assert clipped == [OffsetRange("a", 1, 0, 5), OffsetRange("b", 0, 10, 12)]
    assert clip_ranges([OffsetRange("a", 0, 3, 3)], 10) == []
    assert clip_ranges([OffsetRange("a", 0, 0, 9), OffsetRange("a", 1, 0, 9)], 1) == [
        OffsetRange("a", 0, 0, 1),
        OffsetRange("a", 1, 0, 1),
    ]


# records


def test_produce_row_encodes_strings_and_keeps_bytes() -> None:
    rec = SourceRecord({"p": 1}, {"o": 2}, "t", "välue", key=b"k", kafka_partition=3,
                       headers=(("h", b"x"),))
    assert to_produce_row(rec) == ("t", 3, b"k", "välue".encode(), (("h", b"x"),), 0)
    assert to_produce_row(record("f", 1, None)) == ("t", -1, None, None, (), 0)


@pytest.mark.parametrize(("timestamp", "as_sent"), [(None, 0), (-1, 0), (1, 1), (2**41, 2**41)])
def test_produce_row_carries_the_timestamp_as_the_client_takes_it(
    timestamp: int | None, as_sent: int
) -> None:
    """None and Kafka's -1 are the producer's time, which confluent_kafka writes for 0."""
    rec = SourceRecord({}, {}, "t", b"v", timestamp_ms=timestamp)
    assert to_produce_row(rec)[5] == as_sent


@pytest.mark.parametrize("timestamp", [0, -2, -(2**40)])
def test_a_timestamp_kafka_cannot_be_given_is_refused_naming_it(timestamp: int) -> None:
    """As Kafka Connect's check: a negative timestamp other than -1 fails the task; 0 too,
    which librdkafka would write as the producer's time."""
    rec = SourceRecord({}, {}, "t", b"v", timestamp_ms=timestamp)
    with pytest.raises(InvalidRecordTimestampError, match=f"Invalid record timestamp {timestamp}:"):
        to_produce_row(rec)


def test_group_for_slices_keeps_each_partition_together_and_in_order() -> None:
    records = [record(f"f{i % 3}", i, str(i)) for i in range(30)]
    groups = group_for_slices(records, 2)
    assert sum(len(g) for g in groups) == 30
    for file_index in range(3):
        holding = [g for g in groups if any(r[3] == str(file_index).encode() for r in g)]
        assert len(holding) == 1
        values = [int(r[3]) for r in holding[0] if int(r[3]) % 3 == file_index]  # type: ignore[arg-type]
        assert values == sorted(values)
    assert group_for_slices(records, 1) == [[to_produce_row(r) for r in records]]


def test_latest_offsets_takes_the_last_offset_of_each_partition() -> None:
    records = [record("a", 1), record("b", 5), record("a", 3), record("b", 7)]
    assert latest_offsets(records) == [
        ({"filename": "a"}, {"position": 3}),
        ({"filename": "b"}, {"position": 7}),
    ]
    assert latest_offsets([]) == []


def test_sink_records_keep_partition_and_offset_order_and_map_timestamps() -> None:
    partitions = [
        ("t", 0, [(6, None, b"a", 100, (), 1), (7, b"k", b"b", 123, (("h", b"v"),), 2)]),
        ("t", 1, [(0, None, b"x", -1, (), 0)]),
    ]
    sink = to_sink_records(partitions)
    assert [(r.kafka_partition, r.kafka_offset) for r in sink] == [(0, 6), (0, 7), (1, 0)]
    assert sink[1].timestamp_ms == 123 and sink[1].key == b"k"
    assert sink[1].headers == (("h", b"v"),)
    assert sink[2].timestamp_ms is None and sink[2].topic == "t"
    # librdkafka's timestamp types, as Kafka names them
    assert [r.timestamp_type for r in sink] == [
        TimestampType.CREATE_TIME,
        TimestampType.LOG_APPEND_TIME,
        TimestampType.NO_TIMESTAMP_TYPE,
    ]


class _Consumed:
    """A consumed message as confluent_kafka hands it over."""

    def __init__(self, offset: int, timestamp: tuple[int, int]) -> None:
        self._offset, self._timestamp = offset, timestamp

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes:
        return b"k"

    def value(self) -> bytes:
        return b"v"

    def timestamp(self) -> tuple[int, int]:
        return self._timestamp

    def headers(self) -> None:
        return None


@pytest.mark.parametrize(
    ("timestamp", "expected_ms", "expected_type"),
    [
        ((confluent_kafka.TIMESTAMP_CREATE_TIME, 5), 5, TimestampType.CREATE_TIME),
        ((confluent_kafka.TIMESTAMP_LOG_APPEND_TIME, 7), 7, TimestampType.LOG_APPEND_TIME),
        ((confluent_kafka.TIMESTAMP_NOT_AVAILABLE, -1), None, TimestampType.NO_TIMESTAMP_TYPE),
    ],
)
def test_both_readers_keep_the_consumed_timestamp_type(
    timestamp: tuple[int, int], expected_ms: int | None, expected_type: TimestampType
) -> None:
    message = _Consumed(3, timestamp)
    in_process = range_reader.sink_record_builder("t", 0)(message)
    [from_executor] = to_sink_records([("t", 0, [range_reader._row(message)])])
    for read in (in_process, from_executor):
        assert (read.timestamp_ms, read.timestamp_type) == (expected_ms, expected_type)
    assert in_process.new_record(value=b"w").timestamp_type is expected_type


def test_next_offsets_are_the_range_ends() -> None:
    ranges = [OffsetRange("t", 0, 0, 5), OffsetRange("u", 2, 3, 9)]
    assert next_offsets(ranges) == {("t", 0): 5, ("u", 2): 9}


def test_check_delivery_fails_on_errors_or_missing_records() -> None:
    check_delivery([ProduceResult(3, 0, []), ProduceResult(2, 0, [])], 5)
    with pytest.raises(DeliveryError, match="boom") as raised:
        check_delivery([ProduceResult(3, 1, ["t[0]: boom"], retriable=False)], 3)
    assert not raised.value.retriable
    with pytest.raises(DeliveryError) as raised:
        check_delivery([ProduceResult(2, 0, [])], 3)
    assert raised.value.retriable


# client and Spark settings


def test_producer_conf_layers_worker_then_connector_overrides() -> None:
    config = worker_config(**{"producer.linger.ms": "20", "producer.acks": "1"})
    conf = producer_conf(config, {"producer.override.acks": "all"}, "c-0")
    assert conf["bootstrap.servers"] == "b:9092"
    assert conf["linger.ms"] == "20"
    assert conf["acks"] == "all"
    assert conf["client.id"] == "c-0"


def test_consumer_confs_never_auto_commit() -> None:
    config = worker_config(**{"consumer.enable.auto.commit": "true"})
    connector = {"consumer.override.group.id": "custom"}
    member = member_conf(config, connector, "c", "c-0")
    reader = reader_conf(config, connector, "c")
    assert sink_group_id("c", {}) == "connect-c"
    assert member["group.id"] == "custom"
    assert member["enable.auto.commit"] == "false"
    assert member["auto.offset.reset"] == "earliest"
    assert reader["group.id"] == "custom-reader"
    assert reader["enable.auto.commit"] == "false"
    assert reader["enable.partition.eof"] == "true"


def test_readers_do_not_long_poll_unless_told_to() -> None:
    assert reader_conf(worker_config(), {}, "c")["fetch.wait.max.ms"] == "10"
    assert member_conf(worker_config(), {}, "c", "c-0").get("fetch.wait.max.ms") is None
    told = worker_config(**{"consumer.fetch.wait.max.ms": "200"})
    assert reader_conf(told, {}, "c")["fetch.wait.max.ms"] == "200"
    override = {"consumer.override.fetch.wait.max.ms": "50"}
    assert reader_conf(told, override, "c")["fetch.wait.max.ms"] == "50"


def test_a_sink_member_holds_its_next_fetch_while_a_record_that_woke_it_waits() -> None:
    """Its fetch only wakes an idle sink: the next one, a long poll, is held back while the
    member pauses, so it does not hold up the batch's ListOffsets; a setting told wins."""
    member = member_conf(worker_config(), {}, "c", "c-0")
    assert member["queued.min.messages"] == "1"
    assert member["fetch.queue.backoff.ms"] == "50"
    told = worker_config(**{"consumer.fetch.queue.backoff.ms": "20"})
    assert member_conf(told, {}, "c", "c-0")["fetch.queue.backoff.ms"] == "20"


def test_readers_do_not_back_off_for_a_second_when_their_queue_is_full() -> None:
    assert reader_conf(worker_config(), {}, "c")["fetch.queue.backoff.ms"] == "10"
    told = worker_config(**{"consumer.fetch.queue.backoff.ms": "1000"})
    assert reader_conf(told, {}, "c")["fetch.queue.backoff.ms"] == "1000"


@pytest.mark.parametrize(
    ("raw", "expected"), [(None, 1000), ("0", 0), (" 250 ", 250), ("2147483647", 2147483647)]
)
def test_local_batch_max_records_is_a_worker_property(raw: str | None, expected: int) -> None:
    props = {} if raw is None else {"task.batch.local.max.records": raw}
    assert worker_config(**props).local_batch_max_records == expected


@pytest.mark.parametrize("raw", ["-1", "1e3", "", "2147483648"])
def test_a_bad_local_batch_max_records_names_the_property(raw: str) -> None:
    with pytest.raises(InvalidArgumentError, match=r"^task\.batch\.local\.max\.records: "):
        worker_config(**{"task.batch.local.max.records": raw})


def test_subscription_from_topics_or_regex() -> None:
    assert subscription({"topics": "a, b,"}) == ["a", "b"]
    assert subscription({"topics.regex": "logs-.*"}) == ["^logs-.*"]
    with pytest.raises(ValueError):
        subscription({})
    with pytest.raises(ValueError):
        subscription({"topics": "a", "topics.regex": "b"})


def test_spark_conf_defaults_pass_through_and_fair() -> None:
    conf = spark_conf(
        worker_config(**{"spark.master": "local[2]", "spark.scheduler.mode": "FIFO",
                         "spark.executor.memory": "2g"})
    )
    assert conf["spark.master"] == "local[2]"
    assert conf["spark.executor.memory"] == "2g"
    assert conf["spark.scheduler.mode"] == "FAIR"
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.pyspark.python"] == sys.executable
    assert spark_conf(worker_config())["spark.master"] == "local[*]"
    custom = spark_conf(worker_config(**{"spark.pyspark.python": str(Path("/x/python"))}))
    assert custom["spark.pyspark.python"] == "/x/python"
    assert job_tag("c", 3) == "connect:c:3"


def test_incremental_rebalancing_detection() -> None:
    assert not incremental_rebalancing({})
    assert incremental_rebalancing({"partition.assignment.strategy": "cooperative-sticky"})
    assert incremental_rebalancing({"group.protocol": "consumer"})


@pytest.fixture
def gc_thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


@pytest.mark.usefixtures("gc_thresholds")
def test_batch_processes_collect_garbage_in_large_steps() -> None:
    gc.set_threshold(700, 10, 10)
    tune_for_batches()
    assert gc.get_threshold() == BATCH_GC_THRESHOLDS
    gc.set_threshold(200_000, 5, 5)  # a process that chose its own keeps it
    tune_for_batches()
    assert gc.get_threshold() == (200_000, 5, 5)


def test_a_paused_collector_runs_again_when_the_last_overlapping_pause_ends() -> None:
    assert gc.isenabled()
    first = collector_paused()
    first.__enter__()
    with collector_paused():  # another thread's read, overlapping the first
        assert not gc.isenabled()
    assert not gc.isenabled()
    first.__exit__(None, None, None)
    assert gc.isenabled()


def test_a_pause_leaves_a_collector_the_process_disabled_disabled() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_pause_ends_when_its_block_raises() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("read failed")
    assert gc.isenabled()
