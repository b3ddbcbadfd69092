"""Kafka's JsonConverter: Connect data as JSON, with the schema in an envelope
(``{"schema": ..., "payload": ...}``) when ``schemas.enable`` is true (the default).

The bytes are Kafka's: the envelope's key order, ``optional`` always written, ``field`` last
in a struct field's schema, decimals as base64 of the two's-complement unscaled value (or
JSON numbers with ``decimal.format=NUMERIC``), dates/times/timestamps as integers, bytes as
base64. A None schema with a None value is a tombstone (None bytes) and None bytes read back
as ``SchemaAndValue(None, None)``. Schemaless JSON reads back as INT64 for integers, FLOAT64
for fractions, dicts for objects.

Speed: for each schema the converter compiles, once, the envelope's schema text and a
function that turns a value into JSON-ready Python objects (and the reverse for each schema
read), kept in LRU caches of ``schemas.cache.size`` entries; a record then costs one cache
hit, one walk over its value and one orjson call. Reading, when a record's schema text is the
one seen last, only the payload is parsed.

Differences from Jackson, all at the edges: an integer beyond 64 bits in the payload of an
INT64 field is read through a float (orjson's reading; Jackson keeps its low 64 bits), and
numbers are written in Python's shortest form (``1e+20`` where Java writes ``1.0E20``; the
same number). Numbers with leading zeros (``0012``) are read, as Kafka's Jackson is told to.
"""

from __future__ import annotations

import binascii
import datetime
import decimal
import json
import math
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from types import CodeType
from typing import Any, Final

import orjson

from connect_grpc.configdef import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    Importance,
    one_of_ignoring_case,
)
from connect_grpc.data.converters.base import BuiltinConverter, converter_config_def
from connect_grpc.data.errors import DataError
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.javatext import java_float_str, to_single, wrap_signed
from connect_grpc.data.logical import Date, Decimal, Time, Timestamp, timestamp_of_millis
from connect_grpc.data.plugins import NULL_SCHEMA_AND_VALUE, SchemaAndValue
from connect_grpc.data.schema import (
    DATE_LOGICAL_NAME,
    DECIMAL_LOGICAL_NAME,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
    Schema,
    SchemaBuilder,
    Type,
    python_class_name,
    validate_value,
)
from connect_grpc.data.struct import Struct

SCHEMAS_ENABLE_CONFIG: Final = "schemas.enable"
SCHEMAS_CACHE_SIZE_CONFIG: Final = "schemas.cache.size"
DECIMAL_FORMAT_CONFIG: Final = "decimal.format"
REPLACE_NULL_WITH_DEFAULT_CONFIG: Final = "replace.null.with.default"

_ENVELOPE_MESSAGE: Final = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
    "contain additional fields. If you are trying to deserialize plain JSON data, set "
    "schemas.enable=false in your converter configuration."
)
_READ_FAILED: Final = "Converting byte[] to Kafka Connect data failed due to serialization error: "
_WRITE_FAILED: Final = "Converting Kafka Connect data to byte[] failed due to serialization error: "
_NULL_FOR_REQUIRED: Final = (
    "Conversion error: null value for field that is required and has no default value"
)

_JSON_TYPE_NAMES: Final = {
    Type.INT8: "int8", Type.INT16: "int16", Type.INT32: "int32", Type.INT64: "int64",
    Type.FLOAT32: "float", Type.FLOAT64: "double", Type.BOOLEAN: "boolean",
    Type.STRING: "string", Type.BYTES: "bytes", Type.ARRAY: "array", Type.MAP: "map",
    Type.STRUCT: "struct",
}
_BUILDERS_BY_JSON_NAME: Final[dict[str, Callable[[], SchemaBuilder]]] = {
    "boolean": SchemaBuilder.bool, "int8": SchemaBuilder.int8, "int16": SchemaBuilder.int16,
    "int32": SchemaBuilder.int32, "int64": SchemaBuilder.int64, "float": SchemaBuilder.float32,
    "double": SchemaBuilder.float64, "bytes": SchemaBuilder.bytes, "string": SchemaBuilder.string,
}
_INT_BITS: Final = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}

