"""The record pipeline on a batch (reference §1.1-§1.3, §1.6, §1.7): stage order, predicates,
drops and tolerated failures, the dead-letter queue's records and headers, the
ErrantRecordReporter; with real (test) converters and transformations, a fake producer."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from connect_grpc.connectors.api import SinkRecord, SinkTask, SourceRecord
from connect_grpc.data.converters.json import JsonConverter
from connect_grpc.data.converters.simple_header import SimpleHeaderConverter
from connect_grpc.data.errors import DataError, RetriableError
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.plugins import Converter, HeaderConverter, SchemaAndValue, Transformation
from connect_grpc.data.schema import (
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    SchemaBuilder,
)
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms._support import Fixed, FromField, then_plan
from connect_grpc.data.transforms.hoist_field import HoistFieldValue
from connect_grpc.data.transforms.insert_field import InsertFieldValue
from connect_grpc.data.transforms.mask_field import MaskFieldValue
from connect_grpc.data.transforms.replace_field import ReplaceFieldValue
from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.kafka_clients import KafkaIoError
from connect_grpc.pipeline.build import PipelinePlugins, TransformStage
from connect_grpc.pipeline.config import ErrorHandling
from connect_grpc.pipeline.dead_letter import DeadLetterQueueReporter
from connect_grpc.pipeline.dead_letter_headers import (
    ERROR_HEADER_CONNECTOR_NAME,
    ERROR_HEADER_EXCEPTION,
    ERROR_HEADER_EXCEPTION_MESSAGE,
    ERROR_HEADER_EXCEPTION_STACK_TRACE,
    ERROR_HEADER_EXECUTING_CLASS,
    ERROR_HEADER_ORIG_OFFSET,
    ERROR_HEADER_ORIG_PARTITION,
    ERROR_HEADER_ORIG_TOPIC,
    ERROR_HEADER_STAGE,
    ERROR_HEADER_TASK_ID,
    HEADER_PREFIX,
)
from connect_grpc.pipeline.task_pipeline import TaskPipeline
from connect_grpc.pipeline.tolerance import ErrorHandlerError
from connect_grpc.runtime.batching import OffsetRange
from connect_grpc.runtime.kafka_results import RangeResult
from connect_grpc.runtime.sink_loop import put_all, read_and_put
from connect_grpc.runtime.source_batch import Batch
from connect_grpc.runtime.spark_rows import latest_offsets
from connect_grpc.testing.pipeline_plugins import (
    DropTransformation,
    PoisonTransformation,
    UpperCaseTransformation,
    Utf8Converter,
    ValueContains,
)

TASK = TaskId("conn", 0)
ALL = ErrorHandling(
    retry_timeout_ms=0,
    retry_delay_max_ms=60000,
    tolerate_all=True,
    log_enable=False,
    log_include_messages=False,
    dlq_topic="",
    dlq_replication_factor=3,
    dlq_context_headers=False,
)
DLQ = replace(ALL, dlq_topic="dlq", dlq_context_headers=True)


class FakeProducer:
    """Records what is produced; deliveries are reported on flush (or fail if told)."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.conf = dict(conf)
        self.produced: list[dict[str, Any]] = []
        self._waiting: list[Any] = []
        self.fail_with: str | None = None
        self.deliver = True

    def produce(self, topic: str, value: Any, key: Any, *, on_delivery: Any, **extra: Any) -> None:
        self.produced.append({"topic": topic, "key": key, "value": value, **extra})
        self._waiting.append(on_delivery)

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        if not self.deliver:
            return len(self._waiting)
        waiting, self._waiting = self._waiting, []
        for callback in waiting:
            callback(self.fail_with, None)
        return 0


class Tracer(Transformation[Any]):
    """Appends its name to a shared trace (to see the stage order)."""

    def __init__(self, name: str, trace: list[str]) -> None:
        self.name, self.trace = name, trace

    def apply(self, record: Any) -> Any:
        self.trace.append(f"transform:{self.name}")
        return record


class TracingConverter(Converter):
    def __init__(self, name: str, trace: list[str]) -> None:
        self.name, self.trace = name, trace

    def from_connect_data(self, topic: str, headers: Any, schema: Any, value: Any) -> bytes | None:
        self.trace.append(f"{self.name}:from")
        return None if value is None else str(value).encode()

    def to_connect_data(self, topic: str, headers: Any, value: bytes | None) -> SchemaAndValue:
        self.trace.append(f"{self.name}:to")
        return SchemaAndValue(None, None if value is None else value.decode())


def stage(
    alias: str, transformation: Any, predicate: Any = None, negate: bool = False
) -> TransformStage:
    return TransformStage(alias, transformation, predicate, negate)


