"""InsertField and Flatten, schemaless and with a schema."""

from __future__ import annotations

import datetime as dt

import pytest

from connect_grpc.data.errors import DataError
from connect_grpc.data.logical import Timestamp
from connect_grpc.data.schema import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    SchemaBuilder,
)
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms.flatten import FlattenKey, FlattenValue
from connect_grpc.data.transforms.insert_field import InsertFieldKey, InsertFieldValue

from ._smt_records import configured, sink, source

ALL_FIELDS = {"topic_field": "topic_field!", "partition_field": "partition_field",
              "offset_field": "offset_field!", "timestamp_field": "timestamp_field?",
              "static_field": "instance_id", "static_value": "my-instance-id"}


def insert_all(cls: type = InsertFieldValue) -> InsertFieldValue:
    smt = cls()
    smt.configure({name.replace("_", ".", 1) if name.endswith("_field") or name == "static_value"
                   else name: value for name, value in ALL_FIELDS.items()})
    return smt


# --- InsertField ------------------------------------------------------------------------


def test_insert_field_schemaless_reference_example() -> None:
    assert configured(InsertFieldValue, topic_field="_t").apply(sink({"a": 1})).value == {
        "a": 1, "_t": "orders"}


def test_insert_field_schemaless_all_fields_as_kafka_test() -> None:
    inserted = insert_all().apply(sink({"magic": 42}))
    assert inserted.value == {"magic": 42, "topic_field": "orders", "partition_field": 2,
                              "offset_field": 42, "timestamp_field": 1_000,
                              "instance_id": "my-instance-id"}


def test_insert_field_with_schema_appends_typed_fields() -> None:
    schema = SchemaBuilder.struct().name("name").version(1).doc("doc").field(
        "magic", OPTIONAL_INT64_SCHEMA).build()
    inserted = insert_all().apply(sink(Struct(schema).put("magic", 42), schema))
    new = inserted.value_schema
    assert (new.name, new.version, new.doc) == ("name", 1, "doc")
    assert [(f.name, f.schema) for f in new.fields] == [
        ("magic", OPTIONAL_INT64_SCHEMA),
        ("topic_field", STRING_SCHEMA),
        ("partition_field", OPTIONAL_INT32_SCHEMA),
        ("offset_field", INT64_SCHEMA),
        ("timestamp_field", Timestamp.builder().optional().build()),
        ("instance_id", OPTIONAL_STRING_SCHEMA),
    ]
    value = inserted.value
    assert (value.get("magic"), value.get("topic_field"), value.get("partition_field"),
            value.get("offset_field"), value.get("instance_id")) == (
        42, "orders", 2, 42, "my-instance-id")
    assert value.get("timestamp_field") == dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC)


def test_insert_field_null_passes() -> None:
    record = sink(None)
    assert insert_all().apply(record) is record


def test_insert_field_offset_needs_a_sink_record() -> None:
    with pytest.raises(DataError, match=r"^Only SinkRecord supported for \[field insertion\], "
                                        "found: SourceRecord$"):
        insert_all().apply(source({"a": 1}))


def test_insert_field_on_the_key_of_a_source_record() -> None:
    inserted = configured(InsertFieldKey, topic_field="t", partition_field="p").apply(
        source("v", key={"k": 1}))
    assert inserted.key == {"k": 1, "t": "orders", "p": 1}
    assert (inserted.source_partition, inserted.source_offset) == ({"file": "f"}, {"position": 7})


def test_insert_field_config_errors() -> None:
    with pytest.raises(ValueError, match=r"^No field insertion configured$"):
        configured(InsertFieldValue)
    with pytest.raises(ValueError, match=r"^Invalid value null for configuration static.value: "
                                         r"No value specified for static field: "
                                         r"InsertionSpec{name=s, optional=true}$"):
        configured(InsertFieldValue, static_field="s")


def test_insert_field_bad_input() -> None:
    with pytest.raises(DataError, match=r"^Only Struct objects supported for \[field insertion\]"):
        configured(InsertFieldValue, topic_field="t").apply(sink("x", STRING_SCHEMA))


# --- Flatten ----------------------------------------------------------------------------


def test_flatten_schemaless_reference_example() -> None:
    flat = configured(FlattenValue).apply(sink({"a": {"b": 1, "c": {"d": 2}}, "e": [1]}))
    assert flat.value == {"a.b": 1, "a.c.d": 2, "e": [1]}


def test_flatten_schemaless_keeps_primitives_nulls_and_uses_the_delimiter() -> None:
    value = {"A": {"B": {"int8": 8, "bool": True, "string": "s", "bytes": b"b", "null": None}}}
    assert configured(FlattenKey, delimiter="#").apply(sink("v", key=value)).key == {
        "A#B#int8": 8, "A#B#bool": True, "A#B#string": "s", "A#B#bytes": b"b", "A#B#null": None}


