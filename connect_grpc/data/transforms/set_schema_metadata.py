"""SetSchemaMetadata: sets the name and/or version of the key or value schema (Kafka's
``SetSchemaMetadata``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.data.schema import Schema, Type
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT,
    key,
    parse_config,
    replace_null_with_default_key,
)
from connect_grpc.data.transforms._support import (
    KEY,
    KeyOrValueTransformation,
    field_values,
    require_schema,
    struct_of_checked_values,
    struct_value,
)
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, Importance, define_all

SCHEMA_NAME = "schema.name"
SCHEMA_VERSION = "schema.version"

CONFIG_DEF = define_all([
    key(SCHEMA_NAME, ConfigType.STRING, "Schema name to set.", default=None,
        importance=Importance.HIGH),
    key(SCHEMA_VERSION, ConfigType.INT, "Schema version to set.", default=None,
        importance=Importance.HIGH),
    replace_null_with_default_key(),
])


class SetSchemaMetadata(KeyOrValueTransformation):
    """The schema keeps everything (type, optionality, default, doc, parameters, fields,
    key/value schemas) but gets the configured name and/or version; a Struct is copied into
    a Struct of the new schema. A null value without schema passes; a value without schema
    is a DataError."""

    def configure(self, configs: Mapping[str, str]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._name: str | None = config[SCHEMA_NAME]
        self._version: int | None = config[SCHEMA_VERSION]
        self._with_default: bool = config[REPLACE_NULL_WITH_DEFAULT]
        if self._name is None and self._version is None:
            raise ValueError("Neither schema name nor version configured")

    def apply(self, record: Any) -> Any:
        value = self.side.value(record)
        schema = self.side.schema(record)
        if value is None and schema is None:
            return record
        schema = require_schema(schema, "updating schema metadata")
        updated = self._updated_schema(schema)
        return self.side.updated(record, updated, self._moved_into(value, updated))

    def _updated_schema(self, schema: Schema) -> Schema:
        is_map = schema.type is Type.MAP
        return Schema(
            schema.type,
            optional=schema.optional,
            default=schema.default,
            name=self._name if self._name is not None else schema.name,
            version=self._version if self._version is not None else schema.version,
            doc=schema.doc,
            parameters=schema.parameters,
            fields=schema.fields if schema.type is Type.STRUCT else None,
            key_schema=schema.key_schema if is_map else None,
            value_schema=schema.value_schema if is_map or schema.type is Type.ARRAY else None,
        )

    def _moved_into(self, value: Any, schema: Schema) -> Any:
        if not isinstance(value, Struct):
            return value
        if value.schema.fields == schema.fields:
            # Kafka copies field by field into the same fields: the values are already checked.
            return struct_of_checked_values(schema, field_values(value, self._with_default))
        moved = Struct(schema)
        for field in schema.fields:
            moved.put(field, struct_value(value, field.name, self._with_default))
        return moved

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF


class SetSchemaMetadataKey(SetSchemaMetadata):
    """``org.apache.kafka.connect.transforms.SetSchemaMetadata$Key``."""

    side = KEY


class SetSchemaMetadataValue(SetSchemaMetadata):
    """``org.apache.kafka.connect.transforms.SetSchemaMetadata$Value``."""