def pipeline(
    *stages: TransformStage,
    errors: ErrorHandling = ALL,
    key: Converter | None = None,
    value: Converter | None = None,
    is_sink: bool = False,
    header: HeaderConverter | None = None,
) -> tuple[TaskPipeline, list[FakeProducer]]:
    producers: list[FakeProducer] = []

    def factory(conf: Mapping[str, Any]) -> FakeProducer:
        producers.append(FakeProducer(conf))
        return producers[-1]

    plugins = PipelinePlugins(key, value, header, list(stages), errors)
    built = TaskPipeline.create(
        TASK,
        plugins,
        is_sink=is_sink,
        producer_conf={"bootstrap.servers": "b:9092"},
        sleep=lambda ms: False,
        producer_factory=factory,
    )
    return built, producers


def source(value: Any, offset: int = 0, key: Any = None, headers: Any = ()) -> SourceRecord:
    return SourceRecord({"p": 0}, {"o": offset}, "out", value, key, None, headers)


def raw(value: bytes, offset: int = 0, headers: Any = ()) -> SinkRecord:
    return SinkRecord("in", 0, offset, b"k", value, 1_700_000_000_000, headers)


def test_pass_through_is_recognised() -> None:
    assert pipeline()[0].pass_through
    assert not pipeline(stage("u", UpperCaseTransformation()))[0].pass_through


def test_source_order_is_transforms_then_header_key_value_converters() -> None:
    trace: list[str] = []
    built, _ = pipeline(
        stage("a", Tracer("a", trace)),
        stage("b", Tracer("b", trace)),
        key=TracingConverter("key", trace),
        value=TracingConverter("value", trace),
    )
    [out] = built.apply_source([source("v", key="k")])
    assert trace == ["transform:a", "transform:b", "key:from", "value:from"]
    assert out is not None and (out.key, out.value) == (b"k", b"v")
    assert out.source_offset == {"o": 0}


def test_sink_order_is_key_value_converters_then_transforms() -> None:
    trace: list[str] = []
    built, _ = pipeline(
        stage("a", Tracer("a", trace)),
        key=TracingConverter("key", trace),
        value=TracingConverter("value", trace),
        is_sink=True,
    )
    [out] = built.apply_sink([raw(b"v")])
    assert trace == ["key:to", "value:to", "transform:a"]
    assert (out.key, out.value, out.kafka_offset) == ("k", "v", 0)


def test_predicate_and_negate_choose_the_records_a_transform_applies_to() -> None:
    matches = ValueContains()
    matches.configure({"text": "x"})
    built, _ = pipeline(stage("u", UpperCaseTransformation(), matches))
    negated, _ = pipeline(stage("u", UpperCaseTransformation(), matches, negate=True))
    records = [source("ax"), source("ab")]
    assert [r.value for r in built.apply_source(records) if r] == [b"AX", b"ab"]
    assert [r.value for r in negated.apply_source(records) if r] == [b"ax", b"AB"]


def test_dropped_and_failed_source_records_are_none_in_place() -> None:
    built, _ = pipeline(stage("drop", DropTransformation()), stage("p", PoisonTransformation()))
    out = built.apply_source(
        [source("a", 0), source("drop me", 1), source("poison", 2), source("b", 3)]
    )
    assert [r.value if r else None for r in out] == [b"a", None, None, b"b"]
    counts = built.take_counts()
    assert (counts.errors, counts.skipped) == (1, 1)


def test_a_value_no_converter_can_write_fails_the_value_converter_stage() -> None:
    built, _ = pipeline(
        stage("u", UpperCaseTransformation()), errors=replace(ALL, tolerate_all=False)
    )
    with pytest.raises(ErrorHandlerError, match="Tolerance exceeded"):
        built.apply_source([source({"a": 1})])


def dlq_headers(produced: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in produced["headers"] if k.startswith(HEADER_PREFIX)}


