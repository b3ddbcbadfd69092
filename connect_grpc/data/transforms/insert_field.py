"""InsertField: adds the record's topic, partition, offset, timestamp and/or a static
string as fields of the key or value (Kafka's ``InsertField``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect_grpc.data.logical import Timestamp, timestamp_of_millis
from connect_grpc.data.schema import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Schema,
    SchemaBuilder,
    Type,
)
from connect_grpc.data.transforms._config import (
    REPLACE_NULL_WITH_DEFAULT,
    key,
    parse_config,
    replace_null_with_default_key,
)
from connect_grpc.data.transforms._support import (
    KEY,
    FieldPlan,
    Fixed,
    FromField,
    SchemaCache,
    SideTransformation,
    copy_schema_basics,
    field_values,
    require_map,
    require_sink_record,
    require_struct,
    struct_of_checked_values,
)
from connect_grpc.kernel.configdef import ConfigDef, ConfigType, define_all

TOPIC_FIELD = "topic.field"
PARTITION_FIELD = "partition.field"
OFFSET_FIELD = "offset.field"
TIMESTAMP_FIELD = "timestamp.field"
STATIC_FIELD = "static.field"
STATIC_VALUE = "static.value"
PURPOSE = "field insertion"

_OPTIONALITY_DOC = (
    "Suffix with <code>!</code> to make this a required field, or <code>?</code> to keep it "
    "optional (the default)."
)
OPTIONAL_TIMESTAMP_SCHEMA = Timestamp.builder().optional().build()

CONFIG_DEF = define_all([
    key(TOPIC_FIELD, ConfigType.STRING, "Field name for Kafka topic. " + _OPTIONALITY_DOC,
        default=None),
    key(PARTITION_FIELD, ConfigType.STRING,
        "Field name for Kafka partition. " + _OPTIONALITY_DOC, default=None),
    key(OFFSET_FIELD, ConfigType.STRING,
        "Field name for Kafka offset - only applicable to sink connectors. " + _OPTIONALITY_DOC,
        default=None),
    key(TIMESTAMP_FIELD, ConfigType.STRING,
        "Field name for record timestamp. " + _OPTIONALITY_DOC, default=None),
    key(STATIC_FIELD, ConfigType.STRING,
        "Field name for static data field. " + _OPTIONALITY_DOC, default=None),
    key(STATIC_VALUE, ConfigType.STRING, "Static field value, if field name configured.",
        default=None),
    replace_null_with_default_key(),
])


@dataclass(frozen=True, slots=True)
class InsertionSpec:
    """A field to insert: ``name!`` is required, ``name?`` or ``name`` optional."""

    name: str
    optional: bool

    @staticmethod
    def parse(spec: str | None) -> InsertionSpec | None:
        if spec is None:
            return None
        if spec.endswith("?"):
            return InsertionSpec(spec[:-1], True)
        if spec.endswith("!"):
            return InsertionSpec(spec[:-1], False)
        return InsertionSpec(spec, True)

    def __str__(self) -> str:
        return f"InsertionSpec{{name={self.name}, optional={str(self.optional).lower()}}}"


class InsertField(SideTransformation):
    """A null passes unchanged. Schemaless: adds topic (str), partition (int, if known),
    offset (int, sink records only), timestamp (epoch ms, if known) and the static string.
    With a schema: appends STRING, INT32, INT64, Timestamp and STRING fields in that order
    (optional unless suffixed ``!``); the timestamp is a UTC datetime."""

    def __init__(self) -> None:
        self._schemas: SchemaCache[Schema, Schema] = SchemaCache()

    def configure(self, configs: Mapping[str, str]) -> None:
        config = parse_config(CONFIG_DEF, configs)
        self._topic = InsertionSpec.parse(config[TOPIC_FIELD])
        self._partition = InsertionSpec.parse(config[PARTITION_FIELD])
        self._offset = InsertionSpec.parse(config[OFFSET_FIELD])
        self._timestamp = InsertionSpec.parse(config[TIMESTAMP_FIELD])
        self._static = InsertionSpec.parse(config[STATIC_FIELD])
        self._static_value: str | None = config[STATIC_VALUE]
        self._with_default: bool = config[REPLACE_NULL_WITH_DEFAULT]
        if not any((self._topic, self._partition, self._offset, self._timestamp, self._static)):
            raise ValueError("No field insertion configured")
        if self._static is not None and self._static_value is None:
            raise ValueError(f"Invalid value null for configuration {STATIC_VALUE}: No value "
                             f"specified for static field: {self._static}")
        #: What every record gets when the static field is the only insertion.
        self._static_only: tuple[str | None, ...] | None = (
            (self._static_value,)
            if not any((self._topic, self._partition, self._offset, self._timestamp))
            else None
        )
        self._schemas.clear()

    def apply_side(self, record: Any, schema: Schema | None, value: Any) -> tuple[Any, Any]:
        if value is None:
            return schema, value
        if schema is None:
            updated = dict(require_map(value, PURPOSE))
            for name, item in self._insertions(record, as_datetime=False):
                if item is not None:
                    updated[name] = item
            return None, updated
        struct = require_struct(value, PURPOSE)
        updated_schema = self._updated_schema(struct.schema)
        values = field_values(struct, self._with_default)
        copied = len(values)
        # The inserted fields follow the copied ones, in the order _insertions gives them;
        # a partition or timestamp the record lacks stays null, as Kafka leaves it unset.
        if self._static_only is not None:
            values.extend(self._static_only)
        else:
            values.extend([item for _, item in self._insertions(record, as_datetime=True)])
        return updated_schema, struct_of_checked_values(updated_schema, values, copied)

    def compile_plan(self, schema: Schema) -> tuple[Schema, FieldPlan] | None:
        if schema.type is not Type.STRUCT or self._static_only is None:
            return None
        copied = tuple(FromField(field.index) for field in schema.fields)
        return self._updated_schema(schema), copied + tuple(map(Fixed, self._static_only))

    def _insertions(self, record: Any, *, as_datetime: bool) -> list[tuple[str, Any]]:
        """(field name, value) of each configured insertion, in schema order (None where
        the record has no partition or timestamp)."""
        inserted: list[tuple[str, Any]] = []
        if self._topic is not None:
            inserted.append((self._topic.name, record.topic))
        if self._partition is not None:
            inserted.append((self._partition.name, record.kafka_partition))
        if self._offset is not None:
            require_sink_record(record, PURPOSE)
            inserted.append((self._offset.name, record.kafka_offset))
        if self._timestamp is not None:
            timestamp = record.timestamp_ms
            if timestamp is not None and as_datetime:
                timestamp = timestamp_of_millis(timestamp)
            inserted.append((self._timestamp.name, timestamp))
        if self._static is not None:
            inserted.append((self._static.name, self._static_value))
        return inserted

    def _updated_schema(self, schema: Schema) -> Schema:
        cached = self._schemas.get(schema)
        if cached is not None:
            return cached
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            builder.field(field.name, field.schema)
        for spec, optional_schema, required_schema in (
            (self._topic, OPTIONAL_STRING_SCHEMA, STRING_SCHEMA),
            (self._partition, OPTIONAL_INT32_SCHEMA, INT32_SCHEMA),
            (self._offset, OPTIONAL_INT64_SCHEMA, INT64_SCHEMA),
            (self._timestamp, OPTIONAL_TIMESTAMP_SCHEMA, Timestamp.SCHEMA),
            (self._static, OPTIONAL_STRING_SCHEMA, STRING_SCHEMA),
        ):
            if spec is not None:
                builder.field(spec.name, optional_schema if spec.optional else required_schema)
        built = builder.build()
        self._schemas.put(schema, built)
        return built

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def close(self) -> None:
        self._schemas.clear()


class InsertFieldKey(InsertField):
    """``org.apache.kafka.connect.transforms.InsertField$Key``."""

    side = KEY


class InsertFieldValue(InsertField):
    """``org.apache.kafka.connect.transforms.InsertField$Value``."""
