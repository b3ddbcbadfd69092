"""ReplaceField: keeps, drops and renames fields of the key or value (Kafka's ``ReplaceField``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect_grpc.data.schema import Schema, SchemaBuilder, Type
from connect_grpc.data.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT,
    key,
    parse_config,
    replace_null_with_default_key,
)
from connect_grpc.data.transforms._support import (
    KEY,
    FieldPlan,
    FromField,
    SchemaCache,
    SideTransformation,
    copy_schema_basics,
    field_values,
    require_map,
    require_struct,
    struct_of_checked_values,
)
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, ExactMessage, define_all, java_list

EXCLUDE = "exclude"
INCLUDE = "include"
RENAMES = "renames"
PURPOSE = "field replacement"


def rename_mapping_error(mappings: Any) -> str | None:
    """Each rename is ``old:new``: exactly one colon (Java's ``split(":")`` into two parts)."""
    for mapping in mappings or ():
        if len(_java_split_colon(mapping)) != 2:
            return ExactMessage(f"Invalid value {java_list(mappings)} for configuration "
                                f"{RENAMES}: Invalid rename mapping: {mapping}")
    return None


def _java_split_colon(text: str) -> list[str]:
    # Java's String.split drops trailing empty strings ("a:" gives ["a"]).
    parts = text.split(":")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


CONFIG_DEF = define_all([
    key(EXCLUDE, ConfigType.LIST,
        "Fields to exclude. This takes precedence over the fields to include.", default=[]),
    key(INCLUDE, ConfigType.LIST,
        "Fields to include. If specified, only these fields will be used.", default=[]),
    key(RENAMES, ConfigType.LIST, "Field rename mappings.", default=[],
        validator=rename_mapping_error),
    replace_null_with_default_key(),
])


class ReplaceField(SideTransformation):
    """A field is kept when it is not in ``exclude`` and ``include`` is empty or lists it;
    kept fields are then renamed by ``renames`` (``old:new``). A null passes unchanged."""

    def __init__(self) -> None:
        self._schemas: SchemaCache[Schema, tuple[Schema, list[int]]] = SchemaCache()

    def configure(self, configs: Mapping[str, str]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._exclude = frozenset(config[EXCLUDE])
        self._include = frozenset(config[INCLUDE])
        self._renames = dict(_java_split_colon(m) for m in config[RENAMES])
        self._reverse = {new: old for old, new in self._renames.items()}
        self._with_default: bool = config[REPLACE_NULL_WITH_DEFAULT]
        self._schemas.clear()

    def _keeps(self, name: str) -> bool:
        return name not in self._exclude and (not self._include or name in self._include)

    def apply_side(self, record: Any, schema: Schema | None, value: Any) -> tuple[Any, Any]:
        if value is None:
            return schema, value
        if schema is None:
            return None, self._replaced_map(require_map(value, PURPOSE))
        struct = require_struct(value, PURPOSE)
        updated_schema, sources = self._updated_schema(struct.schema)
        values = struct._values  # read only: the kept values go to a new list
        if self._with_default and None in values:
            values = field_values(struct, True)
        return updated_schema, struct_of_checked_values(
            updated_schema, [values[index] for index in sources])

    def compile_plan(self, schema: Schema) -> tuple[Schema, FieldPlan] | None:
        if schema.type is not Type.STRUCT:
            return None
        updated, sources = self._updated_schema(schema)
        return updated, tuple(map(FromField, sources))

    def _replaced_map(self, fields: dict[str, Any]) -> dict[str, Any]:
        renames, exclude, include = self._renames, self._exclude, self._include
        if include:
            return {renames.get(name, name): item for name, item in fields.items()
                    if name in include and name not in exclude}
        return {renames.get(name, name): item for name, item in fields.items()
                if name not in exclude}

    def _updated_schema(self, schema: Schema) -> tuple[Schema, list[int]]:
        """The new schema and, for each of its fields, the index of the field it comes from."""
        cached = self._schemas.get(schema)
        if cached is None:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            sources = []
            for field in schema.fields:
                if self._keeps(field.name):
                    builder.field(self._renames.get(field.name, field.name), field.schema)
                    sources.append(field.index)
            cached = (builder.build(), sources)
            self._schemas.put(schema, cached)
        return cached

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._schemas.clear()


class ReplaceFieldKey(ReplaceField):
    """``org.apache.kafka.connect.transforms.ReplaceField$Key``."""

    side = KEY


class ReplaceFieldValue(ReplaceField):
    """``org.apache.kafka.connect.transforms.ReplaceField$Value``."""
