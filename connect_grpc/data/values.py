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

This module holds the two parts of ``Values`` that call each other: the conversions between
types (:func:`convert_to` and the ``convert_to_*`` that may read a string as structured
data) and the parser of structured text (:func:`parse_string`, which converts an array's or
a map's elements to their common schema). The rest is below them, each in its own module:
the numeric conversions (:mod:`.values_numbers`), the tokenizer and the typing of a single
number or temporal token (:mod:`.values_tokens`), text output (:mod:`.values_format`) and
schema inference (:mod:`.values_inference`). This module is ``Values``' public face: its
``__all__`` names every function of the API, wherever it is defined.
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any, cast

from connect_grpc.data.errors import DataError
from connect_grpc.data.javatext import wrap_signed
from connect_grpc.data.logical import (
    MILLIS_PER_DAY,
    Date,
    Decimal,
    Time,
    Timestamp,
    as_utc,
)
from connect_grpc.data.plugins import NULL_SCHEMA_AND_VALUE, SchemaAndValue
from connect_grpc.data.schema import (
    BOOLEAN_SCHEMA,
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    STRING_SCHEMA,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
    Schema,
    SchemaBuilder,
    Type,
)
from connect_grpc.data.struct import Struct
from connect_grpc.data.values_format import convert_to_string, escape, format_temporal
from connect_grpc.data.values_inference import infer_schema
from connect_grpc.data.values_numbers import (
    _as_long,
    _cannot_convert,
    _convert_to_bytes,
    _convert_to_decimal,
    convert_to_byte,
    convert_to_double,
    convert_to_float,
    convert_to_integer,
    convert_to_long,
    convert_to_short,
    to_float32_range,
)
from connect_grpc.data.values_tokens import (
    _is_blank,
    _Tokenizer,
    _trim,
    parse_number,
    parse_temporal,
)

__all__ = [
    "convert_to",
    "convert_to_boolean",
    "convert_to_byte",
    "convert_to_date",
    "convert_to_decimal",
    "convert_to_double",
    "convert_to_float",
    "convert_to_integer",
    "convert_to_list",
    "convert_to_long",
    "convert_to_map",
    "convert_to_short",
    "convert_to_string",
    "convert_to_struct",
    "convert_to_time",
    "convert_to_timestamp",
    "escape",
    "format_temporal",
    "infer_schema",
    "parse_number",
    "parse_string",
    "parse_temporal",
    "to_float32_range",
]

_ARRAY_SELECTOR_SCHEMA = SchemaBuilder.array(STRING_SCHEMA).build()
_MAP_SELECTOR_SCHEMA = SchemaBuilder.map(STRING_SCHEMA, STRING_SCHEMA).build()
_STRUCT_SELECTOR_SCHEMA = SchemaBuilder.struct().build()
_NULL_REQUIRED = "Unable to convert a null value to a schema that requires a value"

# --- conversions (Kafka's Values.convertTo*) ----------------------------------------------


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


# --- parsing (Kafka's Values.parseString, its Parser and ValueParser) ----------------------

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
