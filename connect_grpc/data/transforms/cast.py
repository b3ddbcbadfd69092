"""Cast: casts the key or value, or some of its fields, to another primitive type (Kafka's
``Cast``)."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
import struct as binary
from collections.abc import Mapping
from typing import Any

from connect_grpc.data.errors import DataError
from connect_grpc.data.javatext import java_double_str, wrap_signed
from connect_grpc.data.logical import Date, Time, Timestamp
from connect_grpc.data.schema import (
    Schema,
    SchemaBuilder,
    Type,
    python_class_name,
    validate_value,
)
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
    SchemaCache,
    copy_schema_basics,
    field_values,
    require_map,
    require_struct,
    struct_of_checked_values,
    struct_value,
)
from connect_grpc.data.values import format_temporal
from connect_grpc.kernel.configdef import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    ConfigDef,
    ConfigType,
    ExactMessage,
    Importance,
    define_all,
    java_list,
    parse_java_double,
    parse_java_integer,
)

SPEC = "spec"
PURPOSE = "cast types"

_OUTPUT_TYPES = (Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64,
                 Type.BOOLEAN, Type.STRING)
_INPUT_TYPES = (*_OUTPUT_TYPES, Type.BYTES)
_BITS = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}
_WHOLE_VALUE = ""  # a field name Kafka's spec parsing cannot produce


def _java_enum_set(types: tuple[Type, ...]) -> str:
    return java_list(t.name for t in types)


def _java_split_colon(text: str) -> list[str]:
    parts = text.split(":")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_spec(mappings: list[str]) -> dict[str, Type]:
    """The casts by field name (``""`` for the whole value). Raises ValueError with Kafka's
    message."""
    if not mappings:
        raise ValueError("Must specify at least one field to cast.")
    casts: dict[str, Type] = {}
    for mapping in mappings:
        parts = _java_split_colon(mapping)
        if len(parts) > 2:
            raise ValueError(f"Invalid value {java_list(mappings)} for configuration renames: "
                             f"Invalid rename mapping: {mapping}")
        field, type_name = (_WHOLE_VALUE, parts[0]) if len(parts) == 1 else parts
        casts[field.strip()] = _output_type(type_name.strip())
    if _WHOLE_VALUE in casts and len(mappings) > 1:
        raise ValueError("Cast transformations that specify a type to cast the entire value to "
                         "may only specify a single cast in their spec")
    return casts


def _output_type(name: str) -> Type:
    found = Type.__members__.get(name.upper())
    if found is None:
        raise ValueError(f"Invalid type found in casting spec: {name}")
    if found not in _OUTPUT_TYPES:
        raise ValueError(f"Cast transformation does not support casting to {found.name}; "
                         f"supported types are {_java_enum_set(_OUTPUT_TYPES)}")
    return found


def _spec_error(value: Any) -> str | None:
    if value is None:
        return None
    try:
        parse_spec(value)
    except ValueError as exc:
        return ExactMessage(str(exc))
    return None


CONFIG_DEF = define_all([
    key(SPEC, ConfigType.LIST,
        "List of fields and the type to cast them to of the form field1:type,field2:type to cast "
        "fields of Maps or Structs. A single type to cast the entire value. Valid types are int8, "
        "int16, int32, int64, float32, float64, boolean, and string. Note that binary fields can "
        "only be cast to string.", validator=_spec_error, importance=Importance.HIGH),
    replace_null_with_default_key(),
])


class Cast(KeyOrValueTransformation):
    """Casts per Kafka's rules: numbers narrow as Java's casts do (wrapping), booleans are
    1/0, strings parse as Java's ``parseInt``/``parseDouble`` (else ``Value (<v>) was out of
    range for requested data type``), numbers are true when non-zero, strings true when
    ``true`` in any case; to string: dates as Kafka's Values writes them, bytes as base64.
    Logical Date/Time/Timestamp cast to a non-string become their int encoding. A null
    passes unchanged. Schemaless, every field of the spec is written (a missing one as null)."""

    def __init__(self) -> None:
        self._schemas: SchemaCache[Schema, Schema] = SchemaCache()

    def configure(self, configs: Mapping[str, str]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._casts = parse_spec(config[SPEC])
        self._whole_value = self._casts.get(_WHOLE_VALUE)
        self._with_default: bool = config[REPLACE_NULL_WITH_DEFAULT]
        self._schemas.clear()

    def apply(self, record: Any) -> Any:
        value = self.side.value(record)
        if value is None:
            return record
        schema = self.side.schema(record)
        if schema is None:
            return self.side.updated(record, None, self._cast_schemaless(value))
        updated_schema = self._updated_schema(schema)
        if self._whole_value is not None:
            return self.side.updated(record, updated_schema,
                                     cast_value(schema, value, self._whole_value))
        source = require_struct(value, PURPOSE)
        if source.schema is not schema:
            return self.side.updated(record, updated_schema,
                                     self._cast_by_name(source, updated_schema))
        # The updated schema has the same fields in the same order: only the cast ones change.
        values = field_values(source, self._with_default)
        for field, updated_field in zip(schema.fields, updated_schema.fields, strict=True):
            target = self._casts.get(field.name)
            if target is not None:
                cast = cast_value(field.schema, values[field.index], target)
                validate_value(updated_field.schema, cast, field.name)
                values[field.index] = cast
        return self.side.updated(record, updated_schema,
                                 struct_of_checked_values(updated_schema, values))

    def _cast_by_name(self, source: Struct, updated_schema: Schema) -> Struct:
        updated = Struct(updated_schema)
        for field in source.schema.fields:
            item = struct_value(source, field.name, self._with_default)
            target = self._casts.get(field.name)
            updated.put(field.name, item if target is None else cast_value(field.schema, item,
                                                                           target))
        return updated

    def _cast_schemaless(self, value: Any) -> Any:
        if self._whole_value is not None:
            return cast_value(None, value, self._whole_value)
        updated = dict(require_map(value, PURPOSE))
        for field, target in self._casts.items():
            updated[field] = cast_value(None, updated.get(field), target)
        return updated

    def _updated_schema(self, schema: Schema) -> Schema:
        cached = self._schemas.get(schema)
        if cached is not None:
            return cached
        if self._whole_value is not None:
            builder = copy_schema_basics(schema, SchemaBuilder.type(self._whole_value))
        else:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            for field in schema.fields:
                target = self._casts.get(field.name)
                builder.field(field.name, field.schema if target is None
                              else _cast_field_schema(field.schema, target))
        if schema.optional:
            builder.optional()
        if schema.default is not None:
            builder.default_value(cast_value(schema, schema.default, builder.schema_type))
        built = builder.build()
        self._schemas.put(schema, built)
        return built

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._schemas.clear()


def _cast_field_schema(schema: Schema, target: Type) -> Schema:
    builder = SchemaBuilder.type(target)
    if schema.optional:
        builder.optional()
    if schema.default is not None:
        builder.default_value(cast_value(schema, schema.default, target))
    return builder.build()


# --- casting one value ------------------------------------------------------------------


def cast_value(schema: Schema | None, value: Any, target: Type) -> Any:
    """``value`` (of ``schema``, or schemaless) cast to ``target``, as Kafka's Cast does."""
    if value is None:
        return None
    source_type = schema.type if schema is not None else _schemaless_type(value)
    if source_type not in _INPUT_TYPES:
        raise DataError(f"Cast transformation does not support casting from {source_type.name}; "
                        f"supported types are {_java_enum_set(_INPUT_TYPES)}")
    if schema is not None and schema.name is not None and target is not Type.STRING:
        value = _encode_logical(schema, value)
    try:
        if target in _BITS:
            return _to_integer(value, _BITS[target])
        if target in (Type.FLOAT32, Type.FLOAT64):
            return _to_float(value, single=target is Type.FLOAT32)
        if target is Type.BOOLEAN:
            return _to_boolean(value)
        return _to_string(value, schema)
    except ValueError:
        raise DataError(f"Value ({_java_text(value)}) was out of range for requested data "
                        "type") from None


