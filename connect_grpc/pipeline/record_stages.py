"""A task's converters around its transformation chain, run on each record of a batch where
the batch already is (the driver's loop, or the Spark task hosting the task).

Source (Kafka Connect's order): transformations (each behind its predicate) → header, key,
value converters → the producer. Sink: key, value, header converters → transformations →
``put``. Each stage is called directly; the first failure of a record's stage goes to the
task's RetryWithToleranceOperator (``after_failure``), which retries, tolerates or fails as
Kafka Connect's operator does, so a record that does not fail costs no error handling. A
record that fails (and is tolerated) or that a transformation drops goes no further.

``TaskPipeline`` builds on it with the task's error reporting and lifecycle.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.plugins import Converter, HeaderConverter
from connect_grpc.kernel.gc_tuning import collector_paused
from connect_grpc.pipeline.build import PipelinePlugins
from connect_grpc.pipeline.chain import TransformChain
from connect_grpc.pipeline.converting import (
    PassThroughConverter,
    PassThroughHeaderConverter,
    headers_in,
    headers_out,
)
from connect_grpc.pipeline.errant import ErrantRecordReporter
from connect_grpc.pipeline.tolerance import (
    ProcessingContext,
    RetryWithToleranceOperator,
    Stage,
    class_name,
)

__all__ = ["RecordStages"]


class RecordStages(TransformChain):
    """A task's converters and transformations, run on the records of its batches: a
    source's polled records to what is produced (``apply_source``), a sink's records read
    to what is put (``apply_sink``, ``sink_batch``). A stage's failure goes to the task's
    ``operator``."""

    def __init__(self, plugins: PipelinePlugins, operator: RetryWithToleranceOperator) -> None:
        self.plugins = plugins
        self.pass_through = plugins.is_pass_through()
        self.operator = operator
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
        #: KIP-610's reporter for a sink task's context (None unless it may report; the
        #: TaskPipeline makes it): with one, a sink batch keeps each record's original.
        self.errant: ErrantRecordReporter | None = None

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
        """``TransformChain._recover`` by the task's operator, which retries, tolerates or
        raises."""
        context = self._failed_at(original, stage, name, target_topic)
        result = self.operator.after_failure(context, operation, stage, error)
        return None if context.failed else result

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
