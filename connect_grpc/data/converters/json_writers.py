"""Connect values as JSON-ready Python objects (Kafka's ``convertToJson``), per schema.

:class:`_WriterCompiler` builds, once per schema, the function that turns a value of that
schema into what orjson writes as Kafka's JSON: integers, strings and booleans as they are,
floats with Jackson's NaN and infinities, bytes and BASE64 decimals as base64, logical
types as integers, structs through a function generated for their schema. Schemaless
values are written by their Python class (:func:`_write_schemaless`), or straight by orjson
when its JSON is Kafka's (:func:`_dump_schemaless`). The reverse direction is
:mod:`.json_readers`; the schema's own JSON is :mod:`.json_schema`.
"""

from __future__ import annotations

import binascii
import datetime
import decimal
import math
from collections.abc import Callable
from typing import Any, Final

import orjson

from connect_grpc.data.converters.json_codegen import (
    _INT_BITS,
    _LOGICAL_NAMES,
    _PLAIN_JSON_TYPES,
    Writer,
    _generated,
    _remember,
)
from connect_grpc.data.errors import DataError
from connect_grpc.data.javatext import java_float_str, to_single
from connect_grpc.data.logical import Date, Decimal, Time, Timestamp
from connect_grpc.data.schema import (
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
    Schema,
    Type,
    python_class_name,
)
from connect_grpc.data.struct import Struct

_NULL_FOR_REQUIRED: Final = (
    "Conversion error: null value for field that is required and has no default value"
)


def _float_json(value: float) -> Any:
    if value - value == 0.0:
        return value
    # Jackson writes NaN and the infinities as strings (WRITE_NAN_AS_STRINGS).
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _float32_json(value: float) -> Any:
    """A FLOAT32 value as Jackson writes a Float: a double that is a single-precision number
    with a long text (0.10000000149011612, read from float bits) is written by its shortest
    single-precision digits (0.1); any other double reads back as the same float anyway."""
    if value - value != 0.0:
        return _float_json(value)
    if len(repr(value)) > 10 and to_single(value) == value:
        return orjson.Fragment(java_float_str(value).encode("ascii"))
    return value


def _b64(value: bytes | bytearray | memoryview) -> str:
    return binascii.b2a_base64(value, newline=False).decode("ascii")


