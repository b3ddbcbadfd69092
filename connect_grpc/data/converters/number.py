"""Kafka's number converters (NumberConverter): a number as the big-endian bytes of Kafka's
Short/Integer/Long/Float/Double serializers. The schema is not checked, the value's type is
(as Kafka's cast does); None ↔ None."""

from __future__ import annotations

import math
import struct
from typing import Any, ClassVar

from connect_grpc.data.converters.base import BuiltinConverter
from connect_grpc.data.errors import DataError
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.plugins import SchemaAndValue
from connect_grpc.data.schema import (
    OPTIONAL_FLOAT32_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT16_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    Schema,
    python_class_name,
)

_FLOAT32_MAX = 3.4028234663852886e38


class NumberConverter(BuiltinConverter):
    """The shared behaviour; subclasses name the type, its schema and its struct format."""

    TYPE_NAME: ClassVar[str]
    DESERIALIZER: ClassVar[str]
    SCHEMA: ClassVar[Schema]
    FORMAT: ClassVar[struct.Struct]
    IS_FLOAT: ClassVar[bool] = False

    def from_connect_data(
        self, topic: str, headers: ConnectHeaders | None, schema: Schema | None, value: Any
    ) -> bytes | None:
        if value is None:
            return None
        if not self._is_right_type(value):
            raise DataError(
                f"Failed to serialize to {self.TYPE_NAME} (was {python_class_name(value)}): "
            )
        if self.IS_FLOAT and math.isfinite(value) and abs(value) > _FLOAT32_MAX \
                and self.FORMAT.size == 4:
            value = math.copysign(math.inf, value)  # Java's (float) of a large double
        try:
            return self.FORMAT.pack(value)
        except struct.error as exc:
            raise DataError(f"Failed to serialize to {self.TYPE_NAME}: {exc}") from exc

    def _is_right_type(self, value: Any) -> bool:
        if self.IS_FLOAT:
            return isinstance(value, float)
        return isinstance(value, int) and not isinstance(value, bool)

    def to_connect_data(
        self, topic: str, headers: ConnectHeaders | None, value: bytes | None
    ) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue(self.SCHEMA, None)
        if len(value) != self.FORMAT.size:
            raise DataError(
                f"Failed to deserialize {self.TYPE_NAME}: Size of data received by "
                f"{self.DESERIALIZER} is not {self.FORMAT.size}"
            )
        return SchemaAndValue(self.SCHEMA, self.FORMAT.unpack(value)[0])


class ShortConverter(NumberConverter):
    TYPE_NAME = "short"
    DESERIALIZER = "ShortDeserializer"
    SCHEMA = OPTIONAL_INT16_SCHEMA
    FORMAT = struct.Struct(">h")


class IntegerConverter(NumberConverter):
    TYPE_NAME = "integer"
    DESERIALIZER = "IntegerDeserializer"
    SCHEMA = OPTIONAL_INT32_SCHEMA
    FORMAT = struct.Struct(">i")


class LongConverter(NumberConverter):
    TYPE_NAME = "long"
    DESERIALIZER = "LongDeserializer"
    SCHEMA = OPTIONAL_INT64_SCHEMA
    FORMAT = struct.Struct(">q")


class FloatConverter(NumberConverter):
    TYPE_NAME = "float"
    DESERIALIZER = "FloatDeserializer"
    SCHEMA = OPTIONAL_FLOAT32_SCHEMA
    FORMAT = struct.Struct(">f")
    IS_FLOAT = True


class DoubleConverter(NumberConverter):
    TYPE_NAME = "double"
    DESERIALIZER = "DoubleDeserializer"
    SCHEMA = OPTIONAL_FLOAT64_SCHEMA
    FORMAT = struct.Struct(">d")
    IS_FLOAT = True
