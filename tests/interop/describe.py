"""The canonical text of Connect data that tests/interop/JsonInterop.java prints for Kafka's
data (describeSchema, describeValue there): the same data gives the same text."""

from __future__ import annotations

import base64
import datetime
import decimal
import struct as binary
from typing import Any

from connect_grpc.data.logical import Date, Time, Timestamp, unscaled_and_scale
from connect_grpc.data.schema import (
    DATE_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
    Schema,
    Type,
)
from connect_grpc.data.struct import Struct


def _b64_text(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def describe_schema(schema: Schema | None) -> str:
    if schema is None:
        return "null"
    params = (
        "null" if schema.parameters is None
        else ";".join(f"{k}={v}" for k, v in sorted(schema.parameters.items()))
    )
    parts = [
        f"{{{schema.type.name}{'?' if schema.optional else ''}",
        f"name={schema.name if schema.name is not None else 'null'}",
        f"version={schema.version if schema.version is not None else 'null'}",
        f"doc={_b64_text(schema.doc) if schema.doc is not None else 'null'}",
        f"params={params}",
        f"default={describe_value(schema, schema.default)}",
    ]
    if schema.type is Type.ARRAY:
        parts.append(f"items={describe_schema(schema.value_schema)}")
    elif schema.type is Type.MAP:
        parts.append(f"keys={describe_schema(schema.key_schema)}")
        parts.append(f"values={describe_schema(schema.value_schema)}")
    elif schema.type is Type.STRUCT:
        fields = ",".join(f"{f.name}:{describe_schema(f.schema)}" for f in schema.fields)
        parts.append(f"fields=[{fields}]")
    return "|".join(parts) + "}"


_INT_PREFIX = {Type.INT8: "i8", Type.INT16: "i16", Type.INT32: "i32", Type.INT64: "i64"}


def describe_value(schema: Schema | None, value: Any) -> str:
    if value is None:
        return "null"
    if schema is not None and schema.name in (DATE_LOGICAL_NAME, TIME_LOGICAL_NAME,
                                             TIMESTAMP_LOGICAL_NAME):
        return f"ms:{_millis(schema, value)}"
    if schema is None and isinstance(value, datetime.date | datetime.time):
        return f"ms:{_millis(_LOGICAL_SCHEMA_OF[type(value)], value)}"
    if isinstance(value, decimal.Decimal):
        unscaled, scale = unscaled_and_scale(value)
        return f"dec:{unscaled}e{scale}"
    if isinstance(value, bool):
        return f"bool:{'true' if value else 'false'}"
    if isinstance(value, int):
        prefix = _INT_PREFIX[schema.type] if schema is not None else "i64"
        return f"{prefix}:{value}"
    if isinstance(value, float):
        if schema is not None and schema.type is Type.FLOAT32:
            return f"f32:{binary.pack('>f', value).hex()}"
        return f"f64:{binary.pack('>d', value).hex()}"
    if isinstance(value, str):
        return f"str:{_b64_text(value)}"
    if isinstance(value, bytes | bytearray):
        return f"bytes:{base64.b64encode(value).decode('ascii')}"
    if isinstance(value, list):
        item_schema = schema.value_schema if schema is not None else None
        return "[" + ",".join(describe_value(item_schema, item) for item in value) + "]"
    if isinstance(value, dict):
        key_schema = schema.key_schema if schema is not None else None
        value_schema = schema.value_schema if schema is not None else None
        entries = sorted(
            f"{describe_value(key_schema, k)}={describe_value(value_schema, v)}"
            for k, v in value.items()
        )
        return "{" + ",".join(entries) + "}"
    if isinstance(value, Struct):
        fields = ",".join(
            f"{f.name}={describe_value(f.schema, value.get_without_default(f.name))}"
            for f in value.schema.fields
        )
        return f"Struct{{{fields}}}"
    raise AssertionError(f"no description for {value!r}")


def _millis(schema: Schema, value: Any) -> int:
    if schema.name == DATE_LOGICAL_NAME:
        return Date.from_logical(schema, value) * 86_400_000
    if schema.name == TIME_LOGICAL_NAME:
        return Time.from_logical(schema, value)
    return Timestamp.from_logical(schema, value)


#: The logical schema of a temporal value met without a schema (in a mixed list).
_LOGICAL_SCHEMA_OF: dict[type, Schema] = {
    datetime.date: Date.SCHEMA, datetime.time: Time.SCHEMA, datetime.datetime: Timestamp.SCHEMA,
}