Writer = Callable[[Any], Any]
Reader = Callable[[Any], Any]


def json_converter_config_def() -> ConfigDef:
    """JsonConverter's keys (Kafka's JsonConverterConfig)."""
    return converter_config_def().define(ConfigKey(
        SCHEMAS_ENABLE_CONFIG, ConfigType.BOOLEAN,
        "Include schemas within each of the serialized values and keys.",
        default=True, importance=Importance.HIGH, group="Schemas", order_in_group=0,
        display_name="Enable Schemas",
    )).define(ConfigKey(
        SCHEMAS_CACHE_SIZE_CONFIG, ConfigType.INT,
        "The maximum number of schemas that can be cached in this converter instance.",
        default=1000, importance=Importance.HIGH, group="Schemas", order_in_group=1,
        display_name="Schema Cache Size",
    )).define(ConfigKey(
        DECIMAL_FORMAT_CONFIG, ConfigType.STRING,
        "Controls which format this converter will serialize decimals in. This value is case "
        "insensitive and can be either 'BASE64' (default) or 'NUMERIC'",
        default="BASE64", importance=Importance.LOW,
        validator=one_of_ignoring_case("BASE64", "NUMERIC"), group="Serialization",
        order_in_group=0, display_name="Decimal Format",
    )).define(ConfigKey(
        REPLACE_NULL_WITH_DEFAULT_CONFIG, ConfigType.BOOLEAN,
        "Whether to replace fields that have a default value and that are null to the default "
        "value. When set to true, the default value is used, otherwise null is used.",
        default=True, importance=Importance.LOW, group="Serialization", order_in_group=1,
        display_name="Replace null with default",
    ))


