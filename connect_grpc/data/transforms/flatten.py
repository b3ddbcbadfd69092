"""Flatten: nested maps or structs become top-level fields named by their path (Kafka's
``Flatten``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.data.errors import DataError
from connect_grpc.data.schema import Schema, SchemaBuilder, Type, python_class_name
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms._config import key, parse_config
from connect_grpc.data.transforms._support import (
    KEY,
    KeyOrValueTransformation,
    SchemaCache,
    copy_schema_basics,
    require_map,
    require_struct_or_null,
)
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, define_all

DELIMITER = "delimiter"
PURPOSE = "flattening"

CONFIG_DEF = define_all([
    key(DELIMITER, ConfigType.STRING,
        "Delimiter to insert between field names from the input record when generating field "
        "names for the output record", default="."),
])

_KEPT_TYPES = frozenset({
    Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64, Type.BOOLEAN,
    Type.STRING, Type.BYTES, Type.ARRAY,
})
_KEPT_CLASSES = (bool, int, float, str, bytes, bytearray, memoryview, list)


class Flatten(KeyOrValueTransformation):
    """A null passes unchanged. Schemaless: nested maps are flattened (names joined with
    ``delimiter``); primitives, bytes, lists and nulls are kept as they are. With a schema:
    nested structs are flattened; a field is optional if it or an ancestor is, its default
    is its own or its parent struct default's; a MAP field is a DataError."""

    def __init__(self) -> None:
        self._schemas: SchemaCache[Schema, Schema] = SchemaCache()

    def configure(self, configs: Mapping[str, str]) -> None:
        self._delimiter: str = parse_config(CONFIG_DEF, configs)[DELIMITER]
        self._schemas.clear()

    def _name(self, prefix: str, name: str) -> str:
        return name if not prefix else prefix + self._delimiter + name

    def apply(self, record: Any) -> Any:
        value = self.side.value(record)
        if value is None:
            return record
        schema = self.side.schema(record)
        if schema is None:
            flat: dict[str, Any] = {}
            self._flatten_map(require_map(value, PURPOSE), "", flat)
            return self.side.updated(record, None, flat)
        struct = require_struct_or_null(value, PURPOSE)
        updated_schema = self._updated_schema(schema)
        if struct is None:
            return self.side.updated(record, updated_schema, None)
        result = Struct(updated_schema)
        self._flatten_struct(struct, "", result)
        return self.side.updated(record, updated_schema, result)

    def _flatten_map(self, source: dict[str, Any], prefix: str, target: dict[str, Any]) -> None:
        for name, item in source.items():
            full_name = self._name(prefix, name)
            if item is None or isinstance(item, _KEPT_CLASSES):
                target[full_name] = item
            elif isinstance(item, dict):
                self._flatten_map(item, full_name, target)
            elif isinstance(item, Struct):
                raise DataError(f"Flatten transformation does not support {python_class_name(item)}"
                                f" for record without schemas (for field {full_name}).")
            else:
                raise DataError(f"Flatten transformation was passed a value of type "
                                f"{python_class_name(item)} which is not supported by Connect's "
                                "data API")

    def _updated_schema(self, schema: Schema) -> Schema:
        cached = self._schemas.get(schema)
        if cached is None:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            self._add_fields(schema, "", builder, schema.optional, schema.default)
            cached = builder.build()
            self._schemas.put(schema, cached)
        return cached

    def _add_fields(self, schema: Schema, prefix: str, builder: SchemaBuilder, optional: bool,
                    parent_default: Struct | None) -> None:
        for field in schema.fields:
            name = self._name(prefix, field.name)
            field_optional = optional or field.schema.optional
            default = field.schema.default
            if default is None and parent_default is not None:
                default = parent_default.get(field.name)
            if field.schema.type in _KEPT_TYPES:
                builder.field(name, _field_schema(field.schema, field_optional, default))
            elif field.schema.type is Type.STRUCT:
                self._add_fields(field.schema, name, builder, field_optional, default)
            else:
                raise _unsupported_with_schema(field.schema.type, name)

    def _flatten_struct(self, struct: Struct | None, prefix: str, target: Struct) -> None:
        if struct is None:
            return
        for field in struct.schema.fields:
            name = self._name(prefix, field.name)
            if field.schema.type in _KEPT_TYPES:
                target.put(name, struct.get(field.name))
            elif field.schema.type is Type.STRUCT:
                self._flatten_struct(struct.get(field.name), name, target)
            else:
                raise _unsupported_with_schema(field.schema.type, name)

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._schemas.clear()


def _field_schema(original: Schema, optional: bool, default: Any) -> Schema:
    builder = copy_schema_basics(original)
    if optional:
        builder.optional()
    if default is not None:
        builder.default_value(default)
    return builder.build()


def _unsupported_with_schema(schema_type: Type, name: str) -> DataError:
    return DataError(f"Flatten transformation does not support {schema_type.name} for record "
                     f"with schemas (for field {name}).")


class FlattenKey(Flatten):
    """``org.apache.kafka.connect.transforms.Flatten$Key``."""

    side = KEY


class FlattenValue(Flatten):
    """``org.apache.kafka.connect.transforms.Flatten$Value``."""
