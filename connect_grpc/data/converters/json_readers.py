"""JSON read back into Connect values (Kafka's ``convertToConnect``), per schema.

:class:`_ReaderCompiler` builds, once per schema, the function that turns the parsed JSON
of a payload into a value of that schema, with Jackson's conversions (an integer node read
as a float, a wrong kind read as 0 or null), defaults for nulls and Kafka's messages for
what cannot be read; a struct is read by a function generated for its schema. Schemaless
JSON is read by :func:`_read_plain_json` / :func:`_read_schemaless` (INT64 integers,
FLOAT64 fractions, dicts for objects). The reverse direction is :mod:`.json_writers`.
"""

from __future__ import annotations

import binascii
import decimal
import math
from collections.abc import Callable
from typing import Any, Final

import orjson

from connect_grpc.data.converters.json_codegen import (
    _INT_BITS,
    _LOGICAL_NAMES,
    Reader,
    _generated,
    _remember,
)
from connect_grpc.data.converters.json_parsing import (
    _MISSING,
    _ExactNumbersNeeded,
    _is_number,
    _loads,
    _node_type,
)
from connect_grpc.data.errors import DataError
from connect_grpc.data.javatext import wrap_signed
from connect_grpc.data.logical import Date, Decimal, Time, timestamp_of_millis
from connect_grpc.data.schema import (
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
    Schema,
    Type,
    validate_value,
)
from connect_grpc.data.struct import Struct