class _LruCache:
    """A small LRU map (Kafka's LRUCache); a size below 1 caches nothing."""

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any) -> Any:
        # Taken out and put back under the caller's key, not moved to the end under the
        # stored one: a key equal to the stored one but another object (a schema rebuilt
        # by each call, say) is then found by identity next time rather than by a deep
        # comparison.
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._entries[key] = entry
        return entry

    def put(self, key: Any, entry: Any) -> None:
        if self._size < 1:
            return
        self._entries[key] = entry
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class JsonConverter(BuiltinConverter):
    """Kafka's JsonConverter (also a HeaderConverter). See the module docstring."""

    def __init__(self) -> None:
        super().__init__()
        self._apply(schemas_enabled=True, cache_size=1000, numeric=False, replace_null=True)

    def config_def(self) -> ConfigDef:
        return json_converter_config_def()

    def apply_config(self, parsed: Mapping[str, Any]) -> None:
        self._apply(
            schemas_enabled=parsed[SCHEMAS_ENABLE_CONFIG],
            cache_size=parsed[SCHEMAS_CACHE_SIZE_CONFIG],
            numeric=str(parsed[DECIMAL_FORMAT_CONFIG]).upper() == "NUMERIC",
            replace_null=parsed[REPLACE_NULL_WITH_DEFAULT_CONFIG],
        )

    def _apply(self, *, schemas_enabled: bool, cache_size: int, numeric: bool,
               replace_null: bool) -> None:
        self._settings = {
            "schemas_enabled": schemas_enabled, "cache_size": cache_size, "numeric": numeric,
            "replace_null": replace_null,
        }
        self.schemas_enabled = schemas_enabled
        self._compiler = _Compiler(
            numeric_decimals=numeric, replace_null=replace_null, memo_size=4 * cache_size
        )
        self._write_cache = _LruCache(cache_size)
        self._read_cache = _LruCache(cache_size)
        self._last_written: tuple[Schema, _WriteEntry] | None = None
        self._last_read: _ReadEntry | None = None

    def __getstate__(self) -> dict[str, Any]:
        # The caches hold generated functions, which pickle cannot carry: a copy of the
        # converter (sent to another process) starts with empty caches.
        return {"converter_type": self.converter_type, "settings": self._settings}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.converter_type = state["converter_type"]
        self._apply(**state["settings"])

    # -- Connect data → bytes --

    def from_connect_data(
        self, topic: str, headers: ConnectHeaders | None, schema: Schema | None, value: Any
    ) -> bytes | None:
        if schema is None and value is None:
            return None
        entry = self._write_entry(schema)
        payload = _dump_schemaless(value) if schema is None else None
        if payload is None:
            try:
                payload = orjson.dumps(entry.writer(value))
            except orjson.JSONEncodeError as exc:
                raise DataError(f"{_WRITE_FAILED}{exc}") from exc
        if self.schemas_enabled:
            return entry.envelope_prefix + payload + b"}"
        return payload

    def _write_entry(self, schema: Schema | None) -> _WriteEntry:
        last = self._last_written
        if last is not None and last[0] is schema:
            return last[1]
        if schema is None:
            entry = _SCHEMALESS_WRITE_ENTRY
        else:
            entry = self._write_cache.get(schema)
            if entry is None:
                entry = _WriteEntry(
                    b'{"schema":' + orjson.dumps(self._compiler.json_schema(schema))
                    + b',"payload":',
                    self._compiler.writer(schema),
                )
                self._write_cache.put(schema, entry)
            self._last_written = (schema, entry)
        return entry

    def as_json_schema(self, schema: Schema | None) -> dict[str, Any] | None:
        """The envelope's JSON form of a schema (Kafka's ``asJsonSchema``)."""
        return None if schema is None else self._compiler.json_schema(schema)

    # -- bytes → Connect data --

    def to_connect_data(
        self, topic: str, headers: ConnectHeaders | None, value: bytes | None
    ) -> SchemaAndValue:
        if value is None:
            return NULL_SCHEMA_AND_VALUE
        data = value if value.__class__ is bytes else bytes(value)
        if not self.schemas_enabled:
            return SchemaAndValue(None, _read_plain_json(data))
        last = self._last_read
        if last is not None and data.startswith(last.prefix) and data.endswith(b"}"):
            payload_json = data[last.payload_start:-1]
            try:
                payload = orjson.loads(payload_json)
            except orjson.JSONDecodeError:
                pass  # not the envelope it looked like: read it whole below
            else:
                try:
                    read = last.reader if payload is None else last.present_reader
                    return _schema_and_value(SchemaAndValue, (last.schema, read(payload)))
                except _ExactNumbersNeeded:
                    exact_payload = _loads_payload(payload_json, exact=True)
                    return SchemaAndValue(last.schema, last.reader(exact_payload))
        try:
            return self._read_envelope(data, exact=False)
        except _ExactNumbersNeeded:
            return self._read_envelope(data, exact=True)

    def _read_envelope(self, data: bytes, *, exact: bool) -> SchemaAndValue:
        document = _loads(data, exact=exact)
        if not isinstance(document, dict) or document.keys() != {"schema", "payload"}:
            raise DataError(_ENVELOPE_MESSAGE)
        schema_json = document["schema"]
        if schema_json is None:
            return SchemaAndValue(None, _read_schemaless(document["payload"]))
        key = orjson.dumps(schema_json, default=_decimal_marker)
        entry = self._read_cache.get(key)
        if entry is None:
            schema = self._compiler.connect_schema(schema_json)
            assert schema is not None
            entry = _ReadEntry(b'{"schema":' + key + b',"payload":', schema,
                               self._compiler.reader(schema),
                               self._compiler.present_reader(schema))
            self._read_cache.put(key, entry)
        self._last_read = entry
        return SchemaAndValue(entry.schema, entry.reader(document["payload"]))

    def as_connect_schema(self, schema_json: Any) -> Schema | None:
        """The schema an envelope's JSON describes (Kafka's ``asConnectSchema``); a float
        in a decimal default is taken by its shortest text."""
        try:
            return self._compiler.connect_schema(schema_json)
        except _ExactNumbersNeeded:
            return self._compiler.connect_schema(_floats_as_decimals(schema_json))

    @property
    def cached_schemas(self) -> tuple[int, int]:
        """How many schemas the (write, read) caches hold."""
        return len(self._write_cache), len(self._read_cache)


