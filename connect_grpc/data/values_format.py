"""Kafka Connect's ``Values``, its text output (``Values.convertToString``).

:func:`convert_to_string` writes Java's text: ``1.0E20``, ``true``, base64 bytes, JSON-like
lists, maps and structs (embedded strings quoted), dates as ``yyyy-MM-dd`` /
``HH:mm:ss.SSS'Z'`` / ``yyyy-MM-dd'T'HH:mm:ss.SSS'Z'`` chosen by the value (in UTC). It
reads nothing back, so it is apart from the parser and the conversions that use it.
"""

from __future__ import annotations

import base64
import datetime
import decimal
from typing import Any

from connect_grpc.data.errors import DataError
from connect_grpc.data.javatext import java_double_str, java_float_str
from connect_grpc.data.logical import (
    EPOCH_DATE,
    MILLIS_PER_DAY,
    Time,
    Timestamp,
    timestamp_of_millis,
)
from connect_grpc.data.schema import Schema, Type
from connect_grpc.data.struct import Struct


def convert_to_string(schema: Schema | None, value: Any) -> str | None:
    """``value`` as Kafka's Values writes it (top-level strings raw, embedded ones quoted)."""
    if value is None:
        return None
    parts: list[str] = []
    _append(parts, value, False, schema)
    return "".join(parts)


def _append(parts: list[str], value: Any, embedded: bool, schema: Schema | None = None) -> None:
    # The schema, where known, tells a FLOAT32 (Java's Float.toString) from a FLOAT64.
    if value is None:
        parts.append("null")
    elif isinstance(value, bool):
        parts.append("true" if value else "false")
    elif isinstance(value, int):
        parts.append(str(value))
    elif isinstance(value, float):
        single = schema is not None and schema.type is Type.FLOAT32
        parts.append(java_float_str(value) if single else java_double_str(value))
    elif isinstance(value, decimal.Decimal):
        parts.append(str(value))
    elif isinstance(value, str):
        parts.append(f'"{escape(value)}"' if embedded else value)
    elif isinstance(value, bytes | bytearray | memoryview):
        text = base64.b64encode(value).decode("ascii")
        parts.append(f'"{text}"' if embedded else text)
    elif isinstance(value, list | tuple):
        is_array = schema is not None and schema.type is Type.ARRAY
        item_schema = schema.value_schema if schema is not None and is_array else None
        parts.append("[")
        for index, item in enumerate(value):
            if index:
                parts.append(",")
            _append(parts, item, True, item_schema)
        parts.append("]")
    elif isinstance(value, dict):
        is_map = schema is not None and schema.type is Type.MAP
        key_schema = schema.key_schema if schema is not None and is_map else None
        entry_schema = schema.value_schema if schema is not None and is_map else None
        parts.append("{")
        for index, (key, entry) in enumerate(value.items()):
            if index:
                parts.append(",")
            _append(parts, key, True, key_schema)
            parts.append(":")
            _append(parts, entry, True, entry_schema)
        parts.append("}")
    elif isinstance(value, Struct):
        parts.append("{")
        for index, field in enumerate(value.schema.fields):
            if index:
                parts.append(",")
            _append(parts, field.name, True)
            parts.append(":")
            _append(parts, value.get(field), True, field.schema)
        parts.append("}")
    elif isinstance(value, datetime.date | datetime.time):
        parts.append(format_temporal(value))
    else:
        raise DataError(
            f"Failed to serialize unexpected value type {type(value).__qualname__}: {value}"
        )


def escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _millis_of(value: datetime.date | datetime.time) -> int:
    if isinstance(value, datetime.datetime):
        return Timestamp.from_logical(Timestamp.SCHEMA, value)
    if isinstance(value, datetime.date):
        return (value - EPOCH_DATE).days * MILLIS_PER_DAY
    return Time.from_logical(Time.SCHEMA, value)


def format_temporal(value: datetime.date | datetime.time) -> str:
    """Kafka's text of a Date/Time/Timestamp, chosen by the instant as Kafka does: before
    one day after the epoch a time, on a midnight a date, otherwise a timestamp (UTC)."""
    millis = _millis_of(value)
    moment = timestamp_of_millis(millis)
    day = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
    time = (
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}."
        f"{moment.microsecond // 1000:03d}Z"
    )
    if millis < MILLIS_PER_DAY:
        return time
    if millis % MILLIS_PER_DAY == 0:
        return day
    return f"{day}T{time}"
