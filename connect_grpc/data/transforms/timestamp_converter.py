"""TimestampConverter: converts a timestamp between string, unix epoch, Date, Time and
Timestamp (Kafka's ``TimestampConverter``).

Python values of the logical types: Date is ``datetime.date``, Time ``datetime.time``,
Timestamp a UTC ``datetime.datetime``. Schemaless input is typed by its Python class as
Kafka types it by its Java class: any ``datetime.date``/``datetime``/``time`` is a
timestamp, an ``int`` a unix epoch, a ``str`` a formatted string. String formats are Java
SimpleDateFormat patterns in UTC; the letters supported are listed in ``_dateformat``, and a
pattern using others is refused at validation.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from connect_grpc.data.errors import DataError
from connect_grpc.data.logical import Date, Time, Timestamp
from connect_grpc.data.schema import (
    INT64_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
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
    one_of,
    parse_config,
    replace_null_with_default_key,
)
from connect_grpc.data.transforms._dateformat import (
    JavaDateFormat,
    PatternError,
    from_epoch_millis,
    to_epoch_millis,
)
from connect_grpc.data.transforms._support import (
    KEY,
    KeyOrValueTransformation,
    SchemaCache,
    copy_schema_basics,
    field_values,
    require_map,
    require_struct_or_null,
    struct_of_checked_values,
    struct_value,
)
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, Importance, define_all

FIELD = "field"
TARGET_TYPE = "target.type"
FORMAT = "format"
UNIX_PRECISION = "unix.precision"
PURPOSE = "converting timestamp formats"

STRING, UNIX, DATE, TIME, TIMESTAMP = "string", "unix", "Date", "Time", "Timestamp"
SECONDS, MILLIS, MICROS, NANOS = "seconds", "milliseconds", "microseconds", "nanoseconds"
_MILLIS_PER_DAY = 86_400_000

_PATTERN_REFUSED = (
    "TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: "
)


def _format_error(value: Any) -> str | None:
    if value is None or not str(value).strip():
        return None
    try:
        JavaDateFormat(value)
    except PatternError as exc:
        return f"{_PATTERN_REFUSED}{value} ({exc})"
    return None


CONFIG_DEF = define_all([
    key(FIELD, ConfigType.STRING,
        "The field containing the timestamp, or empty if the entire value is a timestamp",
        default="", importance=Importance.HIGH),
    key(TARGET_TYPE, ConfigType.STRING,
        "The desired timestamp representation: string, unix, Date, Time, or Timestamp",
        validator=one_of(STRING, UNIX, DATE, TIME, TIMESTAMP), importance=Importance.HIGH),
    key(FORMAT, ConfigType.STRING,
        "A SimpleDateFormat-compatible format for the timestamp, in UTC. Used to generate the "
        "output when type=string or used to parse the input if the input is a string.",
        default="", validator=_format_error),
    key(UNIX_PRECISION, ConfigType.STRING,
        "The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, or "
        "nanoseconds. Used to generate the output when type=unix or used to parse the input if "
        "the input is a Long. Note: This SMT will cause precision loss during conversions from, "
        "and to, values with sub-millisecond components.",
        default=MILLIS, validator=one_of(NANOS, MICROS, MILLIS, SECONDS),
        importance=Importance.LOW),
    replace_null_with_default_key(),
])

_TARGET_SCHEMAS: dict[str, tuple[Schema, Schema]] = {
    STRING: (STRING_SCHEMA, OPTIONAL_STRING_SCHEMA),
    UNIX: (INT64_SCHEMA, OPTIONAL_INT64_SCHEMA),
    DATE: (Date.SCHEMA, Date.builder().optional().build()),
    TIME: (Time.SCHEMA, Time.builder().optional().build()),
    TIMESTAMP: (Timestamp.SCHEMA, Timestamp.builder().optional().build()),
}
_UNIX_FACTOR = {SECONDS: 1000, MILLIS: 1, MICROS: 1000, NANOS: 1_000_000}


def _truncating_div(dividend: int, divisor: int) -> int:
    """Java's integer division, which rounds toward zero (Python's rounds down)."""
    quotient = abs(dividend) // divisor
    return quotient if dividend >= 0 else -quotient


class TimestampConverter(KeyOrValueTransformation):
    """Converts the whole key/value (``field`` empty) or one field of it to ``target.type``.
    The output schema is the target's, optional when the input's was."""

    def __init__(self) -> None:
        self._schemas: SchemaCache[Schema, Schema] = SchemaCache()

    def configure(self, configs: Mapping[str, str]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._field: str = config[FIELD]
        self._target: str = config[TARGET_TYPE]
        self._precision: str = config[UNIX_PRECISION]
        self._with_default: bool = config[REPLACE_NULL_WITH_DEFAULT]
        pattern: str = config[FORMAT]
        if self._target == STRING and not pattern.strip():
            raise ValueError("TimestampConverter requires format option to be specified when "
                             "using string timestamps")
        self._format = JavaDateFormat(pattern) if pattern.strip() else None
        self._schemas.clear()

    def _target_schema(self, optional: bool) -> Schema:
        required, optional_schema = _TARGET_SCHEMAS[self._target]
        return optional_schema if optional else required

    # --- records ------------------------------------------------------------------------

    def apply(self, record: Any) -> Any:
        schema = self.side.schema(record)
        value = self.side.value(record)
        if schema is None:
            if value is None or not self._field:
                return self.side.updated(record, None, self._convert(value, None))
            updated = dict(require_map(value, PURPOSE))
            updated[self._field] = self._convert(updated.get(self._field), None)
            return self.side.updated(record, None, updated)
        if not self._field:
            return self.side.updated(record, self._target_schema(schema.optional),
                                     self._convert(value, _source_type(schema)))
        struct = require_struct_or_null(value, PURPOSE)
        updated_schema = self._updated_schema(schema)
        return self.side.updated(record, updated_schema, self._converted_struct(struct,
                                                                                updated_schema))

    def _updated_schema(self, schema: Schema) -> Schema:
        cached = self._schemas.get(schema)
        if cached is not None:
            return cached
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            builder.field(field.name, self._target_schema(field.schema.optional)
                          if field.name == self._field else field.schema)
        if schema.optional:
            builder.optional()
        if schema.default is not None:
            builder.default_value(self._converted_struct(schema.default, builder.build()))
        built = builder.build()
        self._schemas.put(schema, built)
        return built

    def _converted_struct(self, struct: Struct | None, schema: Schema) -> Struct | None:
        if struct is None:
            return None
        converted = struct.schema.field(self._field)
        if converted is None or [f.name for f in struct.schema.fields] != [
                f.name for f in schema.fields]:
            return self._converted_by_name(struct, schema)
        # Same fields in the same order: only the converted one changes.
        values = field_values(struct, self._with_default)
        item = self._convert(values[converted.index], _source_type(converted.schema))
        validate_value(schema.fields[converted.index].schema, item, self._field)
        values[converted.index] = item
        return struct_of_checked_values(schema, values)

    def _converted_by_name(self, struct: Struct, schema: Schema) -> Struct:
        updated = Struct(schema)
        for field in struct.schema.fields:
            item = struct_value(struct, field.name, self._with_default)
            if field.name == self._field:
                item = self._convert(item, _source_type(field.schema))
            updated.put(field.name, item)
        return updated

    # --- conversion ---------------------------------------------------------------------

    def _convert(self, value: Any, source_type: str | None) -> Any:
        if value is None:
            return None
        millis = self._to_millis(value, source_type or _inferred_type(value))
        return self._from_millis(millis)

    def _to_millis(self, value: Any, source_type: str) -> int:
        if source_type == STRING:
            if not isinstance(value, str):
                raise DataError(f"Expected string timestamp to be a String, but found "
                                f"{python_class_name(value)}")
            return self._parse(value)
        if source_type == UNIX:
            if not isinstance(value, int) or isinstance(value, bool):
                raise DataError(f"Expected Unix timestamp to be a Long, but found "
                                f"{python_class_name(value)}")
            if self._precision == SECONDS:
                return value * 1000
            return _truncating_div(value, _UNIX_FACTOR[self._precision])
        return _logical_to_millis(value, source_type)

    def _parse(self, text: str) -> int:
        if self._format is None:
            raise DataError("TimestampConverter requires format option to be specified when "
                            "using string timestamps")
        try:
            return self._format.parse_millis(text)
        except (ValueError, OverflowError):
            raise DataError(f"Could not parse timestamp: value ({text}) does not match pattern "
                            f"({self._format.pattern})") from None

    def _from_millis(self, millis: int) -> Any:
        if self._target == STRING:
            assert self._format is not None  # configure requires a format for string
            return self._format.format_millis(millis)
        if self._target == UNIX:
            if self._precision == SECONDS:
                return _truncating_div(millis, 1000)
            return millis * _UNIX_FACTOR[self._precision]
        moment = _moment(millis)
        if self._target == DATE:
            return moment.date()
        if self._target == TIME:
            return moment.time()
        return moment

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._schemas.clear()


def _moment(millis: int) -> dt.datetime:
    try:
        return from_epoch_millis(millis)
    except OverflowError:
        raise DataError(f"Timestamp value out of range: {millis} ms since the epoch") from None


def _source_type(schema: Schema) -> str:
    names = {Timestamp.LOGICAL_NAME: TIMESTAMP, Date.LOGICAL_NAME: DATE, Time.LOGICAL_NAME: TIME}
    if schema.name in names:
        return names[schema.name]
    if schema.type is Type.STRING:
        return STRING
    if schema.type is Type.INT64:
        return UNIX
    raise DataError(f"Schema {schema!r} does not correspond to a known timestamp type format")


def _inferred_type(value: Any) -> str:
    if isinstance(value, dt.date | dt.time):
        return TIMESTAMP
    if isinstance(value, int) and not isinstance(value, bool):
        return UNIX
    if isinstance(value, str):
        return STRING
    raise DataError(f"TimestampConverter does not support {python_class_name(value)} objects "
                    "as timestamps")


def _logical_to_millis(value: Any, source_type: str) -> int:
    if isinstance(value, dt.datetime):
        return to_epoch_millis(value)
    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days * _MILLIS_PER_DAY
    if isinstance(value, dt.time):
        offset = value.utcoffset()
        millis = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000
        millis += value.microsecond // 1000
        return millis - (offset // dt.timedelta(milliseconds=1) if offset else 0)
    raise DataError(f"Expected {source_type} to be a java.util.Date, but found "
                    f"{python_class_name(value)}")


class TimestampConverterKey(TimestampConverter):
    """``org.apache.kafka.connect.transforms.TimestampConverter$Key``."""

    side = KEY


class TimestampConverterValue(TimestampConverter):
    """``org.apache.kafka.connect.transforms.TimestampConverter$Value``."""