class _WriteEntry:
    __slots__ = ("envelope_prefix", "writer")

    def __init__(self, envelope_prefix: bytes, writer: Writer) -> None:
        self.envelope_prefix = envelope_prefix
        self.writer = writer


class _ReadEntry:
    __slots__ = ("payload_start", "prefix", "present_reader", "reader", "schema")

    def __init__(self, prefix: bytes, schema: Schema, reader: Reader,
                 present_reader: Reader) -> None:
        self.prefix = prefix
        self.payload_start = len(prefix)
        self.schema = schema
        self.reader = reader
        #: ``reader`` for a payload that is not null (what it calls then, without the test).
        self.present_reader = present_reader


#: Makes a SchemaAndValue from a (schema, value) pair without the named tuple's own
#: ``__new__`` (a Python function: a third of the cost of reading a small record).
_schema_and_value = tuple.__new__


class _ExactNumbersNeeded(Exception):
    """A decimal was met as a float: the JSON is parsed again with exact numbers (Jackson's
    USE_BIG_DECIMAL_FOR_FLOATS), which only decimals need, so only they pay for it."""


def _floats_as_decimals(value: Any) -> Any:
    if isinstance(value, float):
        return decimal.Decimal(repr(value))
    if isinstance(value, list):
        return [_floats_as_decimals(item) for item in value]
    if isinstance(value, dict):
        return {key: _floats_as_decimals(item) for key, item in value.items()}
    return value


def _decimal_marker(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    raise TypeError(f"not JSON: {type(value).__name__}")


# --- JSON parsing ---------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"Non-standard token '{name}'")


def _loads(data: bytes, *, exact: bool = False) -> Any:
    """Parses JSON; ``exact`` keeps fractions as ``decimal.Decimal`` (Jackson's
    USE_BIG_DECIMAL_FOR_FLOATS) for decimals read as numbers. Empty input is Jackson's
    missing node (None here)."""
    if not data.strip():
        return _MISSING
    if not exact:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # numbers beyond a double and others: the exact parser decides
    return _loads_exact(data)


def _loads_payload(data: bytes, *, exact: bool) -> Any:
    if exact:
        return _loads_exact(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DataError(f"{_READ_FAILED}{exc}") from exc


def _loads_exact(data: bytes) -> Any:
    try:
        return _exact_json(data)
    except (ValueError, RecursionError) as exc:
        # Kafka's Jackson reads numbers with leading zeros (ALLOW_LEADING_ZEROS_FOR_NUMBERS)
        try:
            text = data.decode("utf-8")
            without_zeros = _without_leading_zeros(text)
            if without_zeros != text:
                return _exact_json(without_zeros)
        except (ValueError, RecursionError):
            pass
        raise DataError(f"{_READ_FAILED}{exc}") from exc


def _exact_json(data: bytes | str) -> Any:
    return json.loads(data, parse_float=decimal.Decimal, parse_constant=_reject_constant)


_STRING_LITERAL: Final = re.compile(r'"(?:[^"\\]|\\.)*"')
_LEADING_ZEROS: Final = re.compile(r"(?<![\w.])(-?)0+(?=\d)")


def _without_leading_zeros(text: str) -> str:
    """The JSON text with the leading zeros of its numbers removed (``0012`` → ``12``,
    ``-007`` → ``-7``), string literals untouched."""
    pieces: list[str] = []
    position = 0
    for literal in _STRING_LITERAL.finditer(text):
        pieces.append(_LEADING_ZEROS.sub(r"\1", text[position:literal.start()]))
        pieces.append(literal.group())
        position = literal.end()
    pieces.append(_LEADING_ZEROS.sub(r"\1", text[position:]))
    return "".join(pieces)


class _Missing:
    """Jackson's MissingNode: what empty input parses to."""


_MISSING: Final = _Missing()


def _node_type(value: Any) -> str:
    if value is None:
        return "NULL"
    if value is _MISSING:
        return "MISSING"
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int | float | decimal.Decimal):
        return "NUMBER"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, list):
        return "ARRAY"
    return "OBJECT"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool)


