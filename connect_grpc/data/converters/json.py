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

``schema.content`` (KIP-1054) gives one schema in the config: with schemas enabled, every
message is then read whole as a value of it (an envelope is not unwrapped, as in Kafka
4.4.0); writing does not use it.

This module holds the converter, its config and its caches; what it compiles per schema,
and the JSON parsing under that, are modules of their own: :mod:`.json_schema` (a schema's
envelope JSON, both ways, and the compiler that combines the others),
:mod:`.json_writers` (values to JSON-ready objects), :mod:`.json_readers` (parsed JSON to
values), :mod:`.json_codegen` (the generated code they share) and :mod:`.json_parsing`
(JSON text read as Jackson reads it). The class stays here: ``JsonConverter``'s dotted path
is this module's, which the plugin registry accepts as an alias and a pickled converter
names.
"""

from __future__ import annotations

import dataclasses
import decimal
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

import orjson

from connect_grpc.data.converters.base import BuiltinConverter, converter_config_def
from connect_grpc.data.converters.json_codegen import Reader, Writer
from connect_grpc.data.converters.json_parsing import (
    _MISSING,
    _ExactNumbersNeeded,
    _loads,
    _loads_payload,
)
from connect_grpc.data.converters.json_readers import _read_plain_json, _read_schemaless
from connect_grpc.data.converters.json_schema import _Compiler
from connect_grpc.data.converters.json_writers import _dump_schemaless, _write_schemaless
from connect_grpc.data.errors import DataError
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.plugins import NULL_SCHEMA_AND_VALUE, SchemaAndValue
from connect_grpc.data.schema import Schema
from connect_grpc.kernel.configdef import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    ExactMessage,
    Importance,
    one_of_ignoring_case,
)

SCHEMAS_ENABLE_CONFIG: Final = "schemas.enable"
SCHEMAS_CACHE_SIZE_CONFIG: Final = "schemas.cache.size"
SCHEMA_CONTENT_CONFIG: Final = "schema.content"
DECIMAL_FORMAT_CONFIG: Final = "decimal.format"
REPLACE_NULL_WITH_DEFAULT_CONFIG: Final = "replace.null.with.default"

_ENVELOPE_MESSAGE: Final = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
    "contain additional fields. If you are trying to deserialize plain JSON data, set "
    "schemas.enable=false in your converter configuration."
)
_WRITE_FAILED: Final = "Converting Kafka Connect data to byte[] failed due to serialization error: "
_SCHEMA_CONTENT_FAILED: Final = (
    "Failed to parse schema in converter config due to serialization error: "
)


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
        SCHEMA_CONTENT_CONFIG, ConfigType.STRING,
        "A schema in the envelope's JSON form, given once here rather than in every message: "
        "with schemas.enable=true, every message is read as a bare value of this schema, an "
        "envelope included (its schema is not looked at). No effect on writing, nor with "
        "schemas.enable=false. Unset or empty: the schema is read from each message.",
        default=None, importance=Importance.HIGH, validator=_schema_content_problem,
        group="Schemas", order_in_group=2, display_name="Schema Content",
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


def _configured_schema(compiler: _Compiler, text: str | None) -> Schema | None:
    """The schema ``schema.content`` gives (None when unset, empty or JSON null), or a
    DataError with the message Kafka's configure fails with."""
    if not text:
        return None
    try:
        schema_json = _loads(text.encode("utf-8"))
    except DataError as exc:
        # Kafka words a parse failure of the config apart from one of a record
        raise DataError(f"{_SCHEMA_CONTENT_FAILED}{exc.__cause__ or exc}") from exc
    try:
        return compiler.connect_schema(schema_json)
    except _ExactNumbersNeeded:
        return compiler.connect_schema(_floats_as_decimals(schema_json))


def _schema_content_problem(value: Any) -> str | None:
    """Validation's check of ``schema.content``: what configure would fail with, on the key."""
    compiler = _Compiler(numeric_decimals=False, replace_null=True, memo_size=0)
    try:
        _configured_schema(compiler, value)
    except DataError as exc:
        return ExactMessage(str(exc))
    return None


def _configure_config_def() -> ConfigDef:
    """JsonConverter's keys without ``schema.content``'s validator: configure checks the
    schema itself, to fail as Kafka's does (a DataError, not a config error)."""
    config_def = json_converter_config_def()
    key = config_def.keys[SCHEMA_CONTENT_CONFIG]
    config_def.keys[SCHEMA_CONTENT_CONFIG] = dataclasses.replace(key, validator=None)
    return config_def


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

    def configure_def(self) -> ConfigDef:
        return _CONFIGURE_CONFIG_DEF

    def apply_config(self, parsed: Mapping[str, Any]) -> None:
        self._apply(
            schemas_enabled=parsed[SCHEMAS_ENABLE_CONFIG],
            cache_size=parsed[SCHEMAS_CACHE_SIZE_CONFIG],
            numeric=str(parsed[DECIMAL_FORMAT_CONFIG]).upper() == "NUMERIC",
            replace_null=parsed[REPLACE_NULL_WITH_DEFAULT_CONFIG],
            schema_content=parsed[SCHEMA_CONTENT_CONFIG],
        )

    def _apply(self, *, schemas_enabled: bool, cache_size: int, numeric: bool,
               replace_null: bool, schema_content: str | None = None) -> None:
        compiler = _Compiler(
            numeric_decimals=numeric, replace_null=replace_null, memo_size=4 * cache_size
        )
        # Checked whatever schemas.enable says, as Kafka's configure does, and before
        # anything changes: a converter refused its config keeps the one it had.
        configured = _configured_schema(compiler, schema_content)
        self._settings = {
            "schemas_enabled": schemas_enabled, "cache_size": cache_size, "numeric": numeric,
            "replace_null": replace_null, "schema_content": schema_content,
        }
        self.schemas_enabled = schemas_enabled
        self._compiler = compiler
        #: ``schema.content``'s schema, its reader, and its reader of a value known to be
        #: there: every message read (with schemas enabled) is a value of it.
        self._configured: tuple[Schema, Reader, Reader] | None = None
        if configured is not None:
            self._configured = (
                configured, compiler.reader(configured), compiler.present_reader(configured)
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
        if self._configured is not None:
            return self._read_with_configured_schema(data)
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

    def _read_with_configured_schema(self, data: bytes) -> SchemaAndValue:
        """The whole message as a value of ``schema.content``'s schema. An envelope is not
        unwrapped: as in Kafka, its ``schema`` and ``payload`` are read as the value (fields
        of a struct schema, say), so a topic holds one form or the other."""
        assert self._configured is not None
        schema = self._configured[0]
        try:
            return SchemaAndValue(schema, self._configured_value(data, exact=False))
        except _ExactNumbersNeeded:
            return SchemaAndValue(schema, self._configured_value(data, exact=True))

    def _configured_value(self, data: bytes, *, exact: bool) -> Any:
        assert self._configured is not None
        _, reader, present_reader = self._configured
        document = _loads(data, exact=exact)
        # Empty bytes are Jackson's missing node, which Kafka hands to the schema type's
        # own conversion (not null: an INT32 reads 0, a STRING null), whatever the
        # schema's optionality or default.
        return present_reader(document) if document is _MISSING else reader(document)

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


_SCHEMALESS_WRITE_ENTRY: Final = _WriteEntry(b'{"schema":null,"payload":', _write_schemaless)
_CONFIGURE_CONFIG_DEF: Final = _configure_config_def()


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
