"""HoistField, ExtractField, ValueToKey, ReplaceField and SetSchemaMetadata, schemaless
and with a schema, with the reference's and Kafka's own test examples."""

from __future__ import annotations

import pytest

from connect_grpc.data.errors import DataError
from connect_grpc.data.schema import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    STRING_SCHEMA,
    SchemaBuilder,
    Type,
)
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms.extract_field import ExtractFieldKey, ExtractFieldValue
from connect_grpc.data.transforms.hoist_field import HoistFieldKey, HoistFieldValue
from connect_grpc.data.transforms.replace_field import ReplaceFieldKey, ReplaceFieldValue
from connect_grpc.data.transforms.set_schema_metadata import (
    SetSchemaMetadataKey,
    SetSchemaMetadataValue,
)
from connect_grpc.data.transforms.value_to_key import ValueToKey

from ._smt_records import configured, sink, source

ID_SCHEMA = SchemaBuilder.struct().name("row").field("id", INT32_SCHEMA).field(
    "x", INT64_SCHEMA).build()


def row(id_: int = 7, x: int = 1) -> Struct:
    return Struct(ID_SCHEMA).put("id", id_).put("x", x)


# --- HoistField -------------------------------------------------------------------------


def test_hoist_field_schemaless_reference_example() -> None:
    record = sink("hello")
    hoisted = configured(HoistFieldValue, field="line").apply(record)
    assert hoisted.value == {"line": "hello"}
    assert hoisted.value_schema is None
    assert (hoisted.topic, hoisted.kafka_offset, hoisted.key) == ("orders", 42, None)


def test_hoist_field_schemaless_wraps_null_too() -> None:
    assert configured(HoistFieldKey, field="k").apply(sink("v", key=None)).key == {"k": None}


def test_hoist_field_with_schema_builds_a_single_field_struct() -> None:
    smt = configured(HoistFieldKey, field="magic")
    hoisted = smt.apply(sink("v", key=42, key_schema=INT32_SCHEMA))
    assert hoisted.key_schema == SchemaBuilder.struct().field("magic", INT32_SCHEMA).build()
    assert hoisted.key == Struct(hoisted.key_schema).put("magic", 42)
    assert hoisted.value == "v"
    # the updated schema is cached per input schema
    assert smt.apply(sink("v", key=1, key_schema=INT32_SCHEMA)).key_schema is hoisted.key_schema


def test_hoist_field_with_schema_refuses_null_for_a_required_schema() -> None:
    with pytest.raises(DataError, match="null used for required field"):
        configured(HoistFieldValue, field="f").apply(sink(None, INT32_SCHEMA))


def test_hoist_field_requires_field() -> None:
    with pytest.raises(ValueError, match='Missing required configuration "field"'):
        configured(HoistFieldValue)


# --- ExtractField -----------------------------------------------------------------------


def test_extract_field_schemaless_reference_example() -> None:
    smt = configured(ExtractFieldValue, field="id")
    assert smt.apply(sink({"id": 7, "x": 1})).value == 7
    assert smt.apply(sink({"x": 1})).value is None
    assert smt.apply(sink(None)).value is None


def test_extract_field_with_schema() -> None:
    smt = configured(ExtractFieldKey, field="id")
    extracted = smt.apply(sink("v", key=row(), key_schema=ID_SCHEMA))
    assert (extracted.key_schema, extracted.key) == (INT32_SCHEMA, 7)


def test_extract_field_null_struct_gives_null_with_the_field_schema() -> None:
    extracted = configured(ExtractFieldValue, field="id").apply(sink(None, ID_SCHEMA))
    assert (extracted.value_schema, extracted.value) == (INT32_SCHEMA, None)


def test_extract_field_unknown_field_in_schema() -> None:
    with pytest.raises(ValueError, match=r"^Unknown field: nope$"):
        configured(ExtractFieldValue, field="nope").apply(sink(row(), ID_SCHEMA))


def test_extract_field_bad_input() -> None:
    with pytest.raises(DataError, match=r"^Only Map objects supported in absence of schema for "
                                        r"\[field extraction\], found: str$"):
        configured(ExtractFieldValue, field="id").apply(sink("text"))
    with pytest.raises(DataError, match=r"^Only Struct objects supported for \[field "
                                        r"extraction\], found: dict$"):
        configured(ExtractFieldValue, field="id").apply(sink({"id": 1}, ID_SCHEMA))


def test_extract_field_replace_null_with_default() -> None:
    schema = SchemaBuilder.struct().field(
        "n", SchemaBuilder.int64().optional().default_value(9).build()).build()
    value = Struct(schema)
    assert configured(ExtractFieldValue, field="n").apply(sink(value, schema)).value == 9
    without = configured(ExtractFieldValue, field="n", replace_null_with_default="false")
    assert without.apply(sink(value, schema)).value is None


