"""Pipeline preview: records run through a connector's converters and transformations one
stage at a time, each stage's output kept, nothing written.

The plugins are the ones a task of the connector would get (``build_pipeline``) and every
stage is called as the task's pipeline calls it (``task_pipeline``), in Kafka Connect's
order: a sink's key, value and header converters, then its transformations; a source's
transformations, then its header, key and value converters. A stage that raises is handed
to a RetryWithToleranceOperator of the connector's ``errors.*`` settings of its own (each
record is previewed as if it were the first its task saw), whose reporter keeps the
failure instead of logging or writing it: what it decides (skip the record, fail the task)
and the ``__connect.errors.*`` headers of the record's context are the answer. A
RetriableError is not retried here: the operator is told the task is stopping, so the
record ends as it would once ``errors.retry.timeout`` ran out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import orjson

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.data.converters.json import JsonConverter
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.plugins import Converter, HeaderConverter
from connect_grpc.data.schema import Schema
from connect_grpc.kernel.domain import ConnectorType, TaskId
from connect_grpc.pipeline.build import PipelinePlugins, TransformStage, build_pipeline
from connect_grpc.pipeline.chain import predicate_allows
from connect_grpc.pipeline.converting import (
    PassThroughConverter,
    PassThroughHeaderConverter,
    headers_in,
    headers_out,
)
from connect_grpc.pipeline.dead_letter import context_headers
from connect_grpc.pipeline.preview_input import json_converter
from connect_grpc.pipeline.preview_model import (
    ConnectData,
    Data,
    FailureAction,
    Outcome,
    PipelinePreview,
    RecordPreview,
    RecordView,
    StageFailure,
    StageView,
    Verdict,
)
from connect_grpc.pipeline.tolerance import (
    ErrorHandlerError,
    OriginalRecord,
    ProcessingContext,
    RetryWithToleranceOperator,
    Stage,
    class_name,
    exception_class_name,
)

#: The task whose dead-letter headers a preview shows.
PREVIEW_TASK = 0
#: The stage name of transformations (Stage's values are Kafka Connect's names).
_TRANSFORMATION = Stage.TRANSFORMATION.value


def preview_pipeline(
    connector_config: Mapping[str, str],
    worker_config: WorkerConfig,
    plugins: Plugins,
    *,
    is_sink: bool,
    records: Sequence[SinkRecord] | Sequence[SourceRecord],
) -> PipelinePreview:
    """Every record through the pipeline a task of the connector (its config resolved and
    valid) would build; the plugins are closed before this returns.

    Raises:
        PipelineConfigError: a plugin could not be created or configured.
    """
    pipeline = build_pipeline(connector_config, worker_config, plugins, is_sink=is_sink)
    try:
        previewer = Previewer(connector_config.get("name", ""), pipeline)
        if is_sink:
            sink_records: Sequence[SinkRecord] = records  # type: ignore[assignment]
            previews = tuple(previewer.sink(record) for record in sink_records)
        else:
            source_records: Sequence[SourceRecord] = records  # type: ignore[assignment]
            previews = tuple(previewer.source(record) for record in source_records)
    finally:
        pipeline.close()
    return PipelinePreview(ConnectorType.SINK if is_sink else ConnectorType.SOURCE, previews)


# ---- the previewer --------------------------------------------------------------------------


class _Stopping(Exception):
    """A stage failed: ``failure`` says how (raised out of a record's preview)."""

    def __init__(self, failure: StageFailure) -> None:
        self.failure = failure


class _Kept:
    """The reporter of a preview's operator: keeps the failed record's context."""

    def __init__(self) -> None:
        self.context: ProcessingContext | None = None

    def report(self, context: ProcessingContext) -> None:
        self.context = context

    def close(self) -> None:
        return


def _never_retry(delay_ms: int) -> bool:
    return True  # "the task is stopping": a retriable failure ends at once


class Previewer:
    """Runs records through one connector's pipeline plugins, stage by stage."""

    def __init__(self, connector: str, plugins: PipelinePlugins) -> None:
        self._task = TaskId(connector, PREVIEW_TASK)
        self._plugins = plugins
        self._errors = plugins.errors
        self._render = DataRenderer()
        #: The class names of the plugins (which live as long as this previewer), by id.
        self._names: dict[int, str] = {}

    # ---- sink: key, value, header converters, then transformations ----------------------

    def sink(self, raw: SinkRecord) -> RecordPreview:
        self._render.forget()
        stages: list[StageView] = []
        view = self._render.record
        try:
            record = self._sink_converted(raw, stages)
            for stage in self._plugins.stages:
                record = self._transformed(stage, record, raw, stages)
                if record is None:
                    return RecordPreview(view(raw), tuple(stages), Outcome.DROPPED)
        except _Stopping as stopped:
            return RecordPreview(view(raw), tuple(stages), Outcome.FAILED, failure=stopped.failure)
        return RecordPreview(
            view(raw), tuple(stages), Outcome.DELIVERED, _last(stages, record, view)
        )

    def _sink_converted(self, raw: SinkRecord, stages: list[StageView]) -> SinkRecord:
        plugins, topic = self._plugins, raw.topic
        record = SinkRecord(
            topic,
            raw.kafka_partition,
            raw.kafka_offset,
            raw.key,
            raw.value,
            raw.timestamp_ms,
            raw.headers,
            None,
            None,
            raw.timestamp_type,
        )
        self._sink_side(Stage.KEY_CONVERTER, plugins.key_converter, raw, record, stages)
        self._sink_side(Stage.VALUE_CONVERTER, plugins.value_converter, raw, record, stages)
        if plugins.header_converter is not None:
            record.headers = self._converted(
                Stage.HEADER_CONVERTER,
                plugins.header_converter,
                raw,
                lambda c: headers_in(c, raw),
                stages,
            )
            stages.append(self._applied(Stage.HEADER_CONVERTER, plugins.header_converter, record))
        return record

    def _sink_side(
        self,
        stage: Stage,
        converter: Converter | None,
        raw: SinkRecord,
        record: SinkRecord,
        stages: list[StageView],
    ) -> None:
        """Converts the key (KEY_CONVERTER) or value of ``record`` (the preview's own copy
        of ``raw``) in place; a side without a converter keeps its bytes."""
        if converter is None:
            return
        is_key = stage is Stage.KEY_CONVERTER
        data, topic = (raw.key if is_key else raw.value), raw.topic
        schema, value = self._converted(
            stage, converter, raw, lambda c: c.to_connect_data(topic, None, data), stages
        )
        if is_key:
            record.key_schema, record.key = schema, value
        else:
            record.value_schema, record.value = schema, value
        stages.append(self._applied(stage, converter, record))

    # ---- source: transformations, then header, key, value converters --------------------

    def source(self, original: SourceRecord) -> RecordPreview:
        self._render.forget()
        stages: list[StageView] = []
        view = self._render.record
        record: SourceRecord | None = original
        try:
            for stage in self._plugins.stages:
                record = self._transformed(stage, record, original, stages)
                if record is None:
                    return RecordPreview(view(original), tuple(stages), Outcome.DROPPED)
            assert record is not None
            output = self._source_converted(original, record, stages)
        except _Stopping as stopped:
            return RecordPreview(
                view(original), tuple(stages), Outcome.FAILED, failure=stopped.failure
            )
        return RecordPreview(
            view(original), tuple(stages), Outcome.DELIVERED, _last(stages, output, view)
        )

    def _source_converted(
        self, original: SourceRecord, record: SourceRecord, stages: list[StageView]
    ) -> SourceRecord:
        plugins, topic = self._plugins, record.topic
        connect_headers = None if isinstance(record.headers, tuple) else record.headers
        if connect_headers is not None:
            header_converter = plugins.header_converter or PassThroughHeaderConverter()
            converted_headers = self._converted(
                Stage.HEADER_CONVERTER,
                header_converter,
                original,
                lambda c: headers_out(c, record),
                stages,
                topic,
            )
            record = record.new_record(headers=converted_headers)
            stages.append(self._applied(Stage.HEADER_CONVERTER, header_converter, record))
        record = self._source_side(
            Stage.KEY_CONVERTER, plugins.key_converter, original, record, connect_headers, stages
        )
        return self._source_side(
            Stage.VALUE_CONVERTER,
            plugins.value_converter,
            original,
            record,
            connect_headers,
            stages,
        )

    def _source_side(
        self,
        stage: Stage,
        converter: Converter | None,
        original: SourceRecord,
        record: SourceRecord,
        connect_headers: ConnectHeaders | None,
        stages: list[StageView],
    ) -> SourceRecord:
        """The record with its key (KEY_CONVERTER) or value as bytes; as in the task's
        pipeline, bytes and null go out as they are without a converter."""
        is_key = stage is Stage.KEY_CONVERTER
        schema, data = (
            (record.key_schema, record.key) if is_key else (record.value_schema, record.value)
        )
        if converter is None and (data is None or isinstance(data, bytes)):
            return record
        used = converter or PassThroughConverter()
        topic = record.topic
        converted = self._converted(
            stage,
            used,
            original,
            lambda c: c.from_connect_data(topic, connect_headers, schema, data),
            stages,
            topic,
        )
        if is_key:
            record = record.new_record(key=converted, key_schema=None)
        else:
            record = record.new_record(value=converted, value_schema=None)
        stages.append(self._applied(stage, used, record))
        return record

    # ---- shared --------------------------------------------------------------------------

    def _converted(
        self,
        stage: Stage,
        converter: Converter | HeaderConverter,
        original: OriginalRecord,
        convert: Callable[[Any], Any],
        stages: list[StageView],
        target_topic: str | None = None,
    ) -> Any:
        """The converter's result; a failure ends the record's preview."""
        try:
            return convert(converter)
        except Exception as error:
            name = self._name(converter)
            context = ProcessingContext(original, stage, name, target_topic=target_topic)
            stages.append(StageView(stage.name, name, Verdict.FAILED, None))
            raise _Stopping(self._failure(context, error)) from None

    def _transformed(
        self,
        stage: TransformStage,
        record: Any,
        original: OriginalRecord,
        stages: list[StageView],
    ) -> Any:
        name = self._name(stage.transformation)
        predicate = stage.predicate
        try:
            applies = predicate_allows(stage, record)
            result = stage.transformation.apply(record) if applies else record
        except Exception as error:
            context = ProcessingContext(original, Stage.TRANSFORMATION, name)
            failure = self._failure(context, error)
            stages.append(
                StageView(
                    _TRANSFORMATION,
                    name,
                    Verdict.FAILED,
                    None,
                    stage.alias,
                    stage.predicate_alias,
                )
            )
            raise _Stopping(failure) from None
        if not applies:
            verdict = Verdict.SKIPPED_BY_PREDICATE
        else:
            verdict = Verdict.APPLIED if result is not None else Verdict.DROPPED
        stages.append(
            StageView(
                _TRANSFORMATION,
                name,
                verdict,
                None if result is None else self._render.record(result),
                stage.alias,
                stage.predicate_alias,
                predicate is not None and applies,
            )
        )
        return result

    def _applied(self, stage: Stage, converter: object, record: Any) -> StageView:
        return StageView(
            stage.value, self._name(converter), Verdict.APPLIED, self._render.record(record)
        )

    def _name(self, plugin: object) -> str:
        """The plugin's class as the dead-letter headers name it (worked out once)."""
        name = self._names.get(id(plugin))
        if name is None:
            name = self._names[id(plugin)] = class_name(plugin)
        return name

    def _failure(self, context: ProcessingContext, error: Exception) -> StageFailure:
        """What the connector's error handling makes of the stage's failure."""
        kept = _Kept()
        operator = RetryWithToleranceOperator(self._errors, [kept], sleep=_never_retry)
        stage = context.stage
        assert stage is not None

        def again() -> Any:
            raise error

        try:
            operator.after_failure(context, again, stage, error)
            action = FailureAction.RECORD_SKIPPED
        except ErrorHandlerError:
            action = FailureAction.TASK_FAILS
        failed = kept.context or context
        errors = self._errors
        headers: tuple[tuple[str, bytes | None], ...] = ()
        if errors.dlq_topic and errors.dlq_context_headers:
            headers = tuple(context_headers(failed, self._task))
        cause = failed.error or error
        return StageFailure(
            stage.name,
            failed.executing_class,
            exception_class_name(cause),
            str(cause),
            action,
            errors.dlq_topic,
            headers,
        )


def _last(stages: list[StageView], record: Any, view: Callable[[Any], RecordView]) -> RecordView:
    """The delivered record's view: the last stage's, which shows it as it is (nothing
    changes a record after its last stage), else its own."""
    if stages and stages[-1].record is not None:
        return stages[-1].record
    return view(record)


# ---- rendering --------------------------------------------------------------------------------


#: Each thread's JsonConverter for rendering and its schemas' JSON text, kept from one call
#: to the next: a converter compiles its writer of a schema at first use, which costs more
#: than a preview's rendering of a hundred records with it.
_RENDERING = threading.local()
#: The most schemas' texts a thread keeps (then it starts afresh).
SCHEMA_TEXTS_KEPT = 256


def _rendering_state() -> tuple[JsonConverter, dict[Schema, str]]:
    state: tuple[JsonConverter, dict[Schema, str]] | None = getattr(_RENDERING, "state", None)
    if state is None:
        state = _RENDERING.state = (json_converter(schemas_enable=False), {})
    if len(state[1]) > SCHEMA_TEXTS_KEPT:
        state[1].clear()
    return state


class DataRenderer:
    """Records as RecordViews: bytes and null without a schema as they are, any other data
    as JSON text (JsonConverter's payload, decimals as numbers) with its schema's JSON.

    What one record's stages leave unchanged (its key after the key converter, its headers
    after the header converter, mostly) is the same object from stage to stage: it is
    rendered once per record (``forget`` starts the next record)."""

    def __init__(self) -> None:
        self._json, self._schemas = _rendering_state()
        #: id of data (or headers) → (its schema, itself, its rendering), for one record
        self._rendered: dict[int, tuple[Any, Any, Any]] = {}

    def forget(self) -> None:
        self._rendered.clear()

    def record(self, record: Any) -> RecordView:
        return RecordView(
            record.topic,
            record.kafka_partition,
            getattr(record, "kafka_offset", None),
            record.timestamp_ms,
            self.data(record.topic, record.key_schema, record.key),
            self.data(record.topic, record.value_schema, record.value),
            self.headers(record.topic, record.headers),
        )

    def headers(self, topic: str, headers: Iterable[Any]) -> tuple[tuple[str, Data], ...]:
        if isinstance(headers, tuple):  # raw (key, bytes) pairs, as they are
            return headers
        known = self._rendered.get(id(headers))
        if known is not None and known[1] is headers:
            rendered: tuple[tuple[str, Data], ...] = known[2]
            return rendered
        rendered = tuple(
            (header.key, self.data(topic, header.schema, header.value)) for header in headers
        )
        self._rendered[id(headers)] = (None, headers, rendered)
        return rendered

    def data(self, topic: str, schema: Schema | None, value: Any) -> Data:
        if schema is None and (value is None or isinstance(value, bytes)):
            return value
        known = self._rendered.get(id(value))
        if known is not None and known[1] is value and known[0] is schema:
            data: Data = known[2]
            return data
        data = self._render(topic, schema, value)
        self._rendered[id(value)] = (schema, value, data)
        return data

    def _render(self, topic: str, schema: Schema | None, value: Any) -> ConnectData:
        try:
            payload = self._json.from_connect_data(topic, None, schema, value)
            text = "null" if payload is None else payload.decode("utf-8")
        except Exception:  # data its schema does not describe: shown all the same
            text = orjson.dumps(repr(value)).decode("utf-8")
        return ConnectData(text, self._schema_text(schema))

    def _schema_text(self, schema: Schema | None) -> str:
        if schema is None:
            return ""
        # Put back under this call's schema object (equal to the stored key, which an
        # earlier call built): the call's next records find it by identity, not by a deep
        # comparison.
        text = self._schemas.pop(schema, None)
        if text is None:
            text = orjson.dumps(self._json.as_json_schema(schema)).decode("utf-8")
        self._schemas[schema] = text
        return text
