"""The two ways of the pipeline's differential test (``test_pipeline_differential``): a task
pipeline built as a task builds it, and ``Reference``, Kafka Connect's per-stage path
written from the reference (§1.1-§1.4) with the runtime's own operator and reporters; the
run of a case's records through either, and the canonical forms their outcomes are
compared in.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from structlog.testing import capture_logs

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.api import SinkRecord, SourceRecord, TimestampType
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.data.converters.json import JsonConverter
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.schema import Schema
from connect_grpc.data.struct import Struct
from connect_grpc.kernel.domain import TaskId
from connect_grpc.metrics.worker_metrics import ErrorCounts
from connect_grpc.pipeline.build import PipelinePlugins, TransformStage, build_pipeline
from connect_grpc.pipeline.dead_letter import (
    DeadLetterQueueReporter,
    SourceRecordSerializer,
    dlq_producer_conf,
)
from connect_grpc.pipeline.task_pipeline import TaskPipeline
from connect_grpc.pipeline.tolerance import (
    ErrorReporter,
    LogReporter,
    ProcessingContext,
    RetryWithToleranceOperator,
    Stage,
)
from tests.unit._differential_cases import Case

TASK = TaskId("diff", 0)
WORKER = WorkerConfig.from_properties({"bootstrap.servers": "127.0.0.1:1"})
PRODUCER_CONF = {"bootstrap.servers": "127.0.0.1:1"}
#: The dead-letter queue's header with the failure's stack trace (Kafka Connect's name).
STACK_TRACE_HEADER = "__connect.errors.exception.stacktrace"
#: The plugins every pipeline is built with (one: their tables are read once).
PLUGINS = Plugins()


class RecordingProducer:
    """The dead-letter queue's producer: keeps what it is given, delivers on flush (as the
    unit tests of the pipeline's queue do; no broker in unit tests)."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.produced: list[dict[str, Any]] = []
        self._waiting: list[Any] = []

    def produce(self, topic: str, value: Any, key: Any, *, on_delivery: Any, **extra: Any) -> None:
        self.produced.append({"topic": topic, "key": key, "value": value, **extra})
        self._waiting.append(on_delivery)

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        waiting, self._waiting = self._waiting, []
        for callback in waiting:
            callback(None, None)
        return 0

    def purge(self) -> None:
        self._waiting.clear()


# ---- the two ways ----------------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    """What a run made: the records out (canonical), the error raised, the log, the queue."""

    records: list[Any]
    error: tuple[Any, ...] | None
    logged: list[Any]
    dead_letters: list[Any]
    counts: tuple[int, ...]


def task_pipeline(config: Mapping[str, str], is_sink: bool,
                  producers: list[RecordingProducer]) -> TaskPipeline:
    """The pipeline as a task builds it (``start_pipeline`` less the queue's topic check,
    which needs a broker)."""

    def producer(conf: Mapping[str, Any]) -> RecordingProducer:
        producers.append(RecordingProducer(conf))
        return producers[-1]

    plugins = build_pipeline(config, WORKER, PLUGINS, is_sink=is_sink)
    return TaskPipeline.create(
        TASK, plugins, is_sink=is_sink, producer_conf=PRODUCER_CONF, sleep=lambda ms: False,
        producer_factory=producer,
    )


