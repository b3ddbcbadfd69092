"""Kafka Connect's ``Values``: parsing text into typed Connect data, inferring schemas and
converting between types with Java's narrowing rules.

Used by SimpleHeaderConverter (header bytes ↔ text), Cast and InsertHeader.

- :func:`parse_string` types a text as Kafka does: ``"42"`` is INT8, ``"1000"`` INT16,
  ``"3.14"`` FLOAT32, ``"true"`` BOOLEAN, ``"[1,2]"`` an ARRAY, ``"{a:1}"`` a MAP,
  ``"2020-01-01"`` a Date, anything else the original text as a STRING.
- ``convert_to_byte/short/integer/long`` narrow as a Java cast does (``(byte) 300`` is 44);
  ``convert_to_float`` turns out-of-range values into infinities. FLOAT32 values are Python
  floats: they are not rounded to single precision (Kafka's ``(float)`` is).
- :func:`convert_to_string` writes Java's text: ``1.0E20``, ``true``, base64 bytes, JSON-like
  lists, maps and structs, dates as ``yyyy-MM-dd`` / ``HH:mm:ss.SSS'Z'`` /
  ``yyyy-MM-dd'T'HH:mm:ss.SSS'Z'`` chosen by the value (in UTC).

Temporal texts roll over as Java's lenient SimpleDateFormat does (``2020-02-30`` is
2020-03-01), except a time of day past midnight (``24:00:00.000Z``), which stays a string.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import math
import re
from typing import Any, cast

from connect_grpc.data.errors import DataError, SchemaBuilderError
from connect_grpc.data.javatext import java_double_str, java_float_str, java_string, wrap_signed
from connect_grpc.data.logical import (
    EPOCH_DATE,
    MILLIS_PER_DAY,
    Date,
    Decimal,
    Time,
    Timestamp,
    as_utc,
    timestamp_of_millis,
)
from connect_grpc.data.plugins import NULL_SCHEMA_AND_VALUE, SchemaAndValue
from connect_grpc.data.schema import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    STRING_SCHEMA,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
    Schema,
    SchemaBuilder,
    Type,
    python_class_name,
)
from connect_grpc.data.struct import Struct

_ARRAY_SELECTOR_SCHEMA = SchemaBuilder.array(STRING_SCHEMA).build()
_MAP_SELECTOR_SCHEMA = SchemaBuilder.map(STRING_SCHEMA, STRING_SCHEMA).build()
_STRUCT_SELECTOR_SCHEMA = SchemaBuilder.struct().build()
_NULL_REQUIRED = "Unable to convert a null value to a schema that requires a value"
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


def convert_to_boolean(schema: Schema | None, value: Any) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        parsed = parse_string(value)
        if isinstance(parsed.value, bool):
            return parsed.value
    return _as_long(value, schema) != 0


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


def convert_to_list(schema: Schema | None, value: Any) -> list[Any]:
    return _convert_to_array(_ARRAY_SELECTOR_SCHEMA, value)


def convert_to_map(schema: Schema | None, value: Any) -> dict[Any, Any]:
    return _convert_to_map(_MAP_SELECTOR_SCHEMA, value)


def convert_to_struct(schema: Schema | None, value: Any) -> Struct:
    return _convert_to_struct(_STRUCT_SELECTOR_SCHEMA, value)


def convert_to_time(schema: Schema | None, value: Any) -> datetime.time:
    if value is None:
        raise DataError(_NULL_REQUIRED)
    return cast(datetime.time, _convert_to_time(Time.SCHEMA, schema, value))


def convert_to_date(schema: Schema | None, value: Any) -> datetime.date:
    if value is None:
        raise DataError(_NULL_REQUIRED)
    return cast(datetime.date, _convert_to_date(Date.SCHEMA, schema, value))


def convert_to_timestamp(schema: Schema | None, value: Any) -> datetime.datetime:
    if value is None:
        raise DataError(_NULL_REQUIRED)
    return cast(datetime.datetime, _convert_to_timestamp(Timestamp.SCHEMA, schema, value))


def convert_to_decimal(schema: Schema | None, value: Any, scale: int) -> decimal.Decimal:
    if value is None:
        raise DataError(_NULL_REQUIRED)
    return _convert_to_decimal(Decimal.schema(scale), value)


def convert_to(to_schema: Schema, from_schema: Schema | None, value: Any) -> Any:
    """``value`` converted to ``to_schema``'s type (Kafka's ``Values.convertTo``)."""
    if value is None:
        if to_schema.optional:
            return None
        raise DataError(_NULL_REQUIRED)
    kind = to_schema.type
    name = to_schema.name
    if kind is Type.BYTES:
        if name == DECIMAL_LOGICAL_NAME:
            return _convert_to_decimal(to_schema, value)
        return _convert_to_bytes(to_schema, value)
    if kind is Type.STRING:
        return convert_to_string(from_schema, value)
    if kind is Type.BOOLEAN:
        return convert_to_boolean(from_schema, value)
    if kind is Type.INT8:
        return convert_to_byte(from_schema, value)
    if kind is Type.INT16:
        return convert_to_short(from_schema, value)
    if kind is Type.INT32:
        if name == DATE_LOGICAL_NAME:
            return _convert_to_date(to_schema, from_schema, value)
        if name == TIME_LOGICAL_NAME:
            return _convert_to_time(to_schema, from_schema, value)
        return convert_to_integer(from_schema, value)
    if kind is Type.INT64:
        if name == TIMESTAMP_LOGICAL_NAME:
            return _convert_to_timestamp(to_schema, from_schema, value)
        return convert_to_long(from_schema, value)
    if kind is Type.FLOAT32:
        return convert_to_float(from_schema, value)
    if kind is Type.FLOAT64:
        return convert_to_double(from_schema, value)
    if kind is Type.ARRAY:
        return _convert_to_array(to_schema, value)
    if kind is Type.MAP:
        return _convert_to_map(to_schema, value)
    return _convert_to_struct(to_schema, value)


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


def _temporal_of_string(value: Any) -> Any:
    return parse_string(value).value if isinstance(value, str) else value


def _convert_to_date(to_schema: Schema, from_schema: Schema | None, value: Any) -> Any:
    value = _temporal_of_string(value)
    if isinstance(value, datetime.date | datetime.time):
        if from_schema is None:
            return value
        if from_schema.name == DATE_LOGICAL_NAME:
            return value
        if from_schema.name == TIMESTAMP_LOGICAL_NAME and isinstance(value, datetime.datetime):
            millis = Timestamp.from_logical(from_schema, value)
            days = abs(millis) // MILLIS_PER_DAY  # Java's division truncates towards zero
            return Date.to_logical(to_schema, -days if millis < 0 else days)
    return Date.to_logical(to_schema, wrap_signed(_as_long(value, from_schema), 32))


def _convert_to_time(to_schema: Schema, from_schema: Schema | None, value: Any) -> Any:
    value = _temporal_of_string(value)
    if isinstance(value, datetime.date | datetime.time):
        if from_schema is None:
            return value
        if from_schema.name == TIME_LOGICAL_NAME:
            return value
        if from_schema.name == TIMESTAMP_LOGICAL_NAME and isinstance(value, datetime.datetime):
            return as_utc(value).time()
    return Time.to_logical(to_schema, wrap_signed(_as_long(value, from_schema), 32))


def _convert_to_timestamp(to_schema: Schema, from_schema: Schema | None, value: Any) -> Any:
    value = _temporal_of_string(value)
    if isinstance(value, datetime.date | datetime.time):
        if from_schema is None:
            return value
        if from_schema.name == DATE_LOGICAL_NAME and isinstance(value, datetime.date):
            days = Date.from_logical(from_schema, value)
            return Timestamp.to_logical(to_schema, days * MILLIS_PER_DAY)
        if from_schema.name == TIME_LOGICAL_NAME and isinstance(value, datetime.time):
            return Timestamp.to_logical(to_schema, Time.from_logical(from_schema, value))
        if from_schema.name == TIMESTAMP_LOGICAL_NAME:
            return value
    return Timestamp.to_logical(to_schema, _as_long(value, from_schema))


def _convert_to_array(to_schema: Schema, value: Any) -> list[Any]:
    if value is None:
        raise DataError(_NULL_REQUIRED)
    if isinstance(value, str):
        value = parse_string(value).value
    if isinstance(value, list):
        return value
    raise _cannot_convert(value, to_schema)


def _convert_to_map(to_schema: Schema, value: Any) -> dict[Any, Any]:
    if value is None:
        raise DataError(_NULL_REQUIRED)
    if isinstance(value, str):
        value = parse_string(value).value
    if isinstance(value, dict):
        return value
    raise _cannot_convert(value, to_schema)


def _convert_to_struct(to_schema: Schema, value: Any) -> Struct:
    if value is None:
        raise DataError(_NULL_REQUIRED)
    if isinstance(value, Struct):
        return value
    raise _cannot_convert(value, to_schema)


# --- to text (Kafka's Values.convertToString / append) ------------------------------------


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


# --- schema inference (Kafka's Values.inferSchema) ----------------------------------------


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


# --- parsing (Kafka's Values.parseString, its Parser and ValueParser) ----------------------

_DELIMITERS = frozenset(':,{}[]"')
_JAVA_WHITESPACE = "".join(chr(code) for code in range(33))


def _trim(text: str) -> str:
    return text.strip(_JAVA_WHITESPACE)


def _is_blank(text: str | None) -> bool:
    return text is None or not _trim(text)


class _Tokenizer:
    """Splits text into delimiter tokens and the text between them (backslash escapes a
    delimiter), with look-ahead and rewind."""

    def __init__(self, original: str) -> None:
        self.original = original
        self.position = 0
        self._next: str | None = None
        self.previous: str | None = None

    def mark(self) -> int:
        return self.position - (len(self._next) if self._next is not None else 0)

    def rewind_to(self, position: int) -> None:
        self.position = position
        self._next = None
        self.previous = None

    def has_next(self) -> bool:
        return self._next is not None or self.position < len(self.original)

    def next(self) -> str:
        if self._next is not None:
            self.previous, self._next = self._next, None
        else:
            self.previous = self._consume()
        return self.previous

    def next_n(self, count: int) -> str | None:
        start = self.mark()
        for _ in range(count):
            if not self.has_next():
                self.rewind_to(start)
                return None
            self.next()
        return self.original[start:self.position]

    def _consume(self) -> str:
        text = self.original
        escaped = False
        start = self.position
        while self.position < len(text):
            char = text[self.position]
            if char == "\\":
                escaped = not escaped
            elif char in _DELIMITERS:
                if not escaped:
                    if start < self.position:
                        return text[start:self.position]
                    self.position += 1
                    return text[start:start + 1]
                escaped = False
            else:
                escaped = False
            self.position += 1
        return text[start:self.position]

    def can_consume(self, expected: str) -> bool:
        if self._next is None:
            if not self.has_next():
                return False
            self._next = self._consume()
        while _is_blank(self._next) and self.position < len(self.original):
            self._next = self._consume()
        if self._next is not None and _trim(self._next) == expected:
            self._next = None
            return True
        return False


_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIMESTAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z")
_TRUE = SchemaAndValue(BOOLEAN_SCHEMA, True)
_FALSE = SchemaAndValue(BOOLEAN_SCHEMA, False)


class _ValueParser:
    def __init__(self, text: str) -> None:
        self.tokens = _Tokenizer(text)

    def _single_token_literal(self, embedded: bool, literal: str) -> bool:
        start = self.tokens.mark()
        if self.tokens.can_consume(literal) and (embedded or not self.tokens.has_next()):
            return True
        self.tokens.rewind_to(start)
        return False

    def parse(self, embedded: bool) -> SchemaAndValue | None:
        tokens = self.tokens
        if not tokens.has_next():
            return None
        if embedded and tokens.can_consume('"'):
            return self._parse_quoted_string()
        if self._single_token_literal(embedded, "null"):
            return None
        if self._single_token_literal(embedded, "true"):
            return _TRUE
        if self._single_token_literal(embedded, "false"):
            return _FALSE
        start = tokens.mark()
        try:
            if tokens.can_consume("["):
                return self._parse_array()
            if tokens.can_consume("{"):
                return self._parse_map()
        except DataError:
            tokens.rewind_to(start)
        token = tokens.next()
        if _is_blank(token):
            return SchemaAndValue(STRING_SCHEMA, token)
        return self._parse_next_token(embedded, _trim(token))

    def _parse_next_token(self, embedded: bool, token: str) -> SchemaAndValue:
        first = token[0]
        first_is_digit = "0" <= first <= "9"
        if first_is_digit:
            temporal = self._parse_multiple_tokens_as_temporal(token)
            if temporal is not None:
                return temporal
        if first_is_digit or first in "+-":
            number = parse_number(token)
            if number is not None:
                return number
        if embedded:
            raise DataError("Failed to parse embedded value")
        return SchemaAndValue(STRING_SCHEMA, self.tokens.original)

    def _parse_quoted_string(self) -> SchemaAndValue:
        tokens = self.tokens
        parts: list[str] = []
        while tokens.has_next():
            if tokens.can_consume('"'):
                break
            parts.append(tokens.next())
        content = "".join(parts)
        temporal = parse_temporal(content)
        return temporal if temporal is not None else SchemaAndValue(STRING_SCHEMA, content)

    def _parse_array(self) -> SchemaAndValue:
        tokens = self.tokens
        result: list[Any] = []
        element_schema = _SchemaMerger()
        while tokens.has_next():
            if tokens.can_consume("]"):
                if element_schema.common is not None:
                    schema = Schema(Type.ARRAY, value_schema=element_schema.common)
                    result = [convert_to(element_schema.common, None, item) for item in result]
                else:
                    schema = Schema(Type.ARRAY)
                return SchemaAndValue(schema, result)
            if tokens.can_consume(","):
                raise DataError(f"Unable to parse an empty array element: {tokens.original}")
            element = self.parse(True)
            element_schema.merge(element)
            result.append(element.value if element is not None else None)
            position = tokens.mark()
            if tokens.can_consume("]"):
                tokens.rewind_to(position)
            elif not tokens.can_consume(","):
                raise DataError("Array elements missing ',' delimiter")
        if tokens.previous == ",":
            raise DataError(f"Array is missing element after ',': {tokens.original}")
        raise DataError(f"Array is missing terminating ']': {tokens.original}")

    def _parse_map(self) -> SchemaAndValue:
        tokens = self.tokens
        result: dict[Any, Any] = {}
        key_schema, value_schema = _SchemaMerger(), _SchemaMerger()
        while tokens.has_next():
            if tokens.can_consume("}"):
                return _aligned_map(result, key_schema.common, value_schema.common)
            if tokens.can_consume(","):
                raise DataError(
                    f"Unable to parse a map entry with no key or value: {tokens.original}"
                )
            key = self.parse(True)
            if key is None or key.value is None:
                raise DataError(f"Map entry may not have a null key: {tokens.original}")
            if not tokens.can_consume(":"):
                raise DataError(
                    f"Map entry is missing ':' at {tokens.position} in {tokens.original}"
                )
            entry = self.parse(True)
            result[key.value] = entry.value if entry is not None else None
            tokens.can_consume(",")
            key_schema.merge(key)
            value_schema.merge(entry)
        if tokens.previous == ",":
            raise DataError(f"Map is missing element after ',': {tokens.original}")
        raise DataError(f"Map is missing terminating '}}': {tokens.original}")

    def _parse_multiple_tokens_as_temporal(self, token: str) -> SchemaAndValue | None:
        # A time or timestamp is split into 5 tokens by its unescaped colons.
        position = self.tokens.mark()
        remainder = self.tokens.next_n(4)
        if remainder is not None:
            temporal = parse_temporal(token + remainder)
            if temporal is not None:
                return temporal
        self.tokens.rewind_to(position)
        return parse_temporal(token)


def _aligned_map(
    result: dict[Any, Any], key_schema: Schema | None, value_schema: Schema | None
) -> SchemaAndValue:
    if key_schema is not None and value_schema is not None:
        aligned = {
            convert_to(key_schema, None, key): convert_to(value_schema, None, entry)
            for key, entry in result.items()
        }
        return SchemaAndValue(
            Schema(Type.MAP, key_schema=key_schema, value_schema=value_schema), aligned
        )
    if key_schema is not None:
        aligned = {convert_to(key_schema, None, key): entry for key, entry in result.items()}
        return SchemaAndValue(Schema(Type.MAP, key_schema=key_schema), aligned)
    return SchemaAndValue(Schema(Type.MAP), result)


def parse_number(token: str) -> SchemaAndValue | None:
    """A numeric token typed as Kafka does: the smallest integer type that holds it, else
    FLOAT32, FLOAT64 or a Decimal; None if it is not a number."""
    number = _parse_big_decimal(token)
    if number is None:
        return None
    exact = _exact_integer(number)
    if exact is not None:
        return exact
    scale = -int(number.as_tuple().exponent)
    as_double = float(number)
    if scale != 0 and abs(as_double) <= _FLOAT32_MAX:
        return SchemaAndValue(FLOAT32_SCHEMA, as_double)
    if scale != 0 and math.isfinite(as_double):
        return SchemaAndValue(FLOAT64_SCHEMA, as_double)
    return SchemaAndValue(Decimal.schema(scale), number)


def _exact_integer(number: decimal.Decimal) -> SchemaAndValue | None:
    if number != number.to_integral_value():
        return None
    integral = int(number)
    if not _INT64_MIN <= integral <= _INT64_MAX:
        return None
    if -(2**7) <= integral < 2**7:
        return SchemaAndValue(INT8_SCHEMA, integral)
    if -(2**15) <= integral < 2**15:
        return SchemaAndValue(INT16_SCHEMA, integral)
    if -(2**31) <= integral < 2**31:
        return SchemaAndValue(INT32_SCHEMA, integral)
    return SchemaAndValue(INT64_SCHEMA, integral)


def parse_temporal(token: str | None) -> SchemaAndValue | None:
    """A Date (``yyyy-MM-dd``), Time (``HH:mm:ss.SSS'Z'``) or Timestamp
    (``yyyy-MM-dd'T'HH:mm:ss.SSS'Z'``) text as its logical value, else None. Out-of-range
    fields roll over as Java's lenient SimpleDateFormat does (``2020-02-30`` is 2020-03-01),
    except a time of day that rolls into the next day, which has no ``datetime.time``."""
    if token is None:
        return None
    token = token.replace("\\:", ":")
    try:
        if len(token) == 13 and (match := _TIME.fullmatch(token)):
            hour, minute, second, millis = map(int, match.groups())
            moment = _lenient_datetime(1970, 1, 1, hour, minute, second, millis)
            if moment.date() != EPOCH_DATE:
                return None
            return SchemaAndValue(Time.SCHEMA, moment.time())
        if len(token) == 24 and (match := _TIMESTAMP.fullmatch(token)):
            moment = _lenient_datetime(*map(int, match.groups()))
            return SchemaAndValue(Timestamp.SCHEMA, moment.replace(tzinfo=datetime.UTC))
        if len(token) == 10 and (match := _DATE.fullmatch(token)):
            year, month, day = map(int, match.groups())
            return SchemaAndValue(Date.SCHEMA, _lenient_datetime(year, month, day).date())
    except (ValueError, OverflowError):
        return None
    return None


def _lenient_datetime(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0,
    millis: int = 0,
) -> datetime.datetime:
    """A naive datetime where every field may overflow into the next, as in Java's lenient
    calendar (month 13 is January of the next year, day 0 the last of the month before)."""
    years, month_index = divmod(year * 12 + month - 1, 12)
    start = datetime.datetime(years, month_index + 1, 1)
    return start + datetime.timedelta(
        days=day - 1, hours=hour, minutes=minute, seconds=second, milliseconds=millis
    )


class _SchemaMerger:
    def __init__(self) -> None:
        self.common: Schema | None = None
        self._compatible = True

    def merge(self, latest: SchemaAndValue | None) -> None:
        if latest is None or latest.schema is None or not self._compatible:
            return
        if self.common is None:
            self.common = latest.schema
            return
        self.common = _merge_schemas(self.common, latest.schema)
        self._compatible = self.common is not None


_NUMERIC_ORDER = (Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64)


def _merge_schemas(previous: Schema, new: Schema) -> Schema | None:
    if previous.type is not new.type:
        if previous.type in _NUMERIC_ORDER and new.type in _NUMERIC_ORDER:
            wider = _NUMERIC_ORDER.index(new.type) > _NUMERIC_ORDER.index(previous.type)
            return new if wider else previous
        return None
    if previous.optional == new.optional:
        return previous if previous.optional else new
    return previous if previous == new else None


#: The words the parser reads as something other than text.
_LITERALS = frozenset({"null", "true", "false"})


def parse_string(text: str | None) -> SchemaAndValue:
    """Text typed as Kafka's ``Values.parseString`` types it; ``"null"`` and None give
    ``SchemaAndValue(None, None)``."""
    if text is None:
        return NULL_SCHEMA_AND_VALUE
    if not text:
        return SchemaAndValue(STRING_SCHEMA, text)
    if text.isalpha() and text not in _LITERALS:
        # a word of letters is none of the literals, numbers, temporals, arrays or maps:
        # the parser would give it back as it is (a header such as "web" costs it ~30 us)
        return SchemaAndValue(STRING_SCHEMA, text)
    parsed = _ValueParser(text).parse(False)
    return parsed if parsed is not None else NULL_SCHEMA_AND_VALUE