def _schemaless_type(value: Any) -> Type:
    for classes, schema_type in (
        (bool, Type.BOOLEAN), (int, Type.INT64), (float, Type.FLOAT64), (str, Type.STRING),
        ((bytes, bytearray, memoryview), Type.BYTES), (list, Type.ARRAY), (dict, Type.MAP),
        (Struct, Type.STRUCT),
    ):
        if isinstance(value, classes):
            return schema_type
    raise DataError(f"Cast transformation was passed a value of type {python_class_name(value)} "
                    "which is not supported by Connect's data API")


def _encode_logical(schema: Schema, value: Any) -> Any:
    if schema.name == Date.LOGICAL_NAME:
        return Date.from_logical(schema, value)
    if schema.name == Time.LOGICAL_NAME:
        return Time.from_logical(schema, value)
    if schema.name == Timestamp.LOGICAL_NAME:
        return Timestamp.from_logical(schema, value)
    return value


def _unexpected(value: Any) -> DataError:
    return DataError(f"Unexpected type in Cast transformation: {python_class_name(value)}")


def _to_integer(value: Any, bits: int) -> int:
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, int):
        return wrap_signed(value, bits)
    if isinstance(value, float):
        # Java narrows a double through int (or long for 64 bits), saturating, NaN → 0.
        saturated = _saturate(value, LONG_MIN, LONG_MAX) if bits == 64 else _saturate(
            value, INT_MIN, INT_MAX)
        return wrap_signed(saturated, bits)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError(f"not finite: {value}")
        return wrap_signed(int(value), bits)
    if isinstance(value, str):
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return parse_java_integer(value, low, high)
    raise _unexpected(value)