class Reference:
    """Kafka Connect's path: each converter, then each stage (predicate, then ``apply``),
    one operator call each, in WorkerSinkTask's and AbstractWorkerSourceTask's orders; the
    log reporter and the dead-letter queue as Worker sets them up (plus, beyond Kafka, a
    source's queue, as the task pipeline has one)."""

    def __init__(self, config: Mapping[str, str], is_sink: bool,
                 producers: list[RecordingProducer]) -> None:
        self.plugins: PipelinePlugins = build_pipeline(config, WORKER, PLUGINS, is_sink=is_sink)
        plugins, errors = self.plugins, self.plugins.errors
        self.counts = ErrorCounts()
        reporters: list[ErrorReporter] = [LogReporter(TASK, errors, self.counts)]
        if errors.dlq_topic:

            def producer(conf: Mapping[str, Any]) -> RecordingProducer:
                producers.append(RecordingProducer(conf))
                return producers[-1]

            reporters.append(DeadLetterQueueReporter(
                TASK, errors.dlq_topic, dlq_producer_conf(PRODUCER_CONF, TASK), self.counts,
                context_headers_enabled=errors.dlq_context_headers,
                serializer=None if is_sink else SourceRecordSerializer(
                    plugins.key_converter, plugins.value_converter, plugins.header_converter),
                producer_factory=producer,
            ))
        self.operator = RetryWithToleranceOperator(
            errors, reporters, self.counts, sleep=lambda ms: False)
        assert plugins.key_converter and plugins.value_converter and plugins.header_converter
        self.key, self.value, self.header = (
            plugins.key_converter, plugins.value_converter, plugins.header_converter)

    def _transformed(self, context: ProcessingContext, record: Any) -> Any:
        """TransformationChain.apply: each stage through the operator; None ends it."""
        for stage in self.plugins.stages:
            record = self.operator.execute(
                context, functools.partial(_stage_apply, stage, record), Stage.TRANSFORMATION,
                stage.transformation)
            if record is None:
                return None
        return record

    def sink(self, raw: SinkRecord) -> SinkRecord | None:
        """WorkerSinkTask.convertAndTransformRecord."""
        context, execute, topic = ProcessingContext(raw), self.operator.execute, raw.topic
        key = execute(context, functools.partial(self.key.to_connect_data, topic, None, raw.key),
                      Stage.KEY_CONVERTER, self.key)
        value = execute(context, functools.partial(
            self.value.to_connect_data, topic, None, raw.value), Stage.VALUE_CONVERTER, self.value)
        headers = execute(context, functools.partial(self._headers_in, raw),
                          Stage.HEADER_CONVERTER, self.header)
        if context.failed:
            return None
        assert key is not None and value is not None and headers is not None
        record = SinkRecord(topic, raw.kafka_partition, raw.kafka_offset, key.value, value.value,
                            raw.timestamp_ms, headers, key.schema, value.schema,
                            raw.timestamp_type)
        transformed: SinkRecord | None = self._transformed(context, record)
        return transformed

    def _headers_in(self, raw: SinkRecord) -> ConnectHeaders:
        headers = ConnectHeaders()
        for name, value in raw.headers:
            converted = self.header.to_connect_header(raw.topic, name, value)
            headers.add(name, converted.value, converted.schema)
        return headers

    def source(self, original: SourceRecord) -> SourceRecord | None:
        """AbstractWorkerSourceTask: transforms, then header, key and value converters."""
        context = ProcessingContext(original)
        record = self._transformed(context, original)
        if record is None:
            return None
        context.target_topic = topic = record.topic
        execute = self.operator.execute
        connect_headers = None if isinstance(record.headers, tuple) else record.headers
        headers = execute(context, functools.partial(self._headers_out, record),
                          Stage.HEADER_CONVERTER, self.header)
        key = execute(context, functools.partial(
            self.key.from_connect_data, topic, connect_headers, record.key_schema, record.key),
            Stage.KEY_CONVERTER, self.key)
        value = execute(context, functools.partial(
            self.value.from_connect_data, topic, connect_headers, record.value_schema,
            record.value), Stage.VALUE_CONVERTER, self.value)
        if context.failed:
            return None
        converted: SourceRecord = record.new_record(
            key=key, value=value, headers=headers, key_schema=None, value_schema=None)
        return converted

    def _headers_out(self, record: SourceRecord) -> Any:
        # raw (name, bytes) pairs go out as they are (beyond Kafka: a task may give bytes)
        if isinstance(record.headers, tuple):
            return record.headers
        return tuple((h.key, self.header.from_connect_header(record.topic, h.key, h.schema,
                                                            h.value)) for h in record.headers)

    def close(self) -> None:
        self.operator.close()
        self.plugins.close()