# --- writing (Kafka's convertToJson) --------------------------------------------------------


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


_SCHEMALESS_WRITE_ENTRY: Final = _WriteEntry(b'{"schema":null,"payload":', _write_schemaless)


def _invalid_type(schema: Schema, value: Any) -> DataError:
    return DataError(f"Invalid type for {schema.type}: {python_class_name(value)}")


class _Compiler:
    """Builds, per schema, the functions that write and read values of that schema, and the
    schema's JSON; each built once per schema (memoised by schema) and then reused."""

    def __init__(self, *, numeric_decimals: bool, replace_null: bool, memo_size: int) -> None:
        self.numeric_decimals = numeric_decimals
        self._memo_size = max(memo_size, 16)
        self.replace_null = replace_null
        self._writers: dict[Schema, Writer] = {}
        self._readers: dict[Schema, Reader] = {}
        self._json_schemas: dict[Schema, dict[str, Any]] = {}

    # -- schema → JSON --

    def json_schema(self, schema: Schema) -> dict[str, Any]:
        cached = self._json_schemas.get(schema)
        if cached is None:
            cached = self._build_json_schema(schema)
            _remember(self._json_schemas, schema, cached, self._memo_size)
        return cached

    def _build_json_schema(self, schema: Schema) -> dict[str, Any]:
        result: dict[str, Any] = {"type": _JSON_TYPE_NAMES[schema.type]}
        if schema.type is Type.ARRAY:
            result["items"] = self._sub_schema(schema.value_schema)
        elif schema.type is Type.MAP:
            result["keys"] = self._sub_schema(schema.key_schema)
            result["values"] = self._sub_schema(schema.value_schema)
        elif schema.type is Type.STRUCT:
            result["fields"] = [
                {**self.json_schema(field.schema), "field": field.name} for field in schema.fields
            ]
        result["optional"] = schema.optional
        if schema.name is not None:
            result["name"] = schema.name
        if schema.version is not None:
            result["version"] = schema.version
        if schema.doc is not None:
            result["doc"] = schema.doc
        if schema.parameters is not None:
            result["parameters"] = dict(schema.parameters)
        if schema.default is not None:
            result["default"] = self._non_null_writer(schema)(schema.default)
        return result

    def _sub_schema(self, schema: Schema | None) -> dict[str, Any] | None:
        return None if schema is None else self.json_schema(schema)

    # -- values → JSON-ready objects --

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

    # -- JSON → schema (Kafka's asConnectSchema) --

    def connect_schema(self, schema_json: Any) -> Schema | None:
        if schema_json is None:
            return None
        type_name = schema_json.get("type") if isinstance(schema_json, dict) else None
        if not isinstance(type_name, str):
            raise DataError("Schema must contain 'type' field")
        builder = self._builder_of(type_name, schema_json)
        optional = schema_json.get("optional")
        if optional is True:
            builder.optional()
        else:
            builder.required()
        name = schema_json.get("name")
        if isinstance(name, str):
            builder.name(name)
        version = schema_json.get("version")
        if isinstance(version, int) and not isinstance(version, bool):
            builder.version(wrap_signed(version, 32))
        doc = schema_json.get("doc")
        if isinstance(doc, str):
            builder.doc(doc)
        parameters = schema_json.get("parameters")
        if isinstance(parameters, dict):
            for key, text in parameters.items():
                if not isinstance(text, str):
                    raise DataError("Schema parameters must have string values.")
                builder.parameter(key, text)
        if "default" in schema_json:
            so_far = builder.build()
            builder.default_value(self._build_reader(so_far)(schema_json["default"]))
        return builder.build()

    def _builder_of(self, type_name: str, schema_json: dict[str, Any]) -> SchemaBuilder:
        simple = _BUILDERS_BY_JSON_NAME.get(type_name)
        if simple is not None:
            return simple()
        if type_name == "array":
            items = schema_json.get("items")
            if items is None:
                raise DataError("Array schema did not specify the element type")
            return SchemaBuilder.array(self._required_schema(items))
        if type_name == "map":
            if "keys" not in schema_json:
                raise DataError("Map schema did not specify the key type")
            if "values" not in schema_json:
                raise DataError("Map schema did not specify the value type")
            return SchemaBuilder.map(
                self._required_schema(schema_json["keys"]),
                self._required_schema(schema_json["values"]),
            )
        if type_name == "struct":
            builder = SchemaBuilder.struct()
            fields = schema_json.get("fields")
            if not isinstance(fields, list):
                raise DataError('Struct schema\'s "fields" argument is not an array.')
            for field in fields:
                name = field.get("field") if isinstance(field, dict) else None
                if not isinstance(name, str):
                    raise DataError("Struct schema's field name not specified properly")
                builder.field(name, self._required_schema(field))
            return builder
        raise DataError(f"Unknown schema type: {type_name}")

    def _required_schema(self, schema_json: Any) -> Schema:
        schema = self.connect_schema(schema_json)
        if schema is None:  # Kafka's builder refuses a null key, value or field schema
            raise DataError("Schema must not be null here")
        return schema

    # -- JSON-ready objects → values (Kafka's convertToConnect) --

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


