"""PreviewPipeline of a Java connector: the JSON the JVM's ``PipelinePreview`` (``jvm/``) is
asked and answers, to and from ``pipeline.preview_model``'s values.

The request is ``{"type": "sink"|"source", "config": {...}, "records": [...]}``, each record
``{"topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value",
"headers": [[key, datum], ...]}``; a datum is null, ``{"raw": base64}`` or, for a source's
sample given as JSON, ``{"json": text}`` (the JVM reads it with Kafka's JsonConverter as the
Python preview reads it with its own). The answer is ``{"records": [...]}`` in the terms of
``PipelinePreview`` (a datum of Connect data ``{"json", "schema"}``), ``{"config_error":
message}`` when a plugin cannot be built, or ``{"error": {"class", "message", "cause"}}``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from connect_grpc.config_providers.redaction import SECRETS
from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.kernel.domain import ConnectorType
from connect_grpc.kernel.errors import ConnectError, InvalidArgumentError
from connect_grpc.pipeline.preview_model import (
    ConnectData,
    Data,
    FailureAction,
    Outcome,
    PipelinePreview,
    RecordPreview,
    RecordView,
    SampleData,
    SampleRecord,
    StageFailure,
    StageView,
    Verdict,
)

__all__ = ["java_preview_request", "preview_from_java"]


# ---- request ----------------------------------------------------------------------------------


def java_preview_request(
    config: Mapping[str, str],
    is_sink: bool,
    records: Sequence[SinkRecord] | Sequence[SourceRecord],
    samples: Sequence[SampleRecord] | None,
) -> dict[str, Any]:
    """The JVM's request: a sink's records as consumed bytes; a source's as the samples they
    were read from (``samples``, one a record, in order), placed where the Python reading
    put them (the topic a sample names, else the connector's)."""
    if is_sink:
        sink_records: Sequence[SinkRecord] = records  # type: ignore[assignment]
        entries = [_consumed(record) for record in sink_records]
    else:
        source_records: Sequence[SourceRecord] = records  # type: ignore[assignment]
        given = samples or ()
        entries = [
            _sample(record, sample) for record, sample in zip(source_records, given, strict=True)
        ]
    return {"type": "sink" if is_sink else "source", "config": dict(config), "records": entries}


def _consumed(record: SinkRecord) -> dict[str, Any]:
    headers = record.headers if isinstance(record.headers, tuple) else ()
    return {
        "topic": record.topic,
        "partition": record.kafka_partition,
        "offset": record.kafka_offset,
        "timestamp": record.timestamp_ms,
        "timestamp_type": record.timestamp_type.value,
        "key": _raw(record.key),
        "value": _raw(record.value),
        "headers": [[key, _raw(value)] for key, value in headers],
    }


def _sample(record: SourceRecord, sample: SampleRecord) -> dict[str, Any]:
    return {
        "topic": record.topic,
        "partition": record.kafka_partition,
        "offset": None,
        "timestamp": record.timestamp_ms,
        "key": _sample_datum(sample.key),
        "value": _sample_datum(sample.value),
        "headers": [[key, _sample_datum(value)] for key, value in sample.headers],
    }


def _raw(data: Any) -> dict[str, str] | None:
    if data is None:
        return None
    if isinstance(data, str):
        data = data.encode("utf-8")
    return {"raw": base64.b64encode(bytes(data)).decode("ascii")}


def _sample_datum(data: SampleData) -> dict[str, str] | None:
    if isinstance(data, str):
        return {"json": data}
    return _raw(data)


# ---- answer -----------------------------------------------------------------------------------


def preview_from_java(
    body: Mapping[str, Any], java_class: str, is_sink: bool, config_field: str
) -> PipelinePreview:
    """The JVM's answer as a PipelinePreview.

    Raises:
        InvalidArgumentError: a plugin of the config could not be built (on ``config_field``,
            as the Python preview's PipelineConfigError).
        ConnectError: the JVM's preview failed outright.
    """
    config_error = body.get("config_error")
    if config_error is not None:
        raise InvalidArgumentError.for_field(config_field, SECRETS.redact(str(config_error)))
    error = body.get("error")
    if isinstance(error, Mapping):
        cause = error.get("cause")
        detail = f"{error.get('class')}: {error.get('message')}"
        raise ConnectError(
            f"the preview of the Java connector {java_class} in the worker's JVM failed: "
            + SECRETS.redact(f"{detail} (caused by {cause})" if cause else detail)
        )
    return PipelinePreview(
        ConnectorType.SINK if is_sink else ConnectorType.SOURCE,
        tuple(_record_preview(record) for record in body.get("records") or ()),
    )


def _record_preview(entry: Mapping[str, Any]) -> RecordPreview:
    stages = tuple(_stage(stage) for stage in entry.get("stages") or ())
    output_json = entry.get("output")
    output = None
    if output_json is not None:
        # the last stage's view (the JVM's output is it), as the Python preview hands it
        last = stages[-1].record if stages else None
        output = last if last is not None else _view(output_json)
    failure_json = entry.get("failure")
    return RecordPreview(
        _view(entry["input"]),
        stages,
        Outcome(entry["outcome"]),
        output,
        None if failure_json is None else _failure(failure_json),
    )


def _stage(entry: Mapping[str, Any]) -> StageView:
    record = entry.get("record")
    return StageView(
        str(entry["stage"]),
        str(entry["class_name"]),
        Verdict(entry["verdict"]),
        None if record is None else _view(record),
        str(entry.get("alias") or ""),
        str(entry.get("predicate") or ""),
        bool(entry.get("predicate_matched")),
    )


def _failure(entry: Mapping[str, Any]) -> StageFailure:
    return StageFailure(
        str(entry["stage"]),
        str(entry["class_name"]),
        str(entry["exception_class"]),
        str(entry.get("message") or ""),
        FailureAction(entry["action"]),
        str(entry.get("dead_letter_topic") or ""),
        tuple(
            (str(key), None if value is None else base64.b64decode(value))
            for key, value in entry.get("dead_letter_headers") or ()
        ),
    )


def _view(entry: Mapping[str, Any]) -> RecordView:
    return RecordView(
        str(entry["topic"]),
        entry.get("partition"),
        entry.get("offset"),
        entry.get("timestamp"),
        _data(entry.get("key")),
        _data(entry.get("value")),
        tuple((str(key), _data(value)) for key, value in entry.get("headers") or ()),
    )


def _data(datum: Mapping[str, str] | None) -> Data:
    if datum is None:
        return None
    raw = datum.get("raw")
    if raw is not None:
        return base64.b64decode(raw)
    return ConnectData(str(datum["json"]), str(datum.get("schema") or ""))