def _stage_apply(stage: TransformStage, record: Any) -> Any:
    """TransformationStage.apply: the predicate (XOR negate) decides, then ``apply``."""
    predicate = stage.predicate
    if predicate is None or stage.negate != bool(predicate.test(record)):
        return stage.transformation.apply(record)
    return record


# ---- the runs --------------------------------------------------------------------------------


def source_records(case: Case) -> list[SourceRecord]:
    return [
        SourceRecord({"p": 0}, {"o": offset}, data.topic, data.value, data.key, data.partition,
                     data.source_headers(), data.key_schema, data.value_schema, data.timestamp_ms)
        for offset, data in enumerate(case.records)
    ]


def sink_records(case: Case) -> list[SinkRecord]:
    """The records as a sink task reads them: key and value as JsonConverter wrote them
    (bytes that are no JSON where it refused), headers as bytes."""
    writer = json_converter(case.schemas_enable)
    records = []
    for offset, data in enumerate(case.records):
        key = _written(writer, data.topic, data.key_schema, data.key)
        value = _written(writer, data.topic, data.value_schema, data.value)
        headers = tuple(
            (h[0], h[-1] if not data.connect_headers else str(h[-1]).encode())
            for h in data.headers)
        timestamp_type = (TimestampType.CREATE_TIME if offset % 2 else
                          TimestampType.LOG_APPEND_TIME)
        records.append(SinkRecord(
            data.topic, data.partition or 0, offset, key, value,
            data.timestamp_ms or 1_700_000_000_000, headers, None, None, timestamp_type))
    return records


def _written(writer: JsonConverter, topic: str, schema: Schema | None, value: Any) -> bytes | None:
    try:
        return writer.from_connect_data(topic, None, schema, value)
    except Exception:
        return b"{not json"


def json_converter(schemas_enable: bool = True) -> JsonConverter:
    converter = JsonConverter()
    converter.configure({"schemas.enable": str(schemas_enable).lower()}, False)
    return converter


def run(case: Case, is_sink: bool, *, reference: bool) -> Outcome:
    """The case's records through the task pipeline or through the reference."""
    producers: list[RecordingProducer] = []
    config = case.config()
    pipeline: Any = (Reference if reference else task_pipeline)(config, is_sink, producers)
    records: Sequence[Any] = sink_records(case) if is_sink else source_records(case)
    made: list[Any] = []
    error = None
    with capture_logs() as logs:
        try:
            if is_sink:
                made = _sink_run(pipeline, list(records), reference)
            else:
                made = _source_run(pipeline, list(records), reference)
        except Exception as exc:
            error = (type(exc).__name__, str(exc), type(exc.__cause__).__name__,
                     str(exc.__cause__))
        counts = pipeline.counts.take() if reference else pipeline.take_counts()
        pipeline.close()
    produced = [message for producer in producers for message in producer.produced]
    return Outcome(
        records=[canonical_sink(r) if is_sink else canonical_source(r) for r in made],
        error=error,
        # only the pipeline's own events: capture_logs takes the whole process's, and a
        # thread an earlier test left behind may log into one of the two runs
        logged=[_logged(entry) for entry in logs if entry.get("connector") == "diff"],
        dead_letters=[_dead_letter(message) for message in produced],
        counts=(counts.failures, counts.errors, counts.skipped, counts.retries, counts.logged,
                counts.dlq_requests, counts.dlq_failures),
    )


def _sink_run(pipeline: Any, records: list[SinkRecord], reference: bool) -> list[Any]:
    """Two batches, as a sink task puts them (the second finds the chains compiled)."""
    made: list[Any] = []
    half = (len(records) + 1) // 2
    for number, batch in enumerate((records[:half], records[half:])):
        if reference:
            made += [r for r in map(pipeline.sink, batch) if r is not None]
        else:
            made += pipeline.sink_batch([dataclasses.replace(r) for r in batch], number)
            pipeline.sink_batch_done()
    return made


