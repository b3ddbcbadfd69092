"""ExtractField: replaces the key or value by one of its fields (Kafka's ``ExtractField``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.data.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT,
    key,
    parse_config,
    replace_null_with_default_key,
)
from connect_grpc.data.transforms._field_path import (
    FIELD_SYNTAX_VERSION,
    SingleFieldPath,
    field_syntax_version_key,
)
from connect_grpc.data.transforms._support import (
    KEY,
    KeyOrValueTransformation,
    require_map_or_null,
    require_struct_or_null,
)
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, define_all

FIELD = "field"
PURPOSE = "field extraction"

CONFIG_DEF = define_all([
    key(FIELD, ConfigType.STRING, "Field name to extract."),
    replace_null_with_default_key(),
    field_syntax_version_key(),
])


class ExtractField(KeyOrValueTransformation):
    """Schemaless: the map's entry at ``field`` (null when absent, a null map stays null).
    With a schema: the field's value and schema; a field the schema lacks raises
    ``ValueError("Unknown field: <field>")`` (Kafka's IllegalArgumentException). With
    ``field.syntax.version=V2`` the field is a dotted path into nested maps/structs."""

    def configure(self, configs: Mapping[str, str]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._original: str = config[FIELD]
        self._path = SingleFieldPath(self._original, config[FIELD_SYNTAX_VERSION])
        self._with_default: bool = config[REPLACE_NULL_WITH_DEFAULT]

    def apply(self, record: Any) -> Any:
        schema = self.side.schema(record)
        if schema is None:
            value = require_map_or_null(self.side.value(record), PURPOSE)
            return self.side.updated(
                record, None, None if value is None else self._path.value_from_map(value))
        struct = require_struct_or_null(self.side.value(record), PURPOSE)
        field = self._path.field_from(schema)
        if field is None:
            raise ValueError(f"Unknown field: {self._original}")
        extracted = (None if struct is None
                     else self._path.value_from_struct(struct, self._with_default))
        return self.side.updated(record, field.schema, extracted)

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF


class ExtractFieldKey(ExtractField):
    """``org.apache.kafka.connect.transforms.ExtractField$Key``."""

    side = KEY


class ExtractFieldValue(ExtractField):
    """``org.apache.kafka.connect.transforms.ExtractField$Value``."""

