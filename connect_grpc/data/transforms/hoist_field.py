"""HoistField: wraps the key or value in a single-field Struct or map (Kafka's ``HoistField``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.data.schema import Schema, SchemaBuilder, validate_value
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms._config import key, parse_config
from connect_grpc.data.transforms._support import (
    KEY,
    SchemaCache,
    SideStep,
    SideTransformation,
)
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, define_all

FIELD = "field"

CONFIG_DEF = define_all([
    key(FIELD, ConfigType.STRING,
        "Field name for the single field that will be created in the resulting Struct or Map."),
])


class HoistField(SideTransformation):
    """Schemaless: ``{field: value}`` (a null value too). With a schema: a Struct whose one
    field ``field`` has the original schema (a null value needs an optional schema)."""

    def __init__(self) -> None:
        self._schemas: SchemaCache[Schema, Schema] = SchemaCache()

    def configure(self, configs: Mapping[str, str]) -> None:
        self._field: str = parse_config(CONFIG_DEF, configs)[FIELD]
        self._schemas.clear()

    def apply_side(self, record: Any, schema: Schema | None, value: Any) -> tuple[Any, Any]:
        if schema is None:
            return None, {self._field: value}
        updated = self._hoisted_schema(schema)
        # Struct(updated).put(field, value): the one field's schema is ``schema``
        validate_value(schema, value, self._field)
        return updated, Struct.trusted(updated, [value])

    def compile_side(self, schema: Schema) -> tuple[Schema, SideStep] | None:
        updated = self._hoisted_schema(schema)
        field, trusted = self._field, Struct.trusted

        def hoist(record: Any, value: Any) -> Any:
            validate_value(schema, value, field)
            return trusted(updated, [value])

        return updated, hoist

    def _hoisted_schema(self, schema: Schema) -> Schema:
        updated = self._schemas.get(schema)
        if updated is None:
            updated = SchemaBuilder.struct().field(self._field, schema).build()
            self._schemas.put(schema, updated)
        return updated

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._schemas.clear()


class HoistFieldKey(HoistField):
    """``org.apache.kafka.connect.transforms.HoistField$Key``."""

    side = KEY


class HoistFieldValue(HoistField):
    """``org.apache.kafka.connect.transforms.HoistField$Value``."""