def _source_run(pipeline: Any, records: list[SourceRecord], reference: bool) -> list[Any]:
    if reference:
        return [pipeline.source(record) for record in records]
    made: list[Any] = pipeline.apply_source(records)
    return made


def _logged(entry: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """A log event, its exception (if any) as its type and message."""
    return sorted(
        (key, (type(value).__name__, str(value)) if isinstance(value, BaseException) else value)
        for key, value in entry.items())


def _dead_letter(message: Mapping[str, Any]) -> dict[str, Any]:
    """A queue record; its stack trace header cut to its last line (the exception): the
    frames above it are the path's own."""
    headers = []
    for key, value in message.get("headers", []):
        if key == STACK_TRACE_HEADER and value is not None:
            value = value.decode().strip().splitlines()[-1]
        headers.append((key, value))
    return {**message, "headers": headers}


# ---- canonical forms -------------------------------------------------------------------------


def canonical_schema(schema: Schema | None) -> Any:
    """Every attribute of a schema, nested schemas too (Schema's == is as strict, but a
    difference is easier to read this way)."""
    if schema is None:
        return None
    return (
        schema.type.name, schema.optional, canonical_value(schema.default), schema.name,
        schema.version, schema.doc, sorted((schema.parameters or {}).items()),
        [(f.name, f.index, canonical_schema(f.schema)) for f in schema._fields or ()],
        canonical_schema(schema._key_schema), canonical_schema(schema._value_schema),
    )


def canonical_value(value: Any) -> Any:
    """A value with its Python type, as Connect tells them apart (True from 1, 1.0 from 1,
    a decimal's scale, a timestamp's zone); a Struct with its schema and its values as put
    (a null is not its default)."""
    if isinstance(value, Struct):
        return ("Struct", canonical_schema(value.schema),
                [canonical_value(item) for item in value._values])
    if isinstance(value, list):
        return ("list", [canonical_value(item) for item in value])
    if isinstance(value, dict):
        return ("map", [(canonical_value(k), canonical_value(v)) for k, v in value.items()])
    if isinstance(value, float | decimal.Decimal | dt.date | dt.time):
        return (type(value).__name__, repr(value))
    if value is None:
        return None
    return (type(value).__name__, value)


def canonical_headers(headers: Any) -> Any:
    if isinstance(headers, tuple):
        return ("raw", headers)
    return ("connect", [(h.key, canonical_schema(h.schema), canonical_value(h.value))
                        for h in headers])


def _json(schema: Schema | None, value: Any, topic: str) -> Any:
    try:
        return json_converter().from_connect_data(topic, None, schema, value)
    except Exception as exc:
        return (type(exc).__name__, str(exc))


def canonical_sink(record: SinkRecord) -> Any:
    return (
        record.topic, record.kafka_partition, record.kafka_offset, record.timestamp_ms,
        record.timestamp_type, canonical_schema(record.key_schema), canonical_value(record.key),
        canonical_schema(record.value_schema), canonical_value(record.value),
        canonical_headers(record.headers),
        _json(record.key_schema, record.key, record.topic),
        _json(record.value_schema, record.value, record.topic),
    )


def canonical_source(record: SourceRecord | None) -> Any:
    """A record as it goes to Kafka: its key, value and headers are JsonConverter's bytes
    (the schemas in their envelopes)."""
    if record is None:
        return None
    return (
        record.topic, record.kafka_partition, record.timestamp_ms, record.source_partition,
        record.source_offset, record.key_schema, record.key, record.value_schema, record.value,
        canonical_headers(record.headers),
    )


def assert_agrees(case: Case, is_sink: bool) -> Outcome:
    """The task pipeline's outcome is the reference's; returns it."""
    expected = run(case, is_sink, reference=True)
    actual = run(case, is_sink, reference=False)
    assert actual.error == expected.error
    assert actual.records == expected.records
    assert actual.logged == expected.logged
    assert actual.dead_letters == expected.dead_letters
    assert actual.counts == expected.counts
    return actual