def _generated(source: str, namespace: dict[str, Any], name: str) -> Callable[[Any], Any]:
    # Per-schema code: one expression per struct instead of one call per field, which is
    # most of a record's cost in Python. Only field names enter the source, as repr()s.
    exec(_compiled(source, name), namespace)
    function: Callable[[Any], Any] = namespace[name]
    return function


#: Compiled per-schema code by its source: converters made again for the same schemas (a
#: task restarted, each PreviewPipeline call) bind it to their own namespace without
#: compiling it again. The source names its bindings only, so the code is theirs to share.
_CODE_CACHE: dict[tuple[str, str], CodeType] = {}
_CODE_CACHE_SIZE = 512


def _compiled(source: str, name: str) -> CodeType:
    code = _CODE_CACHE.get((source, name))
    if code is None:
        code = compile(source, f"<json {name}>", "exec")
        if len(_CODE_CACHE) >= _CODE_CACHE_SIZE:
            _CODE_CACHE.clear()
        _CODE_CACHE[(source, name)] = code
    return code


def _is_float(schema: Schema) -> bool:
    # FLOAT32 is not here: its values go through _float32_json
    return schema.name is None and schema.type is Type.FLOAT64


def _remember(memo: dict[Schema, Any], schema: Schema, built: Any, size: int) -> None:
    # Nested schemas are memoised too; beyond a few times the cache size, start afresh
    # rather than grow without bound on a stream of ever-new schemas.
    if len(memo) >= size:
        memo.clear()
    memo[schema] = built


def _as_text(key: Any) -> str:
    # Jackson's asText() of a key node: a JSON null key becomes "null".
    return "null" if key is None else key if isinstance(key, str) else str(key)


def _copied_as_is(schema: Schema) -> bool:
    """Whether a valid value of the schema is its own JSON (integers, booleans, strings)."""
    return schema.name not in _LOGICAL_NAMES and schema.type in _PLAIN_JSON_TYPES


_PLAIN_JSON_TYPES: Final = frozenset(
    {Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.BOOLEAN, Type.STRING}
)
_LOGICAL_NAMES: Final = frozenset(
    {DECIMAL_LOGICAL_NAME, DATE_LOGICAL_NAME, TIME_LOGICAL_NAME, TIMESTAMP_LOGICAL_NAME}
)


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


# --- reading helpers --------------------------------------------------------------------------


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