def test_sink_dlq_gets_the_original_bytes_headers_and_ten_context_headers() -> None:
    built, producers = pipeline(value=Utf8Converter(), errors=DLQ, is_sink=True)
    records = [raw(b"good", 41), raw(b"poison pill", 42, headers=(("h", b"1"),))]
    delivered = built.apply_sink(records)
    assert [r.value for r in delivered] == ["good"]
    built.await_dead_letters()
    [written] = producers[0].produced
    assert (written["topic"], written["key"], written["value"]) == ("dlq", b"k", b"poison pill")
    assert written["timestamp"] == 1_700_000_000_000
    assert written["headers"][0] == ("h", b"1")  # the original headers first
    headers = dlq_headers(written)
    # Kafka Connect's names, spelled out once: the contract pipeline.dead_letter_headers keeps
    assert list(headers) == [
        "__connect.errors.topic",
        "__connect.errors.partition",
        "__connect.errors.offset",
        "__connect.errors.connector.name",
        "__connect.errors.task.id",
        "__connect.errors.stage",
        "__connect.errors.class.name",
        "__connect.errors.exception.class.name",
        "__connect.errors.exception.message",
        "__connect.errors.exception.stacktrace",
    ]
    assert headers[ERROR_HEADER_ORIG_TOPIC] == b"in"
    assert headers[ERROR_HEADER_ORIG_PARTITION] == b"0"
    assert headers[ERROR_HEADER_ORIG_OFFSET] == b"42"
    assert headers[ERROR_HEADER_CONNECTOR_NAME] == b"conn"
    assert headers[ERROR_HEADER_TASK_ID] == b"0"
    assert headers[ERROR_HEADER_STAGE] == b"VALUE_CONVERTER"
    assert headers[ERROR_HEADER_EXECUTING_CLASS] == (
        b"connect_grpc.testing.pipeline_plugins.Utf8Converter"
    )
    assert (
        headers[ERROR_HEADER_EXCEPTION]
        == b"org.apache.kafka.connect.errors.DataException"
    )
    assert headers[ERROR_HEADER_EXCEPTION_MESSAGE] == b"Utf8Converter refuses 'poison pill'"
    assert b"DataError" in headers[ERROR_HEADER_EXCEPTION_STACK_TRACE]
    assert producers[0].conf["acks"] == "all"
    assert producers[0].conf["client.id"] == "connector-dlq-producer-conn-0"
    counts = built.take_counts()
    assert (counts.dlq_requests, counts.dlq_failures, counts.skipped) == (1, 0, 1)


def test_tolerance_none_writes_the_dlq_before_failing() -> None:
    built, producers = pipeline(
        value=Utf8Converter(), errors=replace(DLQ, tolerate_all=False), is_sink=True
    )
    with pytest.raises(ErrorHandlerError, match="Tolerance exceeded in error handler"):
        built.apply_sink([raw(b"poison")])
    assert [p["value"] for p in producers[0].produced] == [b"poison"]


def test_no_context_headers_unless_enabled() -> None:
    built, producers = pipeline(
        value=Utf8Converter(), errors=replace(DLQ, dlq_context_headers=False), is_sink=True
    )
    built.apply_sink([raw(b"poison")])
    assert "headers" not in producers[0].produced[0]


def test_source_dlq_has_the_polled_record_and_its_target_topic() -> None:
    built, producers = pipeline(
        stage("p", PoisonTransformation()), value=Utf8Converter(), errors=DLQ
    )
    out = built.apply_source([source("poison", key="k1", headers=(("h", b"x"),))])
    assert out == [None]
    [written] = producers[0].produced
    assert (written["topic"], written["key"], written["value"]) == ("dlq", b"k1", b"poison")
    headers = dlq_headers(written)
    assert headers[ERROR_HEADER_ORIG_TOPIC] == b"out"
    assert headers[ERROR_HEADER_STAGE] == b"TRANSFORMATION"
    assert ERROR_HEADER_ORIG_OFFSET not in headers
    assert written["headers"][0] == ("h", b"x")


def test_source_dlq_falls_back_to_repr_when_the_converter_refuses() -> None:
    built, producers = pipeline(value=Utf8Converter(), errors=DLQ)
    built.apply_source([source({"poison": 1})])
    assert producers[0].produced[0]["value"] == b"{'poison': 1}"


def test_dlq_failures_are_counted_and_not_retried() -> None:
    built, producers = pipeline(value=Utf8Converter(), errors=DLQ, is_sink=True)
    built.apply_sink([raw(b"poison")])
    producers[0].fail_with = "broker says no"
    built.await_dead_letters()
    assert built.take_counts().dlq_failures == 1


def test_unacknowledged_dlq_writes_fail_the_wait_retriably() -> None:
    counts_producer = FakeProducer({})
    counts_producer.deliver = False
    from connect_grpc.metrics.worker_metrics import ErrorCounts
    from connect_grpc.pipeline.tolerance import ProcessingContext

    reporter = DeadLetterQueueReporter(
        TASK,
        "dlq",
        {},
        ErrorCounts(),
        context_headers_enabled=False,
        producer_factory=lambda conf: counts_producer,
    )
    reporter.report(ProcessingContext(raw(b"x")))
    with pytest.raises(KafkaIoError) as raised:
        reporter.await_writes(timeout_s=0.01)
    assert raised.value.retriable
    counts_producer.deliver = True
    reporter.await_writes(timeout_s=1)  # the pending write is awaited again


def test_errant_record_reporter_is_none_without_dlq_or_log() -> None:
    assert pipeline(is_sink=True)[0].errant is None
    assert pipeline(errors=replace(ALL, log_enable=True), is_sink=True)[0].errant
    assert pipeline(errors=DLQ, is_sink=True)[0].errant


