"""MaskField: replaces fields of the key or value by their type's zero or by a replacement
(Kafka's ``MaskField``)."""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Callable, Mapping
from typing import Any

from connect_grpc.data import values
from connect_grpc.data.errors import DataError
from connect_grpc.data.schema import Field, Schema, Type, python_class_name, validate_value
from connect_grpc.data.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT,
    key,
    non_empty_list,
    non_empty_string,
    parse_config,
    replace_null_with_default_key,
)
from connect_grpc.data.transforms._support import (
    KEY,
    FieldPlan,
    Fixed,
    FromField,
    NotCompiled,
    SchemaCache,
    SideTransformation,
    field_values,
    require_map,
    require_struct,
    struct_of_checked_values,
)
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, Importance, define_all

FIELDS = "fields"
REPLACEMENT = "replacement"
PURPOSE = "mask fields"

CONFIG_DEF = define_all([
    key(FIELDS, ConfigType.LIST, "Names of fields to mask.", validator=non_empty_list(FIELDS),
        importance=Importance.HIGH),
    key(REPLACEMENT, ConfigType.STRING,
        "Custom value replacement, that will be applied to all 'fields' values (numeric or "
        "non-empty string values only).", default=None, validator=non_empty_string,
        importance=Importance.LOW),
    replace_null_with_default_key(),
])

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: The classes of masks that records may share (the same object in each record).
_IMMUTABLE = frozenset({
    type(None), bool, int, float, str, decimal.Decimal, dt.datetime, dt.date, dt.time,
})
_UNKNOWN: Any = object()
_BIG_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")

#: How a custom replacement becomes an integer of each width (a schemaless int is a Long,
#: as JSON integers are in Kafka Connect).
_INTEGER_CONVERSIONS: dict[Type | None, Callable[[Schema | None, Any], Any]] = {
    Type.INT8: values.convert_to_byte,
    Type.INT16: values.convert_to_short,
    Type.INT32: values.convert_to_integer,
    Type.INT64: values.convert_to_long,
    None: values.convert_to_long,
}


def _zero_of(value: Any) -> Any:
    """Kafka's per-class mask: false, 0, 0.0, 0 (decimal), the epoch, "", [], {}."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, decimal.Decimal):
        return decimal.Decimal(0)
    if isinstance(value, dt.datetime):
        return _EPOCH
    if isinstance(value, dt.date):
        return _EPOCH.date()
    if isinstance(value, dt.time):
        return dt.time(0)
    if isinstance(value, str):
        return ""
    if isinstance(value, list):
        return []
    if isinstance(value, dict):
        return {}
    raise DataError(f"Cannot mask value of type: {python_class_name(value)}")


def _replacement_for(value: Any, schema: Schema | None, replacement: str) -> Any:
    """The replacement converted to the value's type (numbers through Kafka's Values)."""
    schema_type = schema.type if schema is not None else None
    try:
        if isinstance(value, str):
            return replacement
        if isinstance(value, int) and not isinstance(value, bool):
            to_integer = _INTEGER_CONVERSIONS.get(schema_type) or values.convert_to_long
            return to_integer(None, replacement)
        if isinstance(value, float):
            convert: Callable[[Schema | None, Any], Any] = (
                values.convert_to_float if schema_type is Type.FLOAT32
                else values.convert_to_double)
            return convert(None, replacement)
        if isinstance(value, decimal.Decimal):
            if not _BIG_DECIMAL.fullmatch(replacement):
                raise ValueError(replacement)
            return decimal.Decimal(replacement)
    except (DataError, ValueError):
        raise DataError(f"Unable to convert {replacement} ({python_class_name(replacement)}) to "
                        "number") from None
    raise DataError(f"Cannot mask value of type {python_class_name(value)} with custom "
                    "replacement.")


class MaskField(SideTransformation):
    """Each listed field becomes its type's zero (``replacement`` unset) or the replacement
    converted to its type; a null field stays null and the schema is unchanged. There is no
    null guard (a tombstone is a DataError), and schemaless every listed field is written,
    a missing one as null, as in Kafka."""

    def __init__(self) -> None:
        self._fields_by_schema: SchemaCache[Schema, list[tuple[Field, dict[type, Any]]]] = (
            SchemaCache()
        )

    def configure(self, configs: Mapping[str, str]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._fields: list[str] = list(dict.fromkeys(config[FIELDS]))
        self._field_set = frozenset(self._fields)
        self._replacement: str | None = config[REPLACEMENT]
        self._with_default: bool = config[REPLACE_NULL_WITH_DEFAULT]
        self._fields_by_schema.clear()

    def _masked(self, value: Any, schema: Schema | None) -> Any:
        if value is None:
            return None
        if self._replacement is None:
            return _zero_of(value)
        return _replacement_for(value, schema, self._replacement)

    def apply_side(self, record: Any, schema: Schema | None, value: Any) -> tuple[Any, Any]:
        if schema is None:
            source = require_map(value, PURPOSE)
            updated = dict(source)
            for name in self._fields:
                updated[name] = self._masked(source.get(name), None)
            return None, updated
        struct = require_struct(value, PURPOSE)
        values = field_values(struct, self._with_default)
        for field, masks in self._masked_fields(struct.schema):
            current = values[field.index]
            masked = masks.get(current.__class__, _UNKNOWN)
            if masked is _UNKNOWN:
                masked = self._masked(current, field.schema)
                validate_value(field.schema, masked, field.name)
                if masked.__class__ in _IMMUTABLE:
                    masks[current.__class__] = masked
            values[field.index] = masked
        return schema, struct_of_checked_values(struct.schema, values)

    def compile_plan(self, schema: Schema) -> tuple[Schema, FieldPlan] | None:
        if schema.type is not Type.STRUCT:
            return None
        plan: list[FromField | Fixed] = [FromField(field.index) for field in schema.fields]
        for field, masks in self._masked_fields(schema):
            plan[field.index] = FromField(field.index, (self._field_mask(field, masks),))
        return schema, tuple(plan)

    def _field_mask(self, field: Field, masks: dict[type, Any]) -> Callable[[Any], Any]:
        """What ``apply_side`` writes in ``field`` for a value that is not null."""

        def mask(value: Any) -> Any:
            masked = masks.get(value.__class__, _UNKNOWN)
            if masked is _UNKNOWN:
                masked = self._masked(value, field.schema)
                validate_value(field.schema, masked, field.name)
                if masked.__class__ in _IMMUTABLE:
                    masks[value.__class__] = masked
            if masked is None:
                raise NotCompiled
            return masked

        return mask

    def _masked_fields(self, schema: Schema) -> list[tuple[Field, dict[type, Any]]]:
        """The schema's fields to mask, each with the masks found so far by the class of
        the value masked (a field's mask depends on nothing else; only immutable masks are
        kept, so a record never shares a list or a map with another)."""
        found = self._fields_by_schema.get(schema)
        if found is None:
            found = [(field, {}) for field in schema.fields if field.name in self._field_set]
            self._fields_by_schema.put(schema, found)
        return found

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._fields_by_schema.clear()


class MaskFieldKey(MaskField):
    """``org.apache.kafka.connect.transforms.MaskField$Key``."""

    side = KEY


class MaskFieldValue(MaskField):
    """``org.apache.kafka.connect.transforms.MaskField$Value``."""