class _ReaderCompiler:
    """The reading half of JsonConverter's compiler (:class:`.json_schema._Compiler`):
    builds, per schema, the function that reads values of that schema, memoised by
    schema."""

    replace_null: bool
    _memo_size: int
    _readers: dict[Schema, Reader]

    def reader(self, schema: Schema) -> Reader:
        reader = self._readers.get(schema)
        if reader is None:
            reader = self._build_reader(schema)
            _remember(self._readers, schema, reader, self._memo_size)
        return reader

    def present_reader(self, schema: Schema) -> Reader:
        """``reader(schema)`` for a JSON value that is not null (or missing)."""
        return self._non_null_reader(schema)

    def _build_reader(self, schema: Schema) -> Reader:
        read = self._non_null_reader(schema)
        default = schema.default
        if default is not None and self.replace_null:

            def read_or_default(value: Any) -> Any:
                return default if value is None or value is _MISSING else read(value)

            return read_or_default
        if schema.optional:

            def read_optional(value: Any) -> Any:
                return None if value is None or value is _MISSING else read(value)

            return read_optional
        message = f"Invalid null value for required {schema.type} field"

        def read_required(value: Any) -> Any:
            if value is None or value is _MISSING:
                raise DataError(message)
            return read(value)

        return read_required

    def _non_null_reader(self, schema: Schema) -> Reader:
        logical = _logical_reader(schema)
        if logical is not None:
            return logical
        kind = schema.type
        if kind in _INT_BITS:
            return _int_reader(_INT_BITS[kind])
        if kind is Type.FLOAT32 or kind is Type.FLOAT64:
            return _read_float
        if kind is Type.BOOLEAN:
            return _read_boolean
        if kind is Type.STRING:
            return _read_string
        if kind is Type.BYTES:
            return _read_bytes
        if kind is Type.ARRAY:
            return self._array_reader(schema)
        if kind is Type.MAP:
            return self._map_reader(schema)
        return self._struct_reader(schema)

    def _sub_reader(self, schema: Schema | None) -> Reader:
        return _read_schemaless if schema is None else self.reader(schema)

    def _array_reader(self, schema: Schema) -> Reader:
        read_item = self._sub_reader(schema.value_schema)

        def read_array(value: Any) -> Any:
            if isinstance(value, list):
                return [read_item(item) for item in value]
            if isinstance(value, dict):  # Jackson iterates an object's values
                return [read_item(item) for item in value.values()]
            return []

        return read_array

    def _map_reader(self, schema: Schema) -> Reader:
        key_schema = schema.key_schema
        read_value = self._sub_reader(schema.value_schema)
        if key_schema is None or key_schema.type is Type.STRING:

            def read_object(value: Any) -> Any:
                if not isinstance(value, dict):
                    raise DataError(
                        "Maps with string fields should be encoded as JSON objects, but found "
                        f"{_node_type(value)}"
                    )
                return {key: read_value(item) for key, item in value.items()}

            return read_object
        read_key = self._sub_reader(key_schema)

        def read_pairs(value: Any) -> Any:
            if not isinstance(value, list):
                raise DataError(
                    "Maps with non-string fields should be encoded as JSON array of tuples, but "
                    f"found {_node_type(value)}"
                )
            result: dict[Any, Any] = {}
            for entry in value:
                if not isinstance(entry, list):
                    raise DataError(
                        f"Found invalid map entry instead of array tuple: {_node_type(entry)}"
                    )
                if len(entry) != 2:
                    raise DataError(
                        f"Found invalid map entry, expected length 2 but found :{len(entry)}"
                    )
                try:
                    result[read_key(entry[0])] = read_value(entry[1])
                except TypeError as exc:  # a list or dict key has no Python hash
                    raise DataError(f"Map key cannot be used as a Python dict key: {exc}") from exc
            return result

        return read_pairs

    def _struct_reader(self, schema: Schema) -> Reader:
        """A function generated for this struct schema that reads every field in one list
        expression: a JSON value of the field's own type (a string for a STRING, an in-range
        integer for an INT*, ...) is taken as it is, anything else goes through the field's
        reader (defaults, nulls, Jackson's conversions)."""
        namespace: dict[str, Any] = {
            "Struct": Struct, "new": Struct.__new__, "schema": schema, "node_type": _node_type,
            "DataError": DataError, "validate_value": validate_value,
            "required": [field for field in schema.fields if not field.schema.optional],
        }
        items = []
        for field in schema.fields:
            reader = f"r{field.index}"
            namespace[reader] = self.reader(field.schema)
            items.append(_read_expression(field.schema, f"get({field.name!r})", reader))
        source = (
            "def read_struct(value):\n"
            "    if type(value) is not dict and not isinstance(value, dict):\n"
            "        raise DataError('Structs should be encoded as JSON objects, but found '\n"
            "                        + node_type(value))\n"
            "    get = value.get\n"
            f"    values = [{', '.join(items)}]\n"
            "    if required and None in values:\n"
            "        for field in required:\n"
            "            if values[field.index] is None:\n"
            "                validate_value(field.schema, None, field.name)\n"
            "    struct = new(Struct)\n"  # Struct.trusted, without its call
            "    struct._schema = schema\n"
            "    struct._values = values\n"
            "    return struct\n"
        )
        return _generated(source, namespace, "read_struct")


def _read_expression(schema: Schema, json_value: str, reader: str) -> str:
    """An expression reading one struct field: the JSON value as it is when it already is
    the field's Python value, else the field's reader."""
    if schema.name not in _LOGICAL_NAMES:
        kind = schema.type
        if kind is Type.STRING:
            return f"(x if type(x := {json_value}) is str else {reader}(x))"
        if kind is Type.BOOLEAN:
            return f"(x if (x := {json_value}) is True or x is False else {reader}(x))"
        if kind is Type.FLOAT32 or kind is Type.FLOAT64:
            return f"(x if type(x := {json_value}) is float else {reader}(x))"
        if kind in _INT_BITS:
            bits = _INT_BITS[kind]
            low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            in_range = f"type(x := {json_value}) is int and {low} <= x <= {high}"
            return f"(x if {in_range} else {reader}(x))"
    return f"{reader}({json_value})"


def _int_reader(bits: int) -> Reader:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    # Jackson's intValue() keeps the low 32 bits, then the cast keeps the low ``bits``.
    via = 64 if bits == 64 else 32

    def read_int(value: Any) -> Any:
        if type(value) is int and low <= value <= high:
            return value
        return wrap_signed(wrap_signed(_integral(value), via), bits)

    return read_int


