"""Kafka Connect's ``Values``, its schema inference (``Values.inferSchema``).

The schema of a schemaless value: a Python int is INT64 (there is no Byte/Short/Integer), a
float FLOAT64, a list or dict an ARRAY or MAP when all its elements share a type. It only
looks at values, never at text, so it depends on nothing else of ``Values``.
"""

from __future__ import annotations

from typing import Any

from connect_grpc.data.errors import SchemaBuilderError
from connect_grpc.data.schema import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT64_SCHEMA,
    INT64_SCHEMA,
    STRING_SCHEMA,
    Schema,
    Type,
)
from connect_grpc.data.struct import Struct
from connect_grpc.data.values_numbers import _INT64_MAX, _INT64_MIN


def infer_schema(value: Any) -> Schema | None:
    """The schema of a schemaless value, or None where none can be inferred. A Python int
    is INT64 (there is no Byte/Short/Integer), a float FLOAT64."""
    if isinstance(value, str):
        return STRING_SCHEMA
    if isinstance(value, bool):
        return BOOLEAN_SCHEMA
    if isinstance(value, int):
        return INT64_SCHEMA if _INT64_MIN <= value <= _INT64_MAX else None
    if isinstance(value, float):
        return FLOAT64_SCHEMA
    if isinstance(value, bytes | bytearray | memoryview):
        return BYTES_SCHEMA
    if isinstance(value, list):
        return _infer_list_schema(value)
    if isinstance(value, dict):
        return _infer_map_schema(value)
    if isinstance(value, Struct):
        return value.schema
    return None


class _SchemaDetector:
    def __init__(self) -> None:
        self.known_type: Type | None = None
        self.optional = False

    def can_detect(self, value: Any) -> bool:
        if value is None:
            self.optional = True
            return True
        schema = infer_schema(value)
        if schema is None:
            return False
        if self.known_type is None:
            self.known_type = schema.type
        return self.known_type is schema.type

    def schema(self) -> Schema:
        if self.known_type is None:  # only None values: Kafka's builder refuses a null type
            raise SchemaBuilderError("type cannot be null")
        return Schema(self.known_type, optional=self.optional)


def _infer_list_schema(values: list[Any]) -> Schema | None:
    if not values:
        return None
    detector = _SchemaDetector()
    if not all(detector.can_detect(item) for item in values):
        return None
    return Schema(Type.ARRAY, value_schema=detector.schema())


def _infer_map_schema(values: dict[Any, Any]) -> Schema | None:
    if not values:
        return None
    keys, entries = _SchemaDetector(), _SchemaDetector()
    for key, entry in values.items():
        if not keys.can_detect(key) or not entries.can_detect(entry):
            return None
    return Schema(Type.MAP, key_schema=keys.schema(), value_schema=entries.schema())
