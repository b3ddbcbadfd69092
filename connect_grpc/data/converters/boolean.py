"""Kafka's BooleanConverter: one byte, 0x01 or 0x00."""

from __future__ import annotations

from typing import Any

from connect_grpc.data.converters.base import BuiltinConverter
from connect_grpc.data.errors import DataError
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.plugins import SchemaAndValue
from connect_grpc.data.schema import OPTIONAL_BOOLEAN_SCHEMA, Schema, Type, python_class_name

_TRUE, _FALSE = b"\x01", b"\x00"


class BooleanConverter(BuiltinConverter):
    """Schema None or BOOLEAN; reads OPTIONAL_BOOLEAN. None ↔ None. Also a HeaderConverter."""

    def from_connect_data(
        self, topic: str, headers: ConnectHeaders | None, schema: Schema | None, value: Any
    ) -> bytes | None:
        if schema is not None and schema.type is not Type.BOOLEAN:
            raise DataError(f"Invalid schema type for BooleanConverter: {schema.type}")
        if value is None:
            return None
        if not isinstance(value, bool):
            raise DataError(
                "BooleanConverter is not compatible with objects of type "
                f"{python_class_name(value)}"
            )
        return _TRUE if value else _FALSE

    def to_connect_data(
        self, topic: str, headers: ConnectHeaders | None, value: bytes | None
    ) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(OPTIONAL_BOOLEAN_SCHEMA, None)
        if len(value) != 1:
            raise DataError(
                "Failed to deserialize boolean: Size of data received by BooleanDeserializer "
                "is not 1"
            )
        if value == _TRUE:
            return SchemaAndValue(OPTIONAL_BOOLEAN_SCHEMA, True)
        if value == _FALSE:
            return SchemaAndValue(OPTIONAL_BOOLEAN_SCHEMA, False)
        raise DataError(
            "Failed to deserialize boolean: Unexpected byte received by BooleanDeserializer: "
            f"{int.from_bytes(value, 'big', signed=True)}"
        )