def test_errant_record_reporter_sends_the_original_bytes() -> None:
    built, producers = pipeline(value=Utf8Converter(), errors=DLQ, is_sink=True)
    [delivered] = built.apply_sink([raw(b"fine", 7)])
    reporter = built.errant
    assert reporter is not None
    future = reporter.report(delivered, DataError("cannot write"))
    assert not future.done()
    built.await_dead_letters()
    assert future.done() and future.exception() is None
    [written] = producers[0].produced
    assert written["value"] == b"fine"
    headers = dlq_headers(written)
    assert headers[ERROR_HEADER_STAGE] == b"TASK_PUT"
    assert headers[ERROR_HEADER_EXECUTING_CLASS] == b"org.apache.kafka.connect.sink.SinkTask"
    assert headers[ERROR_HEADER_ORIG_OFFSET] == b"7"


def test_errant_record_reporter_serialises_a_record_the_task_made() -> None:
    built, producers = pipeline(value=Utf8Converter(), errors=DLQ, is_sink=True)
    reporter = built.errant
    assert reporter is not None
    reporter.report(SinkRecord("in", 0, 3, None, "made here"), DataError("x"))
    assert producers[0].produced[0]["value"] == b"made here"


def test_errant_record_reporter_with_tolerance_none_raises_now_and_after_put() -> None:
    built, producers = pipeline(errors=replace(DLQ, tolerate_all=False), is_sink=True)
    reporter = built.errant
    assert reporter is not None
    with pytest.raises(ErrorHandlerError, match="Tolerance exceeded"):
        reporter.report(raw(b"x"), DataError("x"))
    assert len(producers[0].produced) == 1
    with pytest.raises(ErrorHandlerError, match="Tolerance exceeded"):
        reporter.maybe_raise()


class RecordingSink(SinkTask):
    def __init__(self, errant: Any = None) -> None:
        self.put_batches: list[list[SinkRecord]] = []
        self.flushed: list[dict[tuple[str, int], int]] = []
        self.errant = errant

    def start(self, config: Mapping[str, str]) -> None:
        return

    def stop(self, connector_deleted: bool = False) -> None:
        return

    def put(self, records: Any) -> None:
        self.put_batches.append(list(records))
        for record in records:
            if self.errant is not None and "bad" in record.value:
                # a task that swallows the error: the runtime fails it after put
                with contextlib.suppress(ErrorHandlerError):
                    self.errant.report(record, DataError("cannot write"))

    def flush(self, offsets: Mapping[tuple[str, int], int]) -> None:
        self.flushed.append(dict(offsets))


def read(records: list[SinkRecord]) -> list[RangeResult[SinkRecord]]:
    return [RangeResult("in", 0, records[-1].kafka_offset + 1, records)]


def test_put_all_commits_past_skipped_records() -> None:
    built, _ = pipeline(value=Utf8Converter(), is_sink=True)
    records = [raw(b"a", 0), raw(b"poison", 1)]
    task = RecordingSink()
    offsets, count = put_all(task, records, read(records), built)
    assert [r.value for r in task.put_batches[0]] == ["a"]
    assert offsets == {("in", 0): 2} and count == 2
    assert task.flushed == [{("in", 0): 2}]


def test_put_all_without_a_pipeline_is_todays_path() -> None:
    records = [raw(b"a", 0)]
    task = RecordingSink()
    put_all(task, records, read(records))
    assert task.put_batches == [records]


def test_put_all_fails_after_put_when_the_task_swallowed_a_tolerance_error() -> None:
    built, producers = pipeline(
        value=Utf8Converter(), errors=replace(DLQ, tolerate_all=False), is_sink=True
    )
    task = RecordingSink(built.errant)
    records = [raw(b"bad", 0)]
    with pytest.raises(ErrorHandlerError, match="Tolerance exceeded"):
        put_all(task, records, read(records), built)
    assert task.flushed == []  # never flushed, never committed
    assert [p["value"] for p in producers[0].produced] == [b"bad"]


def test_a_source_batch_through_the_pipeline_commits_only_what_goes_out() -> None:
    built, _ = pipeline(stage("drop", DropTransformation()))
    polled = [source("a", 0), source("b", 1), source("drop", 2)]
    batch = Batch(polled).through(built)
    assert [r.value for r in batch.outgoing] == [b"a", b"b"]
    assert latest_offsets(batch.outgoing) == [({"p": 0}, {"o": 1})]
    assert batch.converted is not None and batch.converted[2] is None
    untouched = Batch(polled).through(None)
    assert untouched.outgoing is polled and untouched.converted is None


