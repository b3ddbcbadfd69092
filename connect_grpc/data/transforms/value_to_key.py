"""ValueToKey: the key becomes a map or Struct of fields of the value (Kafka's ``ValueToKey``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.data.errors import DataError
from connect_grpc.data.plugins import Transformation
from connect_grpc.data.schema import Schema, SchemaBuilder
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT,
    key,
    non_empty_list,
    parse_config,
    replace_null_with_default_key,
)
from connect_grpc.data.transforms._support import (
    SchemaCache,
    require_map,
    require_struct,
    struct_value,
)
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, define_all

FIELDS = "fields"
PURPOSE = "copying fields from value to key"

CONFIG_DEF = define_all([
    key(FIELDS, ConfigType.LIST, "Field names on the record value to extract as the record key.",
        validator=non_empty_list(FIELDS)),
    replace_null_with_default_key(),
])


class ValueToKey(Transformation[Any]):
    """Schemaless: key = ``{f: value.get(f)}`` with no schema. With a schema: a Struct of the
    value's fields with their schemas (a field the value schema lacks is a DataError). A
    tombstone is a DataError, as in Kafka (there is no null guard)."""

    def __init__(self) -> None:
        self._key_schemas: SchemaCache[Schema, Schema] = SchemaCache()

    def configure(self, configs: Mapping[str, str]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._fields: list[str] = config[FIELDS]
        self._with_default: bool = config[REPLACE_NULL_WITH_DEFAULT]
        self._key_schemas.clear()

    def apply(self, record: Any) -> Any:
        if record.value_schema is None:
            value = require_map(record.value, PURPOSE)
            return record.new_record(key_schema=None,
                                     key={name: value.get(name) for name in self._fields})
        struct = require_struct(record.value, PURPOSE)
        key_schema = self._key_schema(struct.schema)
        key_struct = Struct(key_schema)
        for name in self._fields:
            key_struct.put(name, struct_value(struct, name, self._with_default))
        return record.new_record(key_schema=key_schema, key=key_struct)

    def _key_schema(self, value_schema: Schema) -> Schema:
        cached = self._key_schemas.get(value_schema)
        if cached is not None:
            return cached
        builder = SchemaBuilder.struct()
        for name in self._fields:
            field = value_schema.field(name)
            if field is None:
                raise DataError(f"Field does not exist: {name}")
            builder.field(name, field.schema)
        built = builder.build()
        self._key_schemas.put(value_schema, built)
        return built

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._key_schemas.clear()
