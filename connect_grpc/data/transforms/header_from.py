"""HeaderFrom: copies or moves fields of the key or value into headers (Kafka's
``HeaderFrom``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.data.errors import DataError
from connect_grpc.data.schema import Schema, SchemaBuilder
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT,
    key,
    non_empty_list,
    one_of,
    parse_config,
    replace_null_with_default_key,
)
from connect_grpc.data.transforms._support import (
    KEY,
    KeyOrValueTransformation,
    SchemaCache,
    connect_headers,
    copy_schema_basics,
    require_map,
    require_struct,
    struct_value,
)
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, Importance, define_all

FIELDS = "fields"
HEADERS = "headers"
OPERATION = "operation"
MOVE = "move"
COPY = "copy"

CONFIG_DEF = define_all([
    key(FIELDS, ConfigType.LIST,
        "Field names in the record whose values are to be copied or moved to headers.",
        validator=non_empty_list(FIELDS), importance=Importance.HIGH),
    key(HEADERS, ConfigType.LIST,
        "Header names, in the same order as the field names listed in the fields configuration "
        "property.", validator=non_empty_list(HEADERS), importance=Importance.HIGH),
    key(OPERATION, ConfigType.STRING,
        "Either move if the fields are to be moved to the headers (removed from the key/value), "
        "or copy if the fields are to be copied to the headers (retained in the key/value).",
        validator=one_of(MOVE, COPY), importance=Importance.HIGH),
    replace_null_with_default_key(),
])


class HeaderFrom(KeyOrValueTransformation):
    """For each ``fields[i]`` a header ``headers[i]`` is appended (existing headers kept)
    with the field's value (and, with a schema, the field's schema); ``move`` also removes
    the fields. A null value is a DataError, as in Kafka. A field the schema lacks is a
    DataError ``Field does not exist: <f>`` (Kafka fails with a NullPointerException)."""

    def __init__(self) -> None:
        self._schemas: SchemaCache[Schema, Schema] = SchemaCache()

    def configure(self, configs: Mapping[str, str]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._fields: list[str] = config[FIELDS]
        self._headers: list[str] = config[HEADERS]
        if len(self._fields) != len(self._headers):
            raise ValueError(
                f"'{FIELDS}' config must have the same number of elements as '{HEADERS}' config.")
        self._move = config[OPERATION] == MOVE
        self._purpose = f"header {config[OPERATION]}"
        self._with_default: bool = config[REPLACE_NULL_WITH_DEFAULT]
        self._schemas.clear()

    def apply(self, record: Any) -> Any:
        schema = self.side.schema(record)
        value = self.side.value(record)
        headers = connect_headers(record)
        if schema is None:
            fields = require_map(value, self._purpose)
            updated = dict(fields)
            for field_name, header_name in zip(self._fields, self._headers, strict=True):
                if self._move:
                    updated.pop(field_name, None)
                headers.add(header_name, fields.get(field_name))
            return self.side.updated(record, None, updated).new_record(headers=headers)
        struct = require_struct(value, self._purpose)
        updated_schema, updated_value = (self._moved(schema, struct) if self._move
                                         else (schema, struct))
        for field_name, header_name in zip(self._fields, self._headers, strict=True):
            field = schema.field(field_name)
            if field is None:
                raise DataError(f"Field does not exist: {field_name}")
            field_value = None
            if struct.schema.field(field_name) is not None:
                field_value = struct_value(struct, field_name, self._with_default)
            headers.add(header_name, field_value, field.schema)
        return self.side.updated(record, updated_schema, updated_value).new_record(headers=headers)

    def _moved(self, schema: Schema, struct: Struct) -> tuple[Schema, Struct]:
        moved_schema = self._schemas.get(schema)
        if moved_schema is None:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            for field in schema.fields:
                if field.name not in self._fields:
                    builder.field(field.name, field.schema)
            moved_schema = builder.build()
            self._schemas.put(schema, moved_schema)
        moved = Struct(moved_schema)
        for field in moved_schema.fields:
            moved.put(field, struct_value(struct, field.name, self._with_default))
        return moved_schema, moved

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._schemas.clear()


class HeaderFromKey(HeaderFrom):
    """``org.apache.kafka.connect.transforms.HeaderFrom$Key``."""

    side = KEY


class HeaderFromValue(HeaderFrom):
    """``org.apache.kafka.connect.transforms.HeaderFrom$Value``."""