def test_a_hosted_task_s_pipeline_factory_is_searched_for_values_to_mask() -> None:
    from connect_grpc.config.worker import WorkerConfig
    from connect_grpc.connectors.plugins import Plugins
    from connect_grpc.pipeline.build import ConnectorPipeline
    from connect_grpc.pipeline.spec import PipelineSpec
    from connect_grpc.runtime.hosting.link import _strings_in

    worker = WorkerConfig.from_properties(
        {"bootstrap.servers": "b:1", "listeners": "grpc://127.0.0.1:0", "worker.id": "w"}
    )
    factory = ConnectorPipeline({"transforms.a.key": "resolved-secret"}, worker, Plugins(), True)
    spec = PipelineSpec(factory, {"bootstrap.servers": "b:1"})
    assert "resolved-secret" in _strings_in(("task.Class", spec))


def test_a_stage_that_fails_retriably_then_succeeds_keeps_the_record() -> None:
    from connect_grpc.testing.pipeline_plugins import FlakyTransformation

    flaky = FlakyTransformation()
    flaky.configure({"failures": "2"})
    built, _ = pipeline(stage("f", flaky), errors=replace(ALL, retry_timeout_ms=60_000))
    [out] = built.apply_source([source("flaky-x")])
    assert out is not None and out.value == b"flaky-x"
    counts = built.take_counts()
    assert (counts.failures, counts.retries, counts.errors, counts.skipped) == (2, 2, 0, 0)


def test_a_sink_record_that_fails_in_a_transform_reports_the_raw_record() -> None:
    built, producers = pipeline(stage("p", PoisonTransformation()), errors=DLQ, is_sink=True)
    assert built.apply_sink([raw(b"a poison", 9)]) == []
    [written] = producers[0].produced
    assert written["value"] == b"a poison"
    assert dlq_headers(written)[ERROR_HEADER_STAGE] == b"TRANSFORMATION"
    assert dlq_headers(written)[ERROR_HEADER_ORIG_OFFSET] == b"9"