def test_extract_field_v2_nested_paths() -> None:
    smt = configured(ExtractFieldValue, **{"field": "a.`b.c`.d", "field.syntax.version": "v2"})
    assert smt.apply(sink({"a": {"b.c": {"d": 5}}})).value == 5
    assert smt.apply(sink({"a": None})).value is None
    inner = SchemaBuilder.struct().field("d", INT64_SCHEMA).build()
    middle = SchemaBuilder.struct().field("b.c", inner).build()
    outer = SchemaBuilder.struct().field("a", middle).build()
    value = Struct(outer).put("a", Struct(middle).put("b.c", Struct(inner).put("d", 6)))
    extracted = smt.apply(sink(value, outer))
    assert (extracted.value_schema, extracted.value) == (INT64_SCHEMA, 6)


def test_extract_field_v1_takes_dots_literally() -> None:
    smt = configured(ExtractFieldValue, field="a.b")
    assert smt.apply(sink({"a.b": 1, "a": {"b": 2}})).value == 1


def test_extract_field_config_errors() -> None:
    errors = ExtractFieldValue().config_def().validate({"field": "x", "field.syntax.version": "V3"})
    assert errors["field.syntax.version"] == [
        "Invalid value V3 for configuration field.syntax.version: String must be one of "
        "(case insensitive): V1, V2"]
    with pytest.raises(ValueError, match=r"^Incomplete backtick pair in path: \[`a\.b\], "
                                         "consider adding a backslash before backtick at "
                                         "position 0 to escape it$"):
        configured(ExtractFieldValue, **{"field": "`a.b", "field.syntax.version": "V2"})


# --- ValueToKey -------------------------------------------------------------------------


def test_value_to_key_schemaless_reference_example() -> None:
    moved = configured(ValueToKey, fields="id").apply(sink({"id": 7, "x": 1}, key="old"))
    assert (moved.key_schema, moved.key, moved.value) == (None, {"id": 7}, {"id": 7, "x": 1})


def test_value_to_key_with_schema() -> None:
    moved = configured(ValueToKey, fields="x,id").apply(sink(row(), ID_SCHEMA))
    expected_schema = SchemaBuilder.struct().field("x", INT64_SCHEMA).field(
        "id", INT32_SCHEMA).build()
    assert moved.key_schema == expected_schema
    assert moved.key == Struct(expected_schema).put("x", 1).put("id", 7)


def test_value_to_key_errors() -> None:
    with pytest.raises(DataError, match=r"^Field does not exist: nope$"):
        configured(ValueToKey, fields="nope").apply(sink(row(), ID_SCHEMA))
    with pytest.raises(DataError, match=r"^Only Map objects supported in absence of schema for "
                                        r"\[copying fields from value to key\], found: null$"):
        configured(ValueToKey, fields="id").apply(sink(None))
    assert ValueToKey().config_def().validate({"fields": ""})["fields"] == [
        "Invalid value [] for configuration fields: Empty list"]


# --- ReplaceField -----------------------------------------------------------------------


def test_replace_field_schemaless_reference_example() -> None:
    smt = configured(ReplaceFieldValue, exclude="pw", renames="id:user_id")
    assert smt.apply(sink({"id": 1, "pw": "x"})).value == {"user_id": 1}


def test_replace_field_include_exclude_rename_as_kafka_tests() -> None:
    smt = configured(ReplaceFieldValue, exclude="dont", include="abc,foo",
                     renames="abc:xyz,foo:bar")
    value = {"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"}
    assert smt.apply(sink(value)).value == {"xyz": 42, "bar": True}


def test_replace_field_with_schema_keeps_schema_basics() -> None:
    schema = (SchemaBuilder.struct().name("n").version(2).doc("d")
              .field("dont", STRING_SCHEMA).field("abc", INT32_SCHEMA)
              .field("etc", STRING_SCHEMA).build())
    value = Struct(schema).put("dont", "w").put("abc", 42).put("etc", "e")
    replaced = configured(ReplaceFieldKey, exclude="dont", renames="abc:xyz").apply(
        sink("v", key=value, key_schema=schema))
    assert [f.name for f in replaced.key_schema.fields] == ["xyz", "etc"]
    assert (replaced.key_schema.name, replaced.key_schema.version, replaced.key_schema.doc) == (
        "n", 2, "d")
    assert replaced.key == Struct(replaced.key_schema).put("xyz", 42).put("etc", "e")


def test_replace_field_null_passes() -> None:
    record = sink(None, ID_SCHEMA)
    assert configured(ReplaceFieldValue, exclude="x").apply(record) is record


