"""Kafka's ByteArrayConverter: bytes through unchanged."""

from __future__ import annotations

from typing import Any

from connect_grpc.data.converters.base import BuiltinConverter
from connect_grpc.data.errors import DataError
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.plugins import SchemaAndValue
from connect_grpc.data.schema import OPTIONAL_BYTES_SCHEMA, Schema, Type, python_class_name


class ByteArrayConverter(BuiltinConverter):
    """Passes bytes through (schema None or BYTES); reads OPTIONAL_BYTES. Also a
    HeaderConverter."""

    def from_connect_data(
        self, topic: str, headers: ConnectHeaders | None, schema: Schema | None, value: Any
    ) -> bytes | None:
        if schema is not None and schema.type is not Type.BYTES:
            raise DataError(f"Invalid schema type for ByteArrayConverter: {schema.type}")
        if value is None or isinstance(value, bytes):
            return value
        if isinstance(value, bytearray | memoryview):
            return bytes(value)
        raise DataError(
            f"ByteArrayConverter is not compatible with objects of type {python_class_name(value)}"
        )

    def to_connect_data(
        self, topic: str, headers: ConnectHeaders | None, value: bytes | None
    ) -> SchemaAndValue:
        return SchemaAndValue(OPTIONAL_BYTES_SCHEMA, value)