def _write_schemaless(value: Any) -> Any:
    """A value without schema as JSON-ready objects, its type taken from its Python class."""
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return _float_json(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return _b64(value)
    if isinstance(value, list | tuple):
        return [_write_schemaless(item) for item in value]
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            return {key: _write_schemaless(item) for key, item in value.items()}
        return [[_write_schemaless(key), _write_schemaless(item)] for key, item in value.items()]
    if isinstance(value, Struct):
        raise DataError("Mismatching schema.")
    raise DataError(
        f"Java class {python_class_name(value)} does not have corresponding schema type."
    )


_PASSTHROUGH: Final = (
    orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _bytes_as_base64(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return _b64(value)
    raise TypeError("not plain JSON")  # orjson gives up: the walk decides


def _dump_schemaless(value: Any) -> bytes | None:
    """A schemaless value's JSON straight from orjson when that is Kafka's JSON, else None
    (then the walk of _write_schemaless decides). orjson would differ on NaN and the
    infinities (it writes null, Jackson "NaN"), so an output with a null is redone by the
    walk; other types than JSON's and bytes, non-string keys and integers beyond 64 bits
    make orjson fail, and the walk writes or refuses them as Kafka does."""
    try:
        dumped = orjson.dumps(value, default=_bytes_as_base64, option=_PASSTHROUGH)
    except (orjson.JSONEncodeError, TypeError):
        return None
    return None if b"null" in dumped else dumped


def _invalid_type(schema: Schema, value: Any) -> DataError:
    return DataError(f"Invalid type for {schema.type}: {python_class_name(value)}")


class _WriterCompiler:
    """The writing half of JsonConverter's compiler (:class:`.json_schema._Compiler`):
    builds, per schema, the function that writes values of that schema, memoised by
    schema."""

    numeric_decimals: bool
    replace_null: bool
    _memo_size: int
    _writers: dict[Schema, Writer]

    def writer(self, schema: Schema | None) -> Writer:
        if schema is None:
            return _write_schemaless
        writer = self._writers.get(schema)
        if writer is None:
            writer = self._build_writer(schema)
            _remember(self._writers, schema, writer, self._memo_size)
        return writer

    def _build_writer(self, schema: Schema) -> Writer:
        write = self._non_null_writer(schema)
        if schema.default is not None and self.replace_null:
            default_json = write(schema.default)

            def write_or_default(value: Any) -> Any:
                return default_json if value is None else write(value)

            return write_or_default
        if schema.optional:

            def write_optional(value: Any) -> Any:
                return None if value is None else write(value)

            return write_optional

        def write_required(value: Any) -> Any:
            if value is None:
                raise DataError(_NULL_FOR_REQUIRED)
            return write(value)

        return write_required

    def _non_null_writer(self, schema: Schema) -> Writer:
        logical = self._logical_writer(schema)
        if logical is not None:
            return logical
        kind = schema.type
        if kind in _INT_BITS:
            return _int_writer(schema)
        if kind is Type.FLOAT32:
            return _checked(schema, float, _float32_json)
        if kind is Type.FLOAT64:
            return _checked(schema, float, _float_json)
        if kind is Type.BOOLEAN:
            return _checked(schema, bool, None)
        if kind is Type.STRING:
            return _checked(schema, str, None)
        if kind is Type.BYTES:
            return _checked(schema, (bytes, bytearray, memoryview), _b64)
        if kind is Type.ARRAY:
            return self._array_writer(schema)
        if kind is Type.MAP:
            return self._map_writer(schema)
        return self._struct_writer(schema)

    def _logical_writer(self, schema: Schema) -> Writer | None:
        name = schema.name
        if name == DECIMAL_LOGICAL_NAME:
            return self._decimal_writer(schema)
        if name == DATE_LOGICAL_NAME:
            return _logical(schema, "Date", "Date", datetime.date, Date.from_logical)
        if name == TIME_LOGICAL_NAME:
            return _logical(schema, "Time", "Date", datetime.time, Time.from_logical)
        if name == TIMESTAMP_LOGICAL_NAME:
            return _logical(schema, "Timestamp", "Date", datetime.datetime, Timestamp.from_logical)
        return None

    def _decimal_writer(self, schema: Schema) -> Writer:
        numeric = self.numeric_decimals

        def write_decimal(value: Any) -> Any:
            if not isinstance(value, decimal.Decimal):
                raise DataError(
                    "Invalid type for Decimal, expected BigDecimal but was "
                    f"{python_class_name(value)}"
                )
            if numeric:
                if not value.is_finite():
                    raise DataError(f"Decimal value is not a finite number: {value}")
                return orjson.Fragment(str(value).encode("ascii"))
            return _b64(Decimal.from_logical(schema, value))

        return write_decimal

    def _array_writer(self, schema: Schema) -> Writer:
        write_item = self.writer(schema.value_schema)

        def write_array(value: Any) -> Any:
            if not isinstance(value, list | tuple):
                raise _invalid_type(schema, value)
            return [write_item(item) for item in value]

        return write_array

    def _map_writer(self, schema: Schema) -> Writer:
        key_schema = schema.key_schema
        write_key = self.writer(key_schema)
        write_value = self.writer(schema.value_schema)
        if key_schema is not None and key_schema.type is Type.STRING:

            def write_object(value: Any) -> Any:
                if not isinstance(value, dict):
                    raise _invalid_type(schema, value)
                return {_as_text(write_key(k)): write_value(v) for k, v in value.items()}

            return write_object

        def write_pairs(value: Any) -> Any:
            if not isinstance(value, dict):
                raise _invalid_type(schema, value)
            return [[write_key(k), write_value(v)] for k, v in value.items()]

        return write_pairs

    def _struct_writer(self, schema: Schema) -> Writer:
        """A function generated for this struct schema that builds the payload dict in one
        expression. A Struct's values were validated by put(), so integers, booleans and
        strings are their own JSON and finite floats too; other values, and None where None
        is a default or an error, go through the field's writer."""
        namespace: dict[str, Any] = {
            "Struct": Struct, "schema": schema, "invalid_type": _invalid_type,
            "DataError": DataError,
            # the last other schema object found equal to this one: the next structs that
            # carry it (the rest of a batch, as a rule) pass by identity, not by a deep
            # comparison
            "last_equal": [schema],
        }
        entries = []
        for field in schema.fields:
            writer = f"w{field.index}"
            namespace[writer] = self.writer(field.schema)
            value = f"v[{field.index}]"
            if _is_float(field.schema):
                expression = f"x if type(x := {value}) is float and x - x == 0.0 else {writer}(x)"
            elif not _copied_as_is(field.schema):
                expression = f"{writer}({value})"
            elif self._none_needs_handling(field.schema):
                expression = f"x if (x := {value}) is not None else {writer}(None)"
            else:
                expression = value
            entries.append(f"{field.name!r}: ({expression})")
        source = (
            "def write_struct(value):\n"
            "    if type(value) is not Struct and not isinstance(value, Struct):\n"
            "        raise invalid_type(schema, value)\n"
            "    struct_schema = value._schema\n"
            "    if struct_schema is not schema and struct_schema is not last_equal[0]:\n"
            "        if struct_schema != schema:\n"
            "            raise DataError('Mismatching schema.')\n"
            "        last_equal[0] = struct_schema\n"
            "    v = value._values\n"
            f"    return {{{', '.join(entries)}}}\n"
        )
        return _generated(source, namespace, "write_struct")

    def _none_needs_handling(self, schema: Schema) -> bool:
        return not schema.optional or (schema.default is not None and self.replace_null)


def _is_float(schema: Schema) -> bool:
    # FLOAT32 is not here: its values go through _float32_json
    return schema.name is None and schema.type is Type.FLOAT64


def _as_text(key: Any) -> str:
    # Jackson's asText() of a key node: a JSON null key becomes "null".
    return "null" if key is None else key if isinstance(key, str) else str(key)


def _copied_as_is(schema: Schema) -> bool:
    """Whether a valid value of the schema is its own JSON (integers, booleans, strings)."""
    return schema.name not in _LOGICAL_NAMES and schema.type in _PLAIN_JSON_TYPES


def _checked(
    schema: Schema, expected: type | tuple[type, ...], convert: Callable[[Any], Any] | None
) -> Writer:
    exact = expected if isinstance(expected, type) else None

    if convert is None:

        def write_same(value: Any) -> Any:
            if type(value) is exact or isinstance(value, expected):
                return value
            raise _invalid_type(schema, value)

        return write_same

    def write_converted(value: Any) -> Any:
        if type(value) is exact or isinstance(value, expected):
            return convert(value)
        raise _invalid_type(schema, value)

    return write_converted


def _int_writer(schema: Schema) -> Writer:
    bits = _INT_BITS[schema.type]
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def write_int(value: Any) -> Any:
        if type(value) is int and low <= value <= high:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            raise DataError(
                f"Invalid type for {schema.type}: {python_class_name(value)} "
                f"(value {value} out of range)"
            )
        raise _invalid_type(schema, value)

    return write_int


def _logical(
    schema: Schema, label: str, java_class: str, expected: type,
    from_logical: Callable[[Schema, Any], int],
) -> Writer:
    def write_logical(value: Any) -> Any:
        if not isinstance(value, expected):
            raise DataError(
                f"Invalid type for {label}, expected {java_class} but was "
                f"{python_class_name(value)}"
            )
        return from_logical(schema, value)

    return write_logical
