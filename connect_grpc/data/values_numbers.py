"""Kafka Connect's ``Values``, its numbers: Java's casts and the numeric conversions.

``convert_to_byte/short/integer/long`` narrow as a Java cast does (``(byte) 300`` is 44),
through Java's ``(long)`` of a double (saturating, NaN as 0) or of a ``BigDecimal`` read
from text; ``convert_to_float`` turns out-of-range values into infinities (FLOAT32 values
stay Python floats: they are not rounded to single precision); decimals convert through a
double, as Kafka's do, and to and from their bytes. None of these reads text as structured
data, so they sit below the parser (:mod:`connect_grpc.data.values`), which uses them too.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
from typing import Any

from connect_grpc.data.errors import DataError
from connect_grpc.data.javatext import java_double_str, java_string, wrap_signed
from connect_grpc.data.logical import Date, Decimal, Time, Timestamp
from connect_grpc.data.schema import (
    DATE_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
    Schema,
    python_class_name,
)

_FLOAT32_MAX = 3.4028234663852886e38
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# --- Java's numeric casts -----------------------------------------------------------------


def _float_to_long(value: float) -> int:
    # Java's (long) of a double: NaN → 0, saturating at the long range, truncating.
    if math.isnan(value):
        return 0
    if value >= 9.223372036854775807e18:
        return _INT64_MAX
    if value <= -9.223372036854775808e18:
        return _INT64_MIN
    return int(value)


def to_float32_range(value: float) -> float:
    """Java's ``(float)`` of a double, except that precision is kept: beyond the float
    range the value becomes an infinity."""
    if math.isfinite(value) and abs(value) > _FLOAT32_MAX:
        return math.copysign(math.inf, value)
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool)


# --- conversions (Kafka's Values.convertTo*) ----------------------------------------------


def _cannot_convert(value: Any, target: Schema | str) -> DataError:
    where = target if isinstance(target, str) else repr(target)
    return DataError(
        f"Unable to convert {_java_text(value)} ({python_class_name(value)}) to {where}"
    )


def _java_text(value: Any) -> str:
    return java_string(value)


def _as_long(value: Any, from_schema: Schema | None) -> int:
    if _is_number(value):
        if isinstance(value, float):
            return _float_to_long(value)
        if isinstance(value, decimal.Decimal):
            if not value.is_finite():
                raise _cannot_convert(value, from_schema or "a number")
            return wrap_signed(int(value), 64)
        return wrap_signed(value, 64)
    if isinstance(value, str):
        parsed = _parse_big_decimal(value)
        if parsed is not None:
            return wrap_signed(int(parsed), 64)
    if from_schema is not None:
        millis = _logical_as_long(from_schema, value)
        if millis is not None:
            return millis
        raise _cannot_convert(value, from_schema)
    raise _cannot_convert(value, "a number")


def _logical_as_long(schema: Schema, value: Any) -> int | None:
    name = schema.name
    if name == DATE_LOGICAL_NAME and isinstance(value, datetime.date):
        return Date.from_logical(schema, value)
    if name == TIME_LOGICAL_NAME and isinstance(value, datetime.time):
        return Time.from_logical(schema, value)
    if name == TIMESTAMP_LOGICAL_NAME and isinstance(value, datetime.datetime):
        return Timestamp.from_logical(schema, value)
    return None


def _as_double(value: Any, schema: Schema | None) -> float:
    if _is_number(value):
        return float(value)
    if isinstance(value, str):
        parsed = _parse_big_decimal(value)
        if parsed is not None:
            return float(parsed)
    return float(_as_long(value, schema))


_BIG_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _parse_big_decimal(text: str) -> decimal.Decimal | None:
    """The decimal Java's ``new BigDecimal(text)`` reads, or None where it would throw."""
    if not _BIG_DECIMAL.fullmatch(text):
        return None
    return decimal.Decimal(text)


def convert_to_byte(schema: Schema | None, value: Any) -> int | None:
    return None if value is None else wrap_signed(_as_long(value, schema), 8)


def convert_to_short(schema: Schema | None, value: Any) -> int | None:
    return None if value is None else wrap_signed(_as_long(value, schema), 16)


def convert_to_integer(schema: Schema | None, value: Any) -> int | None:
    return None if value is None else wrap_signed(_as_long(value, schema), 32)


def convert_to_long(schema: Schema | None, value: Any) -> int | None:
    return None if value is None else _as_long(value, schema)


def convert_to_float(schema: Schema | None, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, float):
        return value
    return to_float32_range(_as_double(value, schema))


def convert_to_double(schema: Schema | None, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, float):
        return value
    return _as_double(value, schema)


def _convert_to_decimal(to_schema: Schema, value: Any) -> decimal.Decimal:
    if isinstance(value, bytes | bytearray | memoryview):
        return Decimal.to_logical(to_schema, bytes(value))
    if isinstance(value, decimal.Decimal):
        return value
    if _is_number(value):
        # Kafka goes through a double (BigDecimal.valueOf(number.doubleValue())).
        return decimal.Decimal(java_double_str(float(value)))
    if isinstance(value, str):
        parsed = _parse_big_decimal(value)
        if parsed is None:
            raise DataError(f"Unable to convert {value} to a decimal: not a number")
        return parsed
    raise _cannot_convert(value, to_schema)


def _convert_to_bytes(to_schema: Schema, value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, decimal.Decimal):
        return Decimal.from_logical(to_schema, value)
    raise _cannot_convert(value, to_schema)