class FlakyPutSink(RecordingSink):
    """Raises RetriableError from its first put."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    def put(self, records: Any) -> None:
        super().put(records)
        if not self.failed:
            self.failed = True
            raise RetriableError("the sink is busy")


def test_a_batch_whose_put_is_retried_is_not_converted_or_reported_again() -> None:
    built, producers = pipeline(value=Utf8Converter(), errors=DLQ, is_sink=True)
    task = FlakyPutSink()
    records = [raw(b"a", 0), raw(b"poison", 1)]
    with pytest.raises(RetriableError):
        put_all(task, records, read(records), built)
    again = [raw(b"a", 0), raw(b"poison", 1)]  # read again from the same position
    put_all(task, again, read(again), built)
    assert task.put_batches[1][0] is task.put_batches[0][0]  # the same records again
    assert [r.value for r in task.put_batches[1]] == ["a"]
    assert len(producers[0].produced) == 1  # the poison record reported once
    assert built.take_counts().errors == 1
    newer = [raw(b"b", 2)]
    put_all(task, newer, read(newer), built)
    assert [r.value for r in task.put_batches[2]] == ["b"]


def side_chain(*configs: tuple[type[Any], dict[str, str]]) -> list[Any]:
    transformations = []
    for cls, config in configs:
        transformation = cls()
        transformation.configure(config)
        transformations.append(transformation)
    return transformations


def json_converter() -> JsonConverter:
    converter = JsonConverter()
    converter.configure({"schemas.enable": "true"}, False)
    return converter


SOURCE_CHAIN = (
    (HoistFieldValue, {"field": "line"}),
    (InsertFieldValue, {"static.field": "origin", "static.value": "bench", "topic.field": "t"}),
    (ReplaceFieldValue, {"renames": "line:text"}),
    (MaskFieldValue, {"fields": "origin"}),
)
SINK_CHAIN = (
    (InsertFieldValue, {"static.field": "stage", "static.value": "sink", "offset.field": "o"}),
    (ReplaceFieldValue, {"exclude": "origin"}),
    (MaskFieldValue, {"fields": "stage,o", "replacement": "7"}),
)


def test_a_chain_of_one_sides_transformations_makes_what_their_applies_make() -> None:
    polled = [
        SourceRecord({"p": 0}, {"o": i}, "out", f"line {i}", None, None, (), None, STRING_SCHEMA)
        for i in range(3)
    ]
    built, _ = pipeline(
        *(stage(str(i), t) for i, t in enumerate(side_chain(*SOURCE_CHAIN))),
        value=json_converter(),
    )
    expected = []
    for record in polled:
        for transformation in side_chain(*SOURCE_CHAIN):
            record = transformation.apply(record)
        expected.append(json_converter().from_connect_data("out", None, record.value_schema,
                                                           record.value))
    produced = built.apply_source(polled)
    assert [r.value for r in produced if r is not None] == expected
    assert b'"payload":{"text":"line 2","t":"out","origin":""}' in expected[2]

    sink, _ = pipeline(
        *(stage(str(i), t) for i, t in enumerate(side_chain(*SINK_CHAIN))),
        value=json_converter(),
        is_sink=True,
    )
    delivered = sink.apply_sink([raw(value, i) for i, value in enumerate(expected)])
    assert [repr(r.value) for r in delivered] == [
        f"Struct{{text=line {i},t=out,o=7,stage=7}}" for i in range(3)
    ]
    assert [r.kafka_offset for r in delivered] == [0, 1, 2]


def test_a_side_transformation_failing_in_a_chain_reports_its_own_stage() -> None:
    built, producers = pipeline(
        *(
            stage(str(i), t)
            for i, t in enumerate(side_chain(
                (HoistFieldValue, {"field": "n"}),
                (MaskFieldValue, {"fields": "n", "replacement": "not a number"}),
                (InsertFieldValue, {"static.field": "s", "static.value": "v"}),
            ))
        ),
        value=json_converter(),
        errors=DLQ,
    )
    polled = [
        SourceRecord({"p": 0}, {"o": 0}, "out", 5, None, None, (), None, INT64_SCHEMA),
        SourceRecord({"p": 0}, {"o": 1}, "out", "text", None, None, (), None, STRING_SCHEMA),
    ]
    out = built.apply_source(polled)
    assert out[0] is None
    assert out[1] is not None and b'"payload":{"n":"not a number","s":"v"}' in out[1].value
    built.await_dead_letters()
    [written] = producers[0].produced
    headers = dlq_headers(written)
    assert headers[ERROR_HEADER_STAGE] == b"TRANSFORMATION"
    assert headers[ERROR_HEADER_EXECUTING_CLASS] == (
        b"org.apache.kafka.connect.transforms.MaskField$Value"
    )
    assert headers[ERROR_HEADER_EXCEPTION_MESSAGE] == (
        b"Unable to convert not a number (class str) to number"
    )
    assert written["value"] == b'{"schema":{"type":"int64","optional":false},"payload":5}'
    counts = built.take_counts()
    assert (counts.errors, counts.skipped) == (1, 1)


def test_a_compiled_chain_leaves_nulls_defaults_and_other_schemas_to_apply_side() -> None:
    schema = (
        SchemaBuilder.struct()
        .field("a", STRING_SCHEMA)
        .field("b", SchemaBuilder.string().optional().default_value("dflt").build())
        .field("n", INT64_SCHEMA)
        .build()
    )
    other = (
        SchemaBuilder.struct()
        .field("a", STRING_SCHEMA).field("c", STRING_SCHEMA).field("n", INT64_SCHEMA)
        .build()
    )
    chain = (
        (InsertFieldValue, {"static.field": "s", "static.value": "v"}),
        (ReplaceFieldValue, {"renames": "a:text", "exclude": "x"}),
        (MaskFieldValue, {"fields": "n,b", "replacement": "9"}),
    )
    values = [
        Struct(schema).put("a", "x").put("b", "y").put("n", 1),
        Struct(schema).put("a", "x").put("n", 2),  # b null: its default stands in
        Struct(schema).put("a", "x").put("b", "z").put("n", 3),
        Struct(other).put("a", "o").put("c", "c").put("n", 4),  # not the record's schema
        None,  # InsertField and ReplaceField pass a null on; MaskField refuses it
    ]
    records = [
        SourceRecord({"p": 0}, {"o": i}, "out", value, None, None, (), None, schema)
        for i, value in enumerate(values)
    ]
    built, _ = pipeline(
        *(stage(str(i), t) for i, t in enumerate(side_chain(*chain))), value=json_converter()
    )
    produced = built.apply_source(records)
    assert produced[-1] is None
    expected = []
    for record in records[:-1]:
        for transformation in side_chain(*chain):
            record = transformation.apply(record)
        expected.append(
            json_converter().from_connect_data("out", None, record.value_schema, record.value)
        )
    assert [r.value for r in produced[:-1] if r is not None] == expected
    assert [repr(JsonConverter().to_connect_data("out", None, value).value)
            for value in expected] == [
        "Struct{text=x,b=9,n=9,s=v}",
        "Struct{text=x,b=9,n=9,s=v}",
        "Struct{text=x,b=9,n=9,s=v}",
        "Struct{text=o,c=c,n=9,s=v}",
    ]
    counts = built.take_counts()
    assert (counts.errors, counts.skipped) == (1, 1)


@pytest.mark.parametrize("replace_config", [
    {"include": "line"},  # one field kept
    {"exclude": "line,s"},  # none
    {"renames": "s:t"},  # both
])
def test_a_compiled_replace_field_keeps_what_apply_keeps(replace_config: dict[str, str]) -> None:
    chain = (
        (HoistFieldValue, {"field": "line"}),
        (InsertFieldValue, {"static.field": "s", "static.value": "v"}),
        (ReplaceFieldValue, replace_config),
    )
    polled = [
        SourceRecord({"p": 0}, {"o": i}, "out", f"l{i}", None, None, (), None, STRING_SCHEMA)
        for i in range(3)
    ]
    built, _ = pipeline(
        *(stage(str(i), t) for i, t in enumerate(side_chain(*chain))), value=json_converter()
    )
    expected = []
    for record in polled:
        for transformation in side_chain(*chain):
            record = transformation.apply(record)
        expected.append(
            json_converter().from_connect_data("out", None, record.value_schema, record.value)
        )
    assert [r.value for r in built.apply_source(polled) if r is not None] == expected


def test_converted_and_transformed_sink_records_keep_the_consumed_timestamp_type() -> None:
    from connect_grpc.connectors.api import TimestampType

    built, _ = pipeline(stage("u", UpperCaseTransformation()), value=Utf8Converter(), is_sink=True)
    read = replace(raw(b"v"), timestamp_type=TimestampType.LOG_APPEND_TIME)
    [out] = built.apply_sink([read])
    assert (out.value, out.timestamp_type) == ("V", TimestampType.LOG_APPEND_TIME)


def test_a_sink_chain_of_plans_runs_as_one_step_and_makes_what_the_applies_make() -> None:
    chain = (
        (InsertFieldValue, {"static.field": "stage", "static.value": "sink"}),
        (ReplaceFieldValue, {"exclude": "origin", "renames": "line:text"}),
        (MaskFieldValue, {"fields": "stage,n", "replacement": "7"}),
        (InsertFieldValue, {"static.field": "after", "static.value": "mask"}),
    )
    schema = (
        SchemaBuilder.struct().field("line", STRING_SCHEMA).field("origin", STRING_SCHEMA)
        .field("n", INT64_SCHEMA).field("m", OPTIONAL_STRING_SCHEMA).build()
    )
    writer = json_converter()
    values = [
        Struct(schema).put("line", "a").put("origin", "o").put("n", 5).put("m", "x"),
        Struct(schema).put("line", "b").put("origin", "o").put("n", 6),  # a null: apply_side
        Struct(schema).put("line", "c").put("origin", "p").put("n", 7).put("m", "y"),
    ]
    raws = [
        raw(writer.from_connect_data("in", None, schema, value) or b"", offset)
        for offset, value in enumerate(values)
    ]
    sink, _ = pipeline(
        *(stage(str(i), t) for i, t in enumerate(side_chain(*chain))),
        value=json_converter(),
        is_sink=True,
    )
    read = [replace(record) for record in raws]  # apply_sink may make the raw records its own
    delivered = sink.apply_sink(raws)
    expected = []
    for record in read:
        schema_and_value = json_converter().to_connect_data("in", None, record.value)
        transformed: Any = record.new_record(
            value_schema=schema_and_value.schema, value=schema_and_value.value
        )
        for transformation in side_chain(*chain):
            transformed = transformation.apply(transformed)
        expected.append(transformed)
    assert [(r.value_schema, r.value) for r in delivered] == [
        (r.value_schema, r.value) for r in expected
    ]
    assert [repr(r.value) for r in delivered] == [
        "Struct{text=a,n=7,m=x,stage=7,after=mask}",
        "Struct{text=b,n=7,stage=7,after=mask}",
        "Struct{text=c,n=7,m=y,stage=7,after=mask}",
    ]
    [(output, steps)] = [chain for chain in sink._chains.values() if chain is not None]
    assert output == delivered[0].value_schema
    assert len(steps) == 1  # the four stages' plans composed into one step


@pytest.mark.parametrize("header", [None, SimpleHeaderConverter()])
def test_a_sink_batch_delivered_without_an_errant_reporter_is_what_one_with_it_delivers(
    header: HeaderConverter | None,
) -> None:
    # with no errant reporter (no dead-letter queue, no error log) the raw records become
    # the records delivered; with one, each is made anew: both deliver the same records
    schema = SchemaBuilder.struct().field("line", STRING_SCHEMA).field(
        "m", OPTIONAL_STRING_SCHEMA).build()
    other = SchemaBuilder.struct().field("line", STRING_SCHEMA).build()
    writer = json_converter()

    def envelope(struct_schema: Any, **values: str) -> bytes:
        struct = Struct(struct_schema)
        for name, value in values.items():
            struct.put(name, value)
        return writer.from_connect_data("in", None, struct_schema, struct) or b""

    values = [
        envelope(schema, line="a", m="x"),
        envelope(schema, line="b"),  # a null: the chain's apply_side
        b"not json",  # fails to convert: tolerated
        envelope(other, line="c"),
        envelope(schema, line="d", m="y"),
        envelope(schema, line="e", m="z"),
    ]

    def batch() -> list[SinkRecord]:
        records = [raw(value, offset) for offset, value in enumerate(values)]
        records[4] = raw(values[4], 4, headers=(("h", b"1"),))
        return records

    def delivered(errors: ErrorHandling) -> list[tuple[Any, ...]]:
        sink, _ = pipeline(
            *(stage(str(i), t) for i, t in enumerate(side_chain(*SINK_CHAIN))),
            errors=errors,
            value=json_converter(),
            header=header,
            is_sink=True,
        )
        assert (sink.errant is None) == (not errors.log_enable)
        records = sink.apply_sink(batch())
        assert (sink.counts.failures, sink.counts.skipped) == (1, 1)
        return [
            (r.topic, r.kafka_partition, r.kafka_offset, r.key, r.key_schema, r.value_schema,
             repr(r.value), r.timestamp_ms, r.timestamp_type, type(r.headers),
             [(h.key, h.value) for h in r.headers] if header else r.headers)
            for r in records
        ]

    in_place = delivered(ALL)
    assert in_place == delivered(replace(ALL, log_enable=True))
    assert [line[6] for line in in_place] == [
        "Struct{line=a,m=x,o=7,stage=7}", "Struct{line=b,o=7,stage=7}",
        "Struct{line=c,o=7,stage=7}", "Struct{line=d,m=y,o=7,stage=7}",
        "Struct{line=e,m=z,o=7,stage=7}",
    ]


def test_then_plan_calls_a_function_of_a_fixed_value_once_and_refuses_what_it_cannot_fold() -> None:
    calls: list[Any] = []

    def upper(value: Any) -> Any:
        calls.append(value)
        return value.upper()

    first = (FromField(1), Fixed("sink"))
    assert then_plan(first, (FromField(0, (upper,)), FromField(1, (upper,)), Fixed(3))) == (
        FromField(1, (upper,)), Fixed("SINK"), Fixed(3)
    )
    assert calls == ["sink"]
    assert then_plan(first, (FromField(1, (lambda value: [value],)),)) is None  # not shareable
    assert then_plan(first, (FromField(1, (lambda value: None,)),)) is None
    assert then_plan(first, (FromField(1, (lambda value: 1 / 0,)),)) is None


def test_a_sink_header_converter_gives_every_record_connect_headers_empty_ones_included() -> None:
    built, _ = pipeline(value=Utf8Converter(), header=SimpleHeaderConverter(), is_sink=True)
    delivered = built.apply_sink([raw(b"a", 0), raw(b"b", 1, headers=(("n", b"42"), ("s", b"x")))])
    assert [r.value for r in delivered] == ["a", "b"]
    first, second = (r.headers for r in delivered)
    assert isinstance(first, ConnectHeaders) and list(first) == []
    assert isinstance(second, ConnectHeaders)
    assert [(h.key, h.value, h.schema.type.name if h.schema else None) for h in second] == [
        ("n", 42, "INT8"), ("s", "x", "STRING")
    ]


class CollectorWatcher(Transformation[Any]):
    """Notes whether the cyclic garbage collector runs while it transforms a record."""

    def __init__(self) -> None:
        self.enabled: list[bool] = []

    def configure(self, configs: Mapping[str, str]) -> None:
        pass

    def apply(self, record: Any) -> Any:
        self.enabled.append(gc.isenabled())
        return record

    def close(self) -> None:
        pass


def test_a_sink_batch_is_converted_and_transformed_with_the_collector_paused() -> None:
    watcher = CollectorWatcher()
    built, _ = pipeline(stage("w", watcher), value=Utf8Converter(), is_sink=True)
    assert gc.isenabled()
    delivered = built.sink_batch([raw(b"a", 0), raw(b"b", 1)], "batch")
    assert [r.value for r in delivered] == ["a", "b"]
    assert watcher.enabled == [False, False]
    assert gc.isenabled()


class CollectorWatchingSink(RecordingSink):
    def __init__(self) -> None:
        super().__init__()
        self.collector_enabled: list[bool] = []

    def put(self, records: Any) -> None:
        self.collector_enabled.append(gc.isenabled())
        super().put(records)


class ListReader:
    """Reads the given records, whatever the ranges."""

    def __init__(self, records: list[SinkRecord]) -> None:
        self.records = records

    def read(self, ranges: Any, stopping: Any) -> list[RangeResult[SinkRecord]]:
        return read(self.records)


def test_read_and_put_reads_and_puts_a_batch_with_the_collector_paused() -> None:
    built, _ = pipeline(value=Utf8Converter(), is_sink=True)
    task = CollectorWatchingSink()
    reader: Any = ListReader([raw(b"a", 0), raw(b"b", 1)])
    offsets, count = read_and_put(reader, [OffsetRange("in", 0, 0, 2)], lambda: False, task, built)
    assert (offsets, count) == ({("in", 0): 2}, 2)
    assert [r.value for r in task.put_batches[0]] == ["a", "b"]
    assert task.collector_enabled == [False]
    assert gc.isenabled()
