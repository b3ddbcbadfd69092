"""Cast, schemaless and with a schema (the reference's and Kafka's CastTest examples)."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest

from connect_grpc.data.errors import DataError
from connect_grpc.data.logical import Date, Decimal, Time, Timestamp
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
    STRING_SCHEMA,
    SchemaBuilder,
    Type,
)
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms.cast import CastKey, CastValue

from ._smt_records import sink


def cast(spec: str, cls: type = CastValue, **extra: str) -> Any:
    smt = cls()
    smt.configure({"spec": spec, **{k.replace("_", "."): v for k, v in extra.items()}})
    return smt


def test_reference_examples() -> None:
    assert cast("age:int32").apply(sink({"age": "42", "n": "x"})).value == {"age": 42, "n": "x"}
    converted = cast("string").apply(sink(5, INT64_SCHEMA))
    assert (converted.value_schema, converted.value) == (STRING_SCHEMA, "5")


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [
        ("int8", 42, 42), ("int8", 300, 44), ("int16", 70_000, 4464), ("int32", 2**31, -(2**31)),
        ("int64", 42.9, 42), ("int8", 1e10, -1), ("int32", -1e20, -(2**31)),
        ("int32", float("nan"), 0), ("int32", True, 1), ("int64", False, 0),
        ("int32", "42", 42), ("int16", "-7", -7),
        ("float32", 42, 42.0), ("float64", "4.2", 4.2), ("float32", True, 1.0),
        ("boolean", 42, True), ("boolean", 0, False), ("boolean", 0.5, False),
        ("boolean", "TRUE", True), ("boolean", "yes", False),
        ("string", 42, "42"), ("string", True, "true"), ("string", 1e20, "1.0E20"),
        ("string", 42.0, "42.0"), ("string", b"\x00\x01", "AAE="),
    ],
)
def test_schemaless_whole_value_casts(spec: str, value: object, expected: object) -> None:
    converted = cast(spec, CastKey).apply(sink("v", key=value))
    assert converted.key == expected
    assert type(converted.key) is type(expected)
    assert converted.key_schema is None


def test_float32_rounds() -> None:
    assert cast("float32").apply(sink(1.1)).value == pytest.approx(1.1, rel=1e-7)
    assert cast("float32").apply(sink(1.1)).value != 1.1
    assert cast("float32").apply(sink(1e39)).value == float("inf")


@pytest.mark.parametrize(("spec", "value"), [("int8", "128"), ("int32", "4.2"), ("int32", " 1"),
                                             ("float64", "abc")])
def test_strings_that_do_not_parse(spec: str, value: str) -> None:
    with pytest.raises(DataError, match=rf"^Value \({value}\) was out of range for requested "
                                        r"data type$"):
        cast(spec).apply(sink(value))


def test_schemaless_fields_missing_ones_are_put_as_null() -> None:
    converted = cast("a:int8,b:string,missing:int32").apply(sink({"a": 300, "b": 2.5, "c": 1}))
    assert converted.value == {"a": 44, "b": "2.5", "c": 1, "missing": None}


def test_null_passes() -> None:
    record = sink(None)
    assert cast("int8").apply(record) is record


@pytest.mark.parametrize(
    ("schema", "value", "spec", "expected_schema", "expected"),
    [
        (INT64_SCHEMA, 5, "string", STRING_SCHEMA, "5"),
        (FLOAT32_SCHEMA, 1.100000023841858, "string", STRING_SCHEMA, "1.1"),
        (STRING_SCHEMA, "42", "int16", INT16_SCHEMA, 42),
        (BOOLEAN_SCHEMA, True, "int8", INT8_SCHEMA, 1),
        (BYTES_SCHEMA, b"hi", "string", STRING_SCHEMA, "aGk="),
        (Decimal.schema(2), decimal.Decimal("12.34"), "float64", FLOAT64_SCHEMA, 12.34),
        (Decimal.schema(2), decimal.Decimal("300.99"), "int8", INT8_SCHEMA, 44),
        (Timestamp.SCHEMA, dt.datetime(1970, 1, 2, tzinfo=dt.UTC), "int64", None, 86_400_000),
        (Date.SCHEMA, dt.date(1970, 1, 3), "int32", None, 2),
        (Time.SCHEMA, dt.time(0, 0, 1), "string", STRING_SCHEMA, "00:00:01.000Z"),
        (Timestamp.SCHEMA, dt.datetime(2001, 2, 3, 4, 5, 6, 7000, tzinfo=dt.UTC), "string",
         STRING_SCHEMA, "2001-02-03T04:05:06.007Z"),
        (Date.SCHEMA, dt.date(2001, 2, 3), "string", STRING_SCHEMA, "2001-02-03"),
    ],
)
def test_whole_value_with_schema(schema: Any, value: object, spec: str, expected_schema: Any,
                                 expected: object) -> None:
    converted = cast(spec).apply(sink(value, schema))
    assert converted.value == expected
    if expected_schema is not None:
        assert converted.value_schema.type == expected_schema.type
        assert converted.value_schema.optional == expected_schema.optional


def test_whole_value_keeps_name_version_optional_and_casts_the_default() -> None:
    schema = SchemaBuilder.int64().name("n").version(3).optional().default_value(7).build()
    converted = cast("string").apply(sink(5, schema))
    new = converted.value_schema
    assert (new.type, new.name, new.version, new.optional, new.default) == (
        Type.STRING, "n", 3, True, "7")


def test_struct_fields_with_schema() -> None:
    schema = (SchemaBuilder.struct().name("r")
              .field("int8", SchemaBuilder.int8().optional().default_value(5).build())
              .field("string", STRING_SCHEMA).field("bigint", INT64_SCHEMA)
              .field("optional", OPTIONAL_INT32_SCHEMA).field("kept", STRING_SCHEMA).build())
    value = (Struct(schema).put("int8", 8).put("string", "42").put("bigint", 2**40)
             .put("kept", "k"))
    converted = cast("int8:string,string:int32,bigint:int16,optional:float32").apply(
        sink(value, schema))
    new = converted.value_schema
    assert new.name == "r"
    assert [(f.name, f.schema.type, f.schema.optional) for f in new.fields] == [
        ("int8", Type.STRING, True), ("string", Type.INT32, False),
        ("bigint", Type.INT16, False), ("optional", Type.FLOAT32, True),
        ("kept", Type.STRING, False)]
    assert new.field("int8").schema.default == "5"
    result = converted.value
    assert (result.get("int8"), result.get("string"), result.get("bigint"),
            result.get("optional"), result.get("kept")) == ("8", 42, 0, None, "k")


def test_struct_input_needs_a_struct() -> None:
    with pytest.raises(DataError, match=r"^Only Struct objects supported for \[cast types\], "
                                        r"found: dict$"):
        cast("a:int8").apply(sink({"a": 1}, SchemaBuilder.struct().field(
            "a", INT32_SCHEMA).build()))


def test_unsupported_inputs() -> None:
    with pytest.raises(DataError, match=r"^Cast transformation does not support casting from "
                                        r"ARRAY; supported types are \[INT8, INT16, INT32, "
                                        r"INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES\]$"):
        cast("int8").apply(sink([1]))
    with pytest.raises(DataError, match=r"^Cast transformation was passed a value of type "
                                        r"class decimal.Decimal which is not supported"):
        cast("int8").apply(sink(decimal.Decimal(1)))
    with pytest.raises(DataError, match="does not support casting from MAP"):
        cast("string").apply(sink({"a": 1}, SchemaBuilder.map(STRING_SCHEMA,
                                                              INT32_SCHEMA).build()))
    with pytest.raises(DataError, match=r"^Only Map objects supported in absence of schema for "
                                        r"\[cast types\], found: int$"):
        cast("a:int8").apply(sink(5))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "Must specify at least one field to cast."),
        ("a:int8:x", "Invalid value [a:int8:x] for configuration renames: Invalid rename "
                     "mapping: a:int8:x"),
        ("a:int9", "Invalid type found in casting spec: int9"),
        ("bytes", "Cast transformation does not support casting to BYTES; supported types are "
                  "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]"),
        ("int8,a:int16", "Cast transformations that specify a type to cast the entire value to "
                         "may only specify a single cast in their spec"),
    ],
)
def test_spec_errors(spec: str, message: str) -> None:
    assert CastValue().config_def().validate({"spec": spec})["spec"] == [message]
    with pytest.raises(ValueError, match=r"^" + __import__("re").escape(message) + "$"):
        cast(spec)


def test_spec_types_are_case_insensitive() -> None:
    assert cast("a:INT8, b : Boolean").apply(sink({"a": "1", "b": 1})).value == {
        "a": 1, "b": True}


@pytest.mark.parametrize(("replace_null_with_default", "expected"), [("true", "10"),
                                                                     ("false", None)])
def test_null_field_with_default(replace_null_with_default: str, expected: object) -> None:
    schema = SchemaBuilder.struct().field(
        "magic", SchemaBuilder.int32().optional().default_value(10).build()).build()
    smt = cast("magic:string", replace_null_with_default=replace_null_with_default)
    converted = smt.apply(sink(Struct(schema).put("magic", None), schema))
    assert converted.value_schema.field("magic").schema.type is Type.STRING
    assert converted.value.get_without_default("magic") == expected


def test_whole_value_default_is_cast_as_kafka_test() -> None:
    schema = SchemaBuilder.float32().default_value(-42.125).build()
    converted = cast("int32").apply(sink(42.125, schema))
    assert (converted.value_schema.type, converted.value, converted.value_schema.default) == (
        Type.INT32, 42, -42)


def test_struct_whose_schema_is_an_equal_copy_is_cast_by_field_name() -> None:
    def build() -> Any:
        return SchemaBuilder.struct().field("a", STRING_SCHEMA).field("b", INT32_SCHEMA).build()

    record_schema, struct_schema = build(), build()
    assert record_schema is not struct_schema
    value = Struct(struct_schema).put("a", "7").put("b", 1)
    converted = cast("a:int64").apply(sink(value, record_schema))
    assert (converted.value.get("a"), converted.value.get("b")) == (7, 1)


def test_cast_value_out_of_the_target_range_is_refused_by_the_struct() -> None:
    schema = SchemaBuilder.struct().field("a", STRING_SCHEMA).build()
    with pytest.raises(DataError, match=r"^Value \(x\) was out of range"):
        cast("a:int8").apply(sink(Struct(schema).put("a", "x"), schema))


def test_logical_date_cast_to_string_uses_kafkas_date_format_quirk() -> None:
    converted = cast("string").apply(sink(dt.date(1970, 1, 1), Date.SCHEMA))
    assert converted.value == "00:00:00.000Z"