def test_flatten_null_passes() -> None:
    record = sink(None)
    assert configured(FlattenValue).apply(record) is record


def test_flatten_with_schema_nested_structs() -> None:
    primitives = (SchemaBuilder.struct().field("int8", INT8_SCHEMA).field("int16", INT16_SCHEMA)
                  .field("int32", INT32_SCHEMA).field("int64", INT64_SCHEMA)
                  .field("float32", FLOAT32_SCHEMA).field("float64", FLOAT64_SCHEMA)
                  .field("boolean", BOOLEAN_SCHEMA).field("string", STRING_SCHEMA)
                  .field("bytes", BYTES_SCHEMA).build())
    middle = SchemaBuilder.struct().field("B", primitives).build()
    outer = SchemaBuilder.struct().field("A", middle).build()
    inner = (Struct(primitives).put("int8", 8).put("int16", 16).put("int32", 32).put("int64", 64)
             .put("float32", 32.0).put("float64", 64.0).put("boolean", True).put("string", "s")
             .put("bytes", b"b"))
    value = Struct(outer).put("A", Struct(middle).put("B", inner))
    flat = configured(FlattenValue).apply(sink(value, outer))
    assert [f.name for f in flat.value_schema.fields] == [
        "A.B.int8", "A.B.int16", "A.B.int32", "A.B.int64", "A.B.float32", "A.B.float64",
        "A.B.boolean", "A.B.string", "A.B.bytes"]
    assert flat.value_schema.field("A.B.int16").schema == INT16_SCHEMA
    assert flat.value.get("A.B.int64") == 64
    assert flat.value.get("A.B.bytes") == b"b"


def test_flatten_with_schema_optionality_and_defaults_come_from_ancestors() -> None:
    inner = SchemaBuilder.struct().field("x", INT32_SCHEMA).optional().build()
    inner_default = Struct(inner).put("x", 5)
    defaulted_inner = (SchemaBuilder.struct().field("x", INT32_SCHEMA).optional()
                       .default_value(inner_default).build())
    outer = SchemaBuilder.struct().field("in", defaulted_inner).field(
        "n", SchemaBuilder.int64().default_value(3).build()).build()
    flat = configured(FlattenValue).apply(sink(Struct(outer).put("n", 4), outer))
    field = flat.value_schema.field("in.x")
    assert (field.schema.optional, field.schema.default) == (True, 5)
    assert flat.value_schema.field("n").schema.default == 3
    # the null nested struct reads as its default (Struct.get), so its field is filled
    assert (flat.value.get_without_default("in.x"), flat.value.get("n")) == (5, 4)


def test_flatten_null_struct_with_schema_keeps_the_flat_schema() -> None:
    inner = SchemaBuilder.struct().field("x", INT32_SCHEMA).build()
    outer = SchemaBuilder.struct().field("in", inner).optional().build()
    smt = configured(FlattenValue)
    flat = smt.apply(sink(Struct(outer).put("in", Struct(inner).put("x", 1)), outer))
    assert flat.value.get("in.x") == 1
    assert flat.value_schema.field("in.x").schema == OPTIONAL_INT32_SCHEMA


def test_flatten_refuses_a_map_with_schema() -> None:
    schema = SchemaBuilder.struct().field(
        "m", SchemaBuilder.map(STRING_SCHEMA, INT32_SCHEMA).build()).build()
    with pytest.raises(DataError, match=r"^Flatten transformation does not support MAP for "
                                        r"record with schemas \(for field m\)\.$"):
        configured(FlattenValue).apply(sink(Struct(schema).put("m", {"a": 1}), schema))


def test_flatten_schemaless_refuses_what_connect_cannot_hold() -> None:
    with pytest.raises(DataError, match=r"^Flatten transformation was passed a value of type "
                                        r"class object which is not supported"):
        configured(FlattenValue).apply(sink({"a": object()}))
    with pytest.raises(DataError, match=r"^Only Map objects supported in absence of schema for "
                                        r"\[flattening\], found: str$"):
        configured(FlattenValue).apply(sink("text"))


def test_flatten_null_optional_nested_struct_gives_null_fields() -> None:
    inner = SchemaBuilder.struct().optional().field("opt_int32", OPTIONAL_INT32_SCHEMA).build()
    outer = SchemaBuilder.struct().field("B", inner).build()
    flat = configured(FlattenValue).apply(sink(Struct(outer).put("B", None), outer))
    assert flat.value.get("B.opt_int32") is None
    assert flat.value_schema.field("B.opt_int32").schema == OPTIONAL_INT32_SCHEMA


def test_flatten_null_value_with_schema_passes_unchanged() -> None:
    schema = SchemaBuilder.struct().optional().field("a", OPTIONAL_INT32_SCHEMA).build()
    record = sink(None, schema)
    assert configured(FlattenValue).apply(record) is record
