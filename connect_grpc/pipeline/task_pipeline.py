"""A task's record pipeline, applied to each batch where the batch already is (the driver's
loop, or the Spark task hosting the task): never an extra Spark job.

Source (Kafka Connect's order): transformations (each behind its predicate) → header, key,
value converters → the producer. Sink: key, value, header converters → transformations →
``put``. Each stage is called directly; the first failure of a record's stage goes to the
task's RetryWithToleranceOperator (``after_failure``), which retries, tolerates or fails as
Kafka Connect's operator does, so a record that does not fail costs no error handling. A
record that fails (and is tolerated) or that a transformation drops goes no further.

Offsets, as Kafka Connect: a dropped or failed source record's offset is not committed
(the batch's offsets are those of the records that go out), except with exactly-once, whose
transaction commits the offsets of the whole batch; a skipped sink record still advances
its partition's committed offset (the ranges read are committed whole).

Its parts: the transformation stages (``chain``), the pass-through converters
(``converting``), error handling (``tolerance``, ``dead_letter``), KIP-610's reporter
(``errant``); ``start_pipeline`` builds it from its ``spec`` where the task runs.

When the pipeline has no converter and no transformation (``is_pass_through``), the task's
runner never runs records through it: records move as bytes on the bytes path, at its
speed (a source task keeps it to skip refused records with, under ``errors.tolerance=all``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import structlog

from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.plugins import Converter, HeaderConverter
from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.gc_tuning import collector_paused
from connect_grpc.metrics.worker_metrics import ErrorCounts
from connect_grpc.pipeline.build import PipelinePlugins
from connect_grpc.pipeline.chain import TransformChain
from connect_grpc.pipeline.converting import (
    PassThroughConverter,
    PassThroughHeaderConverter,
    headers_in,
    headers_out,
)
from connect_grpc.pipeline.dead_letter import (
    DeadLetterQueueReporter,
    SourceRecordSerializer,
    dlq_producer_conf,
    ensure_topic,
)
from connect_grpc.pipeline.errant import ErrantRecordReporter
from connect_grpc.pipeline.spec import PipelineSpec
from connect_grpc.pipeline.tolerance import (
    SINK_TASK_CLASS,
    WORKER_SOURCE_TASK_CLASS,
    ErrorReporter,
    LogReporter,
    ProcessingContext,
    RetryWithToleranceOperator,
    Stage,
    class_name,
)

__all__ = ["TaskPipeline", "start_pipeline"]

log = structlog.get_logger(__name__)


class TaskPipeline(TransformChain):
    """One task's converters, transformations and error handling (operator, log reporter,
    dead-letter queue). Used by the task's one thread; its ``errant`` reporter may be called
    from any of the task plugin's threads."""

    def __init__(
        self,
        task: TaskId,
        plugins: PipelinePlugins,
        *,
        reporters: Sequence[ErrorReporter],
        operator: RetryWithToleranceOperator,
        dead_letters: DeadLetterQueueReporter | None,
    ) -> None:
        self.task = task
        self.plugins = plugins
        self.pass_through = plugins.is_pass_through()
        self.operator = operator
        self.counts = operator.counts
        self.dead_letters = dead_letters
        self._reporters = reporters
        super().__init__(plugins.stages)
        self._key: Converter = plugins.key_converter or PassThroughConverter()
        self._value: Converter = plugins.value_converter or PassThroughConverter()
        self._header: HeaderConverter = plugins.header_converter or PassThroughHeaderConverter()
        self._has_header_converter = plugins.header_converter is not None
        self._converts_keys = plugins.key_converter is not None
        self._converts_values = plugins.value_converter is not None
        #: Class names as the log and the DLQ headers show them, worked out once.
        self._key_name = class_name(self._key)
        self._value_name = class_name(self._value)
        self._header_name = class_name(self._header)
        #: A sink's records may become the records delivered (``_converted_in_place``): a
        #: value converter and a value-side chain, no key converter.
        self._converts_in_place = (
            self._converts_values
            and not self._converts_keys
            and self._side_steps is not None
            and not self._side_is_key
        )
        #: The batch's delivered sink records → the raw records they came from, for an
        #: errant record's report (id → (delivered, raw): the id alone could be reused).
        self._originals: dict[int, tuple[SinkRecord, SinkRecord]] = {}
        #: The sink batch being put, kept until put and flushed (see ``sink_batch``).
        self._unfinished: tuple[Hashable, list[SinkRecord]] | None = None
        #: KIP-610's reporter for a sink task's context (None unless it may report).
        self.errant = self._new_errant_reporter()

    @classmethod
    def create(
        cls,
        task: TaskId,
        plugins: PipelinePlugins,
        *,
        is_sink: bool,
        producer_conf: Mapping[str, str],
        sleep: Callable[[int], bool],
        producer_factory: Callable[[Mapping[str, Any]], Any] | None = None,
        stopping: Callable[[], bool] = lambda: False,
    ) -> TaskPipeline:
        """The task's pipeline: Kafka Connect's reporters (the log; a sink's dead-letter
        queue) and, beyond it, a source's dead-letter queue with the same settings.
        ``stopping`` says whether the task is asked to stop (waits for the queue end)."""
        errors = plugins.errors
        counts = ErrorCounts()
        reporters: list[ErrorReporter] = [LogReporter(task, errors, counts)]
        dead_letters = None
        if errors.dlq_topic:
            serializer = (
                None
                if is_sink
                else SourceRecordSerializer(
                    plugins.key_converter, plugins.value_converter, plugins.header_converter
                )
            )
            dead_letters = DeadLetterQueueReporter(
                task,
                errors.dlq_topic,
                dlq_producer_conf(producer_conf, task),
                counts,
                context_headers_enabled=errors.dlq_context_headers,
                serializer=serializer,
                producer_factory=producer_factory,
                stopping=stopping,
            )
            reporters.append(dead_letters)
        operator = RetryWithToleranceOperator(errors, reporters, counts, sleep=sleep)
        return cls(task, plugins, reporters=reporters, operator=operator, dead_letters=dead_letters)

    def open(self, admin_conf: Mapping[str, str]) -> None:
        """Creates the dead-letter queue's topic if absent (the task fails to start when it
        cannot)."""
        dead_letters = self.dead_letters
        if dead_letters is not None:
            errors = self.plugins.errors
            ensure_topic(admin_conf, dead_letters.topic, errors.dlq_replication_factor)

    # ---- source ---------------------------------------------------------------------------

    def apply_source(self, records: Sequence[SourceRecord]) -> list[SourceRecord | None]:
        """Each polled record as it goes to Kafka (key, value and headers as bytes), or None
        where it was dropped or failed, in the batch's order."""
        return [self._source_record(record) for record in records]

    def _source_record(self, original: SourceRecord) -> SourceRecord | None:
        if self._side_steps is not None and not self._side_is_key:
            # a value-side chain: no record made for its result, the outgoing one only
            result = self._side_result(original, None)
            if result.__class__ is tuple:
                record: Any = original
                value_schema, value = result
            else:
                record = result
                if record is None:
                    return None
                value_schema, value = record.value_schema, record.value
        else:
            record = self._transform(original) if self._appliers else original
            if record is None:
                return None
            value_schema, value = record.value_schema, record.value
        topic = record.topic
        # Stages that cannot fail are not run: raw header pairs go out as they are, and
        # bytes (or None) need no pass-through converter.
        headers: Any = record.headers
        connect_headers = None
        if headers.__class__ is not tuple:
            connect_headers = headers
            try:
                headers = self._headers_out(record)
            except Exception as error:
                headers = self._recover(
                    original,
                    functools.partial(self._headers_out, record),
                    Stage.HEADER_CONVERTER,
                    self._header_name,
                    error,
                    topic,
                )
                if headers is None:
                    return None
        key = record.key
        if self._converts_keys or not (key is None or key.__class__ is bytes):
            convert = self._key.from_connect_data
            try:
                key = convert(topic, connect_headers, record.key_schema, key)
            except Exception as error:
                context = self._failed_at(original, Stage.KEY_CONVERTER, self._key_name, topic)
                operation = functools.partial(
                    convert, topic, connect_headers, record.key_schema, key
                )
                key = self.operator.after_failure(context, operation, Stage.KEY_CONVERTER, error)
                if context.failed:
                    return None
        if self._converts_values or not (value is None or value.__class__ is bytes):
            convert = self._value.from_connect_data
            try:
                value = convert(topic, connect_headers, value_schema, value)
            except Exception as error:
                context = self._failed_at(original, Stage.VALUE_CONVERTER, self._value_name, topic)
                operation = functools.partial(convert, topic, connect_headers, value_schema, value)
                value = self.operator.after_failure(
                    context, operation, Stage.VALUE_CONVERTER, error
                )
                if context.failed:
                    return None
        converted: SourceRecord = record.new_record(
            key=key, value=value, headers=headers, key_schema=None, value_schema=None
        )
        return converted

    def _headers_out(self, record: SourceRecord) -> tuple[tuple[str, bytes | None], ...]:
        return headers_out(self._header, record)

    # ---- sink -----------------------------------------------------------------------------

    def apply_sink(self, records: Sequence[SinkRecord]) -> list[SinkRecord]:
        """The records to put: each raw record read converted and transformed; those that
        failed or were dropped left out (their offsets are committed all the same). The raw
        records become the pipeline's: it may make them the records it delivers
        (``_converted_in_place``), so the caller reads them no more."""
        # The collector is paused meanwhile, as while the records were read (gc_tuning): a
        # record converted and transformed is a few containers (the record, its Structs and
        # their lists, its headers) and no reference cycle, and collections in the batch would
        # walk the records made so far again and again.
        with collector_paused():
            return self._converted_batch(records)

    def _converted_batch(self, records: Sequence[SinkRecord]) -> list[SinkRecord]:
        convert = self._sink_record
        if self.errant is None:  # nobody will ask for a record's original
            if self._converts_in_place:
                return self._converted_in_place(records)
            return [r for r in map(convert, records) if r is not None]
        self._originals = originals = {}
        delivered: list[SinkRecord] = []
        for raw in records:
            record = convert(raw)
            if record is not None:
                delivered.append(record)
                originals[id(record)] = (record, raw)
        return delivered

    def _converted_in_place(self, records: Sequence[SinkRecord]) -> list[SinkRecord]:
        """``_sink_record`` of each record, where nobody will ask for a record's original
        and only the value is converted and transformed: a raw record without headers
        becomes the record delivered (its value, value schema and headers set as
        ``_sink_record`` would make them) instead of a new record being made from it. The
        raw records are the reader's, for this batch only (a batch read again is read
        anew). A record with headers goes the whole way of ``_sink_record``; one that the
        compiled chain does not take is reported, if it fails, with a copy of the record
        as it was read."""
        to_connect = self._value.to_connect_data
        has_header_converter = self._has_header_converter
        delivered: list[SinkRecord] = []
        append = delivered.append
        for raw in records:
            raw_headers = raw.headers
            if raw_headers:
                record = self._sink_record(raw)
                if record is not None:
                    append(record)
                continue
            raw_value = raw.value
            try:
                value_schema, value = to_connect(raw.topic, None, raw_value)
            except Exception as error:
                converted = self._value_recovered(raw, error)
                if converted is None:
                    continue
                value_schema, value = converted
            if has_header_converter:
                raw.headers = ConnectHeaders()
            raw.key_schema, raw.value_schema, raw.value = None, value_schema, value
            last = self._last_chain
            if last[0] is value_schema and last[1] is not None:
                compiled_schema, steps = last[1]
                try:
                    for compiled in steps:
                        value = compiled(raw, value)
                except Exception:
                    pass  # _side_record starts again from the record's value and decides
                else:
                    raw.value_schema, raw.value = compiled_schema, value
                    append(raw)
                    continue
            original = SinkRecord(
                raw.topic,
                raw.kafka_partition,
                raw.kafka_offset,
                raw.key,
                raw_value,
                raw.timestamp_ms,
                raw_headers,
                None,
                None,
                raw.timestamp_type,
            )
            record = self._side_record(raw, original)
            if record is not None:
                append(record)
        return delivered

    def sink_batch(self, records: Sequence[SinkRecord], batch: Hashable) -> list[SinkRecord]:
        """``apply_sink`` for a batch about to be put; the same records again when ``batch``
        (what identifies the ranges read) comes back because its ``put`` or ``flush``
        failed, as Kafka Connect delivers the same records again: nothing is converted,
        transformed or reported twice."""
        kept = self._unfinished
        if kept is not None and kept[0] == batch:
            return kept[1]
        delivered = self.apply_sink(records)
        self._unfinished = (batch, delivered)
        return delivered

    def sink_batch_done(self) -> None:
        """The batch was put and flushed: a batch read next is new."""
        self._unfinished = None

    def _sink_record(self, raw: SinkRecord) -> SinkRecord | None:
        topic = raw.topic
        key_schema, key = None, raw.key
        if self._converts_keys:  # a pass-through converter cannot fail: no stage to run
            try:
                key_schema, key = self._key.to_connect_data(topic, None, key)
            except Exception as error:
                converted = self._recover(
                    raw,
                    functools.partial(self._key.to_connect_data, topic, None, key),
                    Stage.KEY_CONVERTER,
                    self._key_name,
                    error,
                )
                if converted is None:
                    return None
                key_schema, key = converted
        value_schema, value = None, raw.value
        if self._converts_values:
            try:
                value_schema, value = self._value.to_connect_data(topic, None, value)
            except Exception as error:
                converted = self._value_recovered(raw, error)
                if converted is None:
                    return None
                value_schema, value = converted
        headers: Any = raw.headers
        if self._has_header_converter:
            if not headers:  # nothing to convert: nothing can fail
                headers = ConnectHeaders()
            else:
                headers = self._converted_headers(raw)
                if headers is None:
                    return None
        record = SinkRecord(
            topic,
            raw.kafka_partition,
            raw.kafka_offset,
            key,
            value,
            raw.timestamp_ms,
            headers,
            key_schema,
            value_schema,
            raw.timestamp_type,
        )
        if not self._appliers:
            return record
        if self._side_steps is not None:
            last = self._last_chain
            if last[0] is value_schema and not self._side_is_key and last[1] is not None:
                # the chain compiled for the last record's value schema, run here: most
                # records take this path and nothing else
                compiled_schema, steps = last[1]
                try:
                    for compiled in steps:
                        value = compiled(record, value)
                except Exception:
                    pass  # _side_result starts again from the record's value and decides
                else:
                    record.value_schema, record.value = compiled_schema, value
                    return record
            return self._side_record(record, raw)
        transformed: SinkRecord | None = self._transform(record, raw)
        return transformed

    def _value_recovered(self, raw: SinkRecord, error: Exception) -> Any:
        """The raw record's (schema, value) after its value converter's first failure
        (retried, tolerated or raised, as the operator decides); None if the record failed."""
        return self._recover(
            raw,
            functools.partial(self._value.to_connect_data, raw.topic, None, raw.value),
            Stage.VALUE_CONVERTER,
            self._value_name,
            error,
        )

    def _side_record(self, record: SinkRecord, raw: SinkRecord) -> SinkRecord | None:
        """The record through the chain of SideTransformations (``_side_result``), a
        failure reported with ``raw``; None if a stage dropped it or it failed."""
        result = self._side_result(record, raw)
        if result.__class__ is not tuple:
            return result  # type: ignore[no-any-return]
        # The record is the caller's own, only read by the chain: it takes the chain's
        # result instead of a copy being made with it.
        if self._side_is_key:
            record.key_schema, record.key = result
        else:
            record.value_schema, record.value = result
        return record

    def _converted_headers(self, raw: SinkRecord) -> Any:
        """The raw record's headers through the header converter (None if the record failed)."""
        try:
            return self._headers_in(raw)
        except Exception as error:
            return self._recover(
                raw,
                functools.partial(self._headers_in, raw),
                Stage.HEADER_CONVERTER,
                self._header_name,
                error,
            )

    def _headers_in(self, raw: SinkRecord) -> Any:
        return headers_in(self._header, raw)

    def original_of(self, record: SinkRecord) -> SinkRecord | None:
        """The raw record a record of the last batch put came from (None if it is not one)."""
        entry = self._originals.get(id(record))
        return entry[1] if entry is not None and entry[0] is record else None

    # ---- error handling ----------------------------------------------------------------

    def _failed_at(
        self, original: Any, stage: Stage, name: str, target_topic: str | None = None
    ) -> ProcessingContext:
        """The context of a record whose stage just raised (made only then: a record that
        does not fail costs no context)."""
        return ProcessingContext(original, stage, name, target_topic=target_topic)

    def _recover(
        self,
        original: Any,
        operation: Callable[[], Any],
        stage: Stage,
        name: str,
        error: Exception,
        target_topic: str | None = None,
    ) -> Any:
        """The stage's result after its first failure (retried, tolerated or raised, as the
        operator decides); None if the record failed."""
        context = self._failed_at(original, stage, name, target_topic)
        result = self.operator.after_failure(context, operation, stage, error)
        return None if context.failed else result

    @property
    def tolerates_all(self) -> bool:
        """``errors.tolerance=all``: a record the broker refuses is skipped (KIP-779)."""
        return self.plugins.errors.tolerate_all

    def skip_refused(self, original: SourceRecord, topic: str, error: BaseException) -> None:
        """A source record the broker refused for good (``errors.tolerance=all``): reported
        at stage KAFKA_PRODUCE with Kafka Connect's WorkerSourceTask as the class, to the
        log and, beyond Kafka Connect, to the source's dead-letter queue (``topic``, the one
        it was meant for, in its ``__connect.errors.topic``), and counted as skipped."""
        context = ProcessingContext(original, target_topic=topic)
        self.operator.skip_failed(context, Stage.KAFKA_PRODUCE, WORKER_SOURCE_TASK_CLASS, error)

    def await_dead_letters(self, partitions: Iterable[tuple[str, int]] | None = None) -> None:
        """Waits (bounded, and not once the task is stopping) for the dead-letter queue's
        writes of records of ``partitions`` (a sink batch's; None: every write so far):
        called before the offsets of the records they came from are committed."""
        if self.dead_letters is not None:
            self.dead_letters.await_writes(partitions)

    def forget_dead_letters(self, partitions: Iterable[tuple[str, int]]) -> None:
        """The task lost ``partitions``: their dead-letter queue writes are not awaited."""
        if self.dead_letters is not None:
            self.dead_letters.forget(partitions)

    def take_counts(self) -> ErrorCounts:
        return self.counts.take()

    def _new_errant_reporter(self) -> ErrantRecordReporter | None:
        """KIP-610's reporter for a sink task's context: None unless the connector has a
        dead-letter queue or logs errors (``errors.log.enable``), as Kafka Connect."""
        errors = self.plugins.errors
        if not errors.dlq_topic and not errors.log_enable:
            return None
        return ErrantRecordReporter(self)

    def as_read(self, record: SinkRecord) -> SinkRecord:
        """A record the task made itself, as bytes through the task's converters: what an
        errant record it reports goes to the dead-letter queue as."""
        topic = record.topic
        key = self._key.from_connect_data(topic, None, record.key_schema, record.key)
        value = self._value.from_connect_data(topic, None, record.value_schema, record.value)
        headers: Any = record.headers
        if headers.__class__ is not tuple:
            convert = self._header.from_connect_header
            headers = tuple((h.key, convert(topic, h.key, h.schema, h.value)) for h in headers)
        return SinkRecord(
            topic,
            record.kafka_partition,
            record.kafka_offset,
            key,
            value,
            record.timestamp_ms,
            headers,
            None,
            None,
            record.timestamp_type,
        )

    def report_errant(self, original: SinkRecord, error: BaseException) -> Future[None] | None:
        """Reports a record the sink task could not write (KIP-610) at stage TASK_PUT with
        Kafka Connect's SinkTask as the class: to the log and the dead-letter queue. The
        queue's write (None without a queue). Raises ErrorHandlerError with
        ``errors.tolerance=none``. Called by one thread at a time (the reporter's lock)."""
        context = ProcessingContext(original)
        dead_letters = self.dead_letters
        if dead_letters is not None:
            dead_letters.last_future = None
        self.operator.execute_failed(context, Stage.TASK_PUT, SINK_TASK_CLASS, error)
        return None if dead_letters is None else dead_letters.last_future

    def close(self) -> None:
        self.operator.close()
        self.plugins.close()


def start_pipeline(
    spec: PipelineSpec | None,
    task: TaskId,
    *,
    is_sink: bool,
    producer_conf: Mapping[str, str],
    sleep: Callable[[int], bool],
    stopping: Callable[[], bool] = lambda: False,
) -> TaskPipeline | None:
    """Builds the task's pipeline and creates its dead-letter queue's topic. None when the
    task needs none: no spec, or a pass-through pipeline that neither a sink task can
    report errant records through nor a source task skips refused records with
    (``errors.tolerance=all``); the plugins are then closed at once."""
    if spec is None:
        return None
    plugins = spec.factory()
    errors = plugins.errors
    reports = bool(errors.dlq_topic or errors.log_enable) if is_sink else errors.tolerate_all
    if plugins.is_pass_through() and not reports:
        plugins.close()
        return None
    pipeline = TaskPipeline.create(
        task,
        plugins,
        is_sink=is_sink,
        producer_conf=producer_conf,
        sleep=sleep,
        stopping=stopping,
    )
    try:
        pipeline.open(spec.admin_conf)
    except BaseException:
        pipeline.close()
        raise
    return pipeline
