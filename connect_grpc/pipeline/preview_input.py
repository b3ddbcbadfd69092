"""A preview's input: the records a PreviewPipeline request gives (samples) or names (the
last records of a topic), as the records a task would read (sink) or poll (source)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import orjson

from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.data.converters.json import JsonConverter
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.plugins import SchemaAndValue
from connect_grpc.kernel.configdef import java_trim
from connect_grpc.kernel.errors import InvalidArgumentError
from connect_grpc.pipeline.preview_model import (
    MAX_PREVIEW_RECORDS,
    PreviewRequest,
    SampleData,
    SampleRecord,
)

__all__ = [
    "TopicTailReader",
    "json_converter",
    "preview_records",
    "sink_samples",
    "source_samples",
]

#: Reads the last records of a topic for a sink connector's preview within the caller's
#: deadline: (connector config, topic, how many) -> the records, oldest first.
TopicTailReader = Callable[[Mapping[str, str], str, int], list[SinkRecord]]


def preview_records(
    request: PreviewRequest,
    config: Mapping[str, str],
    is_sink: bool,
    read_tail: TopicTailReader,
) -> Sequence[SinkRecord] | Sequence[SourceRecord]:
    """The records the request asks a preview of, as a task would read (sink) or poll
    (source) them: its samples, or the last records of a topic (``read_tail``).

    Raises:
        InvalidArgumentError: the request's input is malformed.
        UnavailableError: Kafka did not answer in time (``from_topic``).
    """
    if request.samples is not None and request.from_topic is not None:
        raise InvalidArgumentError.for_field(
            "samples", "give either samples or from_topic, not both"
        )
    tail = request.from_topic
    if tail is not None:
        if not is_sink:
            raise InvalidArgumentError.for_field(
                "from_topic",
                "a source connector's records come from its own system: give samples",
            )
        if not tail.topic.strip():
            raise InvalidArgumentError.for_field("from_topic.topic", "required: a topic name")
        if not 1 <= tail.last <= MAX_PREVIEW_RECORDS:
            raise InvalidArgumentError.for_field(
                "from_topic.last", f"must be between 1 and {MAX_PREVIEW_RECORDS}, not {tail.last}"
            )
        return read_tail(config, tail.topic.strip(), tail.last)
    samples = request.samples
    if not samples:
        raise InvalidArgumentError.for_field(
            "samples.records", "required: at least one sample record, or from_topic"
        )
    if len(samples) > MAX_PREVIEW_RECORDS:
        raise InvalidArgumentError.for_field(
            "samples.records",
            f"at most {MAX_PREVIEW_RECORDS} records, not {len(samples)}",
        )
    if is_sink:
        return sink_samples(samples, _first(config.get("topics", "")))
    return source_samples(samples, java_trim(config.get("topic", "")) or None)


def _first(topics: str) -> str | None:
    """The first entry of a ``topics`` list (None when it is empty)."""
    names = [java_trim(name) for name in topics.split(",") if java_trim(name)]
    return names[0] if names else None


def sink_samples(samples: Sequence[SampleRecord], default_topic: str | None) -> list[SinkRecord]:
    """The samples as consumed records: JSON text as its UTF-8 bytes."""
    return [
        SinkRecord(
            _topic(sample, index, default_topic),
            0 if sample.partition is None else sample.partition,
            index if sample.offset is None else sample.offset,
            _bytes(sample.key),
            _bytes(sample.value),
            sample.timestamp_ms,
            tuple((key, _bytes(value)) for key, value in sample.headers),
        )
        for index, sample in enumerate(samples)
    ]


def source_samples(
    samples: Sequence[SampleRecord], default_topic: str | None
) -> list[SourceRecord]:
    """The samples as polled records: JSON text read as JsonConverter reads it (an envelope
    with its schema, anything else schemaless), bytes as schemaless bytes."""
    reader = _SampleReader()
    records = []
    for index, sample in enumerate(samples):
        field = f"samples.records[{index}]"
        key = reader.read(sample.key, f"{field}.key.json")
        value = reader.read(sample.value, f"{field}.value.json")
        headers = ConnectHeaders()
        for position, (header_key, header_value) in enumerate(sample.headers):
            read = reader.read(header_value, f"{field}.headers[{position}].value.json")
            headers.add(header_key, read.value, read.schema)
        records.append(
            SourceRecord(
                source_partition={},
                source_offset={},
                topic=_topic(sample, index, default_topic),
                value=value.value,
                key=key.value,
                kafka_partition=sample.partition,
                headers=headers,
                key_schema=key.schema,
                value_schema=value.schema,
                timestamp_ms=sample.timestamp_ms,
            )
        )
    return records


def _topic(sample: SampleRecord, index: int, default_topic: str | None) -> str:
    if sample.topic:
        return sample.topic
    if default_topic:
        return default_topic
    raise InvalidArgumentError.for_field(
        f"samples.records[{index}].topic",
        "required: the connector's config names no topic to take by default",
    )


def _bytes(data: SampleData) -> bytes | None:
    return data.encode("utf-8") if isinstance(data, str) else data


class _SampleReader:
    """JSON text as Connect data: an envelope through a JsonConverter with schemas, any
    other JSON through one without."""

    def __init__(self) -> None:
        self._envelopes = json_converter(schemas_enable=True)
        self._plain = json_converter(schemas_enable=False)

    def read(self, data: SampleData, field: str) -> SchemaAndValue:
        if not isinstance(data, str):
            return SchemaAndValue(None, data)
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise InvalidArgumentError.for_field(field, f"not JSON: {exc}") from None
        is_envelope = isinstance(document, dict) and document.keys() == {"schema", "payload"}
        converter = self._envelopes if is_envelope else self._plain
        try:
            return converter.to_connect_data("", None, data.encode("utf-8"))
        except Exception as exc:
            raise InvalidArgumentError.for_field(field, str(exc)) from None


def json_converter(*, schemas_enable: bool) -> JsonConverter:
    """A JsonConverter as a preview reads samples and renders Connect data with."""
    converter = JsonConverter()
    converter.configure(
        {
            "schemas.enable": str(schemas_enable).lower(),
            "decimal.format": "NUMERIC",
            "replace.null.with.default": "false",
        },
        False,
    )
    return converter