def _saturate(value: float, low: int, high: int) -> int:
    if math.isnan(value):
        return 0
    if value >= high:
        return high
    if value <= low:
        return low
    return int(value)


def _to_float(value: Any, *, single: bool) -> float:
    if isinstance(value, bool):
        result = 1.0 if value else 0.0
    elif isinstance(value, int | float | decimal.Decimal):
        result = float(value)
    elif isinstance(value, str):
        result = parse_java_double(value)
    else:
        raise _unexpected(value)
    return to_float32(result) if single else result


def to_float32(value: float) -> float:
    """The nearest float32 (an infinity beyond its range), as Java's ``(float)`` gives."""
    try:
        return float(binary.unpack("f", binary.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return wrap_signed(value, 64) != 0
    if isinstance(value, float):
        return _saturate(value, LONG_MIN, LONG_MAX) != 0
    if isinstance(value, decimal.Decimal):
        return value.is_finite() and wrap_signed(int(value), 64) != 0
    if isinstance(value, str):
        return value.lower() == "true"
    raise _unexpected(value)


def _to_string(value: Any, schema: Schema | None) -> str:
    if isinstance(value, dt.date | dt.time):
        return format_temporal(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, float) and schema is not None and schema.type is Type.FLOAT32:
        return java_float_str(value)
    return _java_text(value)


def _java_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double_str(value)
    return str(value)


def java_float_str(value: float) -> str:
    """A float32 as Java's ``Float.toString`` writes it: the shortest digits that read back
    as the same float32, in Java's layout."""
    if not math.isfinite(value) or value == 0:
        return java_double_str(value)
    single = to_float32(value)
    for precision in range(1, 10):
        text = f"{single:.{precision}g}"
        if to_float32(float(text)) == single:
            return java_double_str(float(text))
    return java_double_str(single)


class CastKey(Cast):
    """``org.apache.kafka.connect.transforms.Cast$Key``."""

    side = KEY


class CastValue(Cast):
    """``org.apache.kafka.connect.transforms.Cast$Value``."""