def _integral(value: Any) -> int:
    """Jackson's longValue() of a node: numbers truncated, anything else 0."""
    if isinstance(value, bool) or not _is_number(value):
        return 0
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else 0
    return int(value)


def _read_float(value: Any) -> Any:
    if type(value) is float:
        return value
    if _is_number(value):
        return float(value)
    return 0.0


def _read_boolean(value: Any) -> Any:
    return value is True


def _read_string(value: Any) -> Any:
    return value if isinstance(value, str) else None


def _read_bytes(value: Any) -> Any:
    if not isinstance(value, str):
        return None
    try:
        return binascii.a2b_base64(value, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise DataError(f"Invalid bytes field: {exc}") from exc


def _logical_reader(schema: Schema) -> Reader | None:
    name = schema.name
    if name == DECIMAL_LOGICAL_NAME:
        return _decimal_reader(schema)
    if name == DATE_LOGICAL_NAME:
        return _int32_logical_reader(schema, "Date", Date.to_logical)
    if name == TIME_LOGICAL_NAME:
        return _int32_logical_reader(schema, "Time", Time.to_logical)
    if name == TIMESTAMP_LOGICAL_NAME:

        def read_timestamp(value: Any) -> Any:
            if isinstance(value, bool) or not isinstance(value, int):
                raise DataError(
                    "Invalid type for Timestamp, underlying representation should be integral "
                    f"but was {_node_type(value)}"
                )
            if not -(2**63) <= value < 2**63:
                value = wrap_signed(value, 64)  # Jackson's longValue() keeps the low bits
            return timestamp_of_millis(value)

        return read_timestamp
    return None


def _decimal_reader(schema: Schema) -> Reader:
    def read_decimal(value: Any) -> Any:
        if isinstance(value, decimal.Decimal):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return decimal.Decimal(value)
        if isinstance(value, float):
            raise _ExactNumbersNeeded
        if isinstance(value, str):
            try:
                raw = binascii.a2b_base64(value, strict_mode=True)
                return Decimal.to_logical(schema, raw)
            except (binascii.Error, ValueError, DataError) as exc:
                raise DataError(f"Invalid bytes for Decimal field: {exc}") from exc
        raise DataError(
            "Invalid type for Decimal, underlying representation should be numeric or bytes "
            f"but was {_node_type(value)}"
        )

    return read_decimal


def _int32_logical_reader(
    schema: Schema, label: str, to_logical: Callable[[Schema, int], Any]
) -> Reader:
    def read_logical(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) \
                or not -(2**31) <= value < 2**31:
            raise DataError(
                f"Invalid type for {label}, underlying representation should be integer but "
                f"was {_node_type(value)}"
            )
        return to_logical(schema, value)

    return read_logical


#: Every byte to b"0", digits to b"1": a run of 19 digits becomes a run of 19 b"1"s (a
#: translate and a substring search beat a regular expression by 3x here).
_DIGIT_MARKS: Final = bytes(0x31 if 0x30 <= code <= 0x39 else 0x30 for code in range(256))
_NINETEEN_DIGITS: Final = b"1" * 19


def _read_plain_json(data: bytes) -> Any:
    """Schemaless JSON as Connect data. What orjson parses is Connect data already, except
    integers of 2^63 and more (to be wrapped to a long, as Jackson's longValue() does), which
    take 19 digits or more: with such a run of digits (or what orjson cannot read, such as
    numbers beyond a double), the exact parser's result is walked instead."""
    if _NINETEEN_DIGITS in data.translate(_DIGIT_MARKS):
        # orjson reads integers beyond 64 bits as floats: the exact parser keeps them whole
        return _read_schemaless(_loads(data, exact=True))
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return _read_schemaless(_loads(data, exact=True))


def _read_schemaless(value: Any) -> Any:
    """Schemaless JSON as Connect data: integers INT64, fractions FLOAT64, objects maps."""
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else wrap_signed(value, 64)
    if isinstance(value, float):
        return value
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, list):
        return [_read_schemaless(item) for item in value]
    if isinstance(value, dict):
        return {key: _read_schemaless(item) for key, item in value.items()}
    return None  # the missing node
