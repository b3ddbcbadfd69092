"""The converters of a side that neither the connector nor the worker sets (bytes pass
through), and a record's headers through a header converter: what a task's pipeline and a
preview both convert with."""

from __future__ import annotations

from typing import Any

from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.data.errors import DataError
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.plugins import Converter, HeaderConverter, SchemaAndValue

__all__ = ["PassThroughConverter", "PassThroughHeaderConverter", "headers_in", "headers_out"]


class PassThroughConverter(Converter):
    """The converter of a side that neither the connector nor the worker sets: bytes go out
    as they are and str as UTF-8; bytes read are handed on as bytes, without a schema."""

    def from_connect_data(self, topic: str, headers: Any, schema: Any, value: Any) -> bytes | None:
        if value is None or isinstance(value, bytes):
            return value
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, bytearray | memoryview):
            return bytes(value)
        raise DataError(
            f"no converter is configured for {type(value).__name__} data: set key.converter "
            "and value.converter, or return bytes or str"
        )

    def to_connect_data(self, topic: str, headers: Any, value: bytes | None) -> SchemaAndValue:
        return SchemaAndValue(None, value)


class PassThroughHeaderConverter(HeaderConverter):
    """The header converter of a connector that sets none: as PassThroughConverter."""

    _values = PassThroughConverter()

    def from_connect_header(
        self, topic: str, header_key: str, schema: Any, value: Any
    ) -> bytes | None:
        return self._values.from_connect_data(topic, None, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return SchemaAndValue(None, value)


def headers_in(converter: HeaderConverter, raw: SinkRecord) -> ConnectHeaders:
    """A consumed record's (key, bytes) headers through the header converter."""
    headers = ConnectHeaders()
    convert, topic = converter.to_connect_header, raw.topic
    for key, value in raw.headers:
        converted = convert(topic, key, value)
        headers.add(key, converted.value, converted.schema)
    return headers


def headers_out(
    converter: HeaderConverter, record: SourceRecord
) -> tuple[tuple[str, bytes | None], ...]:
    """A source record's headers as they go out: raw (key, bytes) pairs as they are,
    Connect headers (a header SMT's, or the task's own) through the header converter."""
    headers: Any = record.headers
    if headers.__class__ is tuple:
        raw: tuple[tuple[str, bytes | None], ...] = headers
        return raw
    convert, topic = converter.from_connect_header, record.topic
    return tuple(
        (header.key, convert(topic, header.key, header.schema, header.value)) for header in headers
    )