def test_replace_field_bad_renames() -> None:
    errors = ReplaceFieldValue().config_def().validate({"renames": "a:b,c:d:e"})
    assert errors["renames"] == [
        "Invalid value [a:b, c:d:e] for configuration renames: Invalid rename mapping: c:d:e"]
    with pytest.raises(ValueError, match="Invalid rename mapping: x"):
        configured(ReplaceFieldValue, renames="x")


def test_replace_field_bad_input() -> None:
    with pytest.raises(DataError, match=r"\[field replacement\], found: list"):
        configured(ReplaceFieldValue, exclude="x").apply(sink([1]))


# --- SetSchemaMetadata ------------------------------------------------------------------


def test_set_schema_metadata_name_and_version() -> None:
    smt = configured(SetSchemaMetadataValue, schema_name="foo", schema_version="42")
    updated = smt.apply(sink(row(), ID_SCHEMA))
    assert (updated.value_schema.name, updated.value_schema.version) == ("foo", 42)
    assert updated.value.schema is updated.value_schema
    assert (updated.value.get("id"), updated.value.get("x")) == (7, 1)


def test_set_schema_metadata_keeps_everything_else() -> None:
    schema = SchemaBuilder.map(STRING_SCHEMA, OPTIONAL_INT64_SCHEMA).optional().doc("d").parameter(
        "p", "v").version(1).build()
    updated = configured(SetSchemaMetadataKey, schema_name="m").apply(
        sink("v", key={"a": 1}, key_schema=schema))
    new = updated.key_schema
    assert (new.type, new.optional, new.doc, new.parameters, new.version, new.name) == (
        Type.MAP, True, "d", {"p": "v"}, 1, "m")
    assert (new.key_schema, new.value_schema) == (STRING_SCHEMA, OPTIONAL_INT64_SCHEMA)
    assert updated.key == {"a": 1}


def test_set_schema_metadata_null_without_schema_passes_and_value_without_schema_fails() -> None:
    smt = configured(SetSchemaMetadataValue, schema_version="3")
    record = source(None)
    assert smt.apply(record) is record
    with pytest.raises(DataError, match=r"^Schema required for \[updating schema metadata\]$"):
        smt.apply(source({"a": 1}))


def test_set_schema_metadata_needs_name_or_version() -> None:
    with pytest.raises(ValueError, match=r"^Neither schema name nor version configured$"):
        configured(SetSchemaMetadataValue)
    errors = SetSchemaMetadataValue().config_def().validate({"schema.version": "x"})
    assert errors["schema.version"] == [
        "Invalid value x for configuration schema.version: Not a number of type INT"]


# --- the schema cache -------------------------------------------------------------------


def test_schema_cache_keeps_the_16_most_recently_used() -> None:
    from connect_grpc.data.transforms._support import SchemaCache

    cache: SchemaCache[int, str] = SchemaCache()
    for number in range(16):
        cache.put(number, str(number))
    assert cache.get(0) == "0"  # now the most recent
    cache.put(16, "16")
    assert (cache.get(1), cache.get(0), cache.get(16), len(cache)) == (None, "0", "16", 16)
    cache.clear()
    assert len(cache) == 0


def test_copied_struct_values_still_refuse_a_null_in_a_required_field() -> None:
    from connect_grpc.data.transforms.insert_field import InsertFieldValue
    from connect_grpc.data.transforms.mask_field import MaskFieldValue

    schema = SchemaBuilder.struct().field("a", STRING_SCHEMA).field("b", INT32_SCHEMA).build()
    unset = Struct(schema).put("b", 1)  # "a" never put
    message = r'^Invalid value: null used for required field: "a", schema type: STRING$'
    for smt in (configured(ReplaceFieldValue, exclude="b"),
                configured(InsertFieldValue, topic_field="t"),
                configured(MaskFieldValue, fields="b")):
        with pytest.raises(DataError, match=message):
            smt.apply(sink(unset, schema))


def test_copied_struct_values_take_the_default_of_a_null_field() -> None:
    schema = SchemaBuilder.struct().field(
        "a", SchemaBuilder.string().default_value("dflt").build()).build()
    replaced = configured(ReplaceFieldValue, renames="a:b").apply(sink(Struct(schema), schema))
    assert replaced.value.get_without_default("b") == "dflt"


@pytest.mark.parametrize(("replace_null_with_default", "expected"), [("true", 5), ("false", None)])
def test_set_schema_metadata_struct_with_null_field(replace_null_with_default: str,
                                                    expected: object) -> None:
    schema = SchemaBuilder.struct().field(
        "n", SchemaBuilder.int32().optional().default_value(5).build()).build()
    smt = configured(SetSchemaMetadataValue, schema_name="x",
                     replace_null_with_default=replace_null_with_default)
    updated = smt.apply(sink(Struct(schema).put("n", None), schema))
    assert updated.value.schema.name == "x"
    assert updated.value.get_without_default("n") == expected
