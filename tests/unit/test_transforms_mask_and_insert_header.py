"""MaskField (per-type masks and replacements) and InsertHeader (a literal parsed as
Kafka's Values does)."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest

from connect_grpc.data.errors import DataError
from connect_grpc.data.headers import ConnectHeaders
from connect_grpc.data.schema import (
    BOOLEAN_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    SchemaBuilder,
    Type,
)
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms.insert_header import InsertHeader
from connect_grpc.data.transforms.mask_field import MaskFieldKey, MaskFieldValue

from ._smt_records import sink

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def mask(fields: str, cls: type = MaskFieldValue, **extra: str) -> Any:
    smt = cls()
    smt.configure({"fields": fields, **extra})
    return smt


# --- MaskField --------------------------------------------------------------------------


def test_mask_reference_example() -> None:
    assert mask("ssn").apply(sink({"ssn": "123", "name": "n"})).value == {"ssn": "", "name": "n"}


def test_mask_schemaless_per_type_zeroes() -> None:
    value = {"bool": True, "int": 42, "float": 4.2, "decimal": decimal.Decimal("4.2"),
             "ts": dt.datetime(2020, 1, 1, tzinfo=dt.UTC), "date": dt.date(2020, 1, 1),
             "time": dt.time(1, 2), "str": "s", "list": [1], "map": {"a": 1}, "null": None}
    masked = mask(",".join(value), MaskFieldKey).apply(sink("v", key=value)).key
    assert masked == {"bool": False, "int": 0, "float": 0.0, "decimal": decimal.Decimal(0),
                      "ts": EPOCH, "date": dt.date(1970, 1, 1), "time": dt.time(0), "str": "",
                      "list": [], "map": {}, "null": None}


def test_mask_schemaless_missing_field_is_put_as_null() -> None:
    assert mask("gone").apply(sink({"a": 1})).value == {"a": 1, "gone": None}


def test_mask_with_schema_keeps_the_schema() -> None:
    schema = (SchemaBuilder.struct().field("int8", INT8_SCHEMA).field("int64", INT64_SCHEMA)
              .field("float32", FLOAT32_SCHEMA).field("bool", BOOLEAN_SCHEMA)
              .field("str", STRING_SCHEMA).field("opt", OPTIONAL_STRING_SCHEMA)
              .field("kept", STRING_SCHEMA).build())
    value = (Struct(schema).put("int8", 8).put("int64", 64).put("float32", 3.0)
             .put("bool", True).put("str", "s").put("kept", "k"))
    masked = mask("int8,int64,float32,bool,str,opt").apply(sink(value, schema))
    assert masked.value_schema is schema
    result = masked.value
    assert [result.get(name) for name in ("int8", "int64", "float32", "bool", "str", "opt",
                                           "kept")] == [0, 0, 0.0, False, "", None, "k"]


@pytest.mark.parametrize(
    ("schema", "value", "replacement", "expected"),
    [
        (STRING_SCHEMA, "secret", "***", "***"),
        (INT8_SCHEMA, 5, "123", 123),
        (INT16_SCHEMA, 5, "-1", -1),
        (INT32_SCHEMA, 5, "7", 7),
        (INT64_SCHEMA, 5, "8", 8),
        (FLOAT64_SCHEMA, 1.5, "2.5", 2.5),
        (FLOAT32_SCHEMA, 1.5, "0.5", 0.5),
    ],
)
def test_mask_with_replacement_converts_to_the_field_type(schema: Any, value: object,
                                                          replacement: str,
                                                          expected: object) -> None:
    struct_schema = SchemaBuilder.struct().field("f", schema).build()
    masked = mask("f", replacement=replacement).apply(
        sink(Struct(struct_schema).put("f", value), struct_schema))
    assert masked.value.get("f") == expected
    assert type(masked.value.get("f")) is type(expected)


def test_mask_with_replacement_schemaless() -> None:
    masked = mask("n,d,s", replacement="12").apply(
        sink({"n": 1, "d": decimal.Decimal("1.5"), "s": "x"})).value
    assert masked == {"n": 12, "d": decimal.Decimal("12"), "s": "12"}


def test_mask_errors() -> None:
    with pytest.raises(DataError, match=r"^Cannot mask value of type: class bytes$"):
        mask("b").apply(sink({"b": b"x"}))
    with pytest.raises(DataError, match=r"^Cannot mask value of type class bool with custom "
                                        r"replacement\.$"):
        mask("b", replacement="x").apply(sink({"b": True}))
    with pytest.raises(DataError, match=r"^Unable to convert abc \(class str\) to number$"):
        mask("n", replacement="abc").apply(sink({"n": 1}))
    with pytest.raises(DataError, match=r"^Only Map objects supported in absence of schema for "
                                        r"\[mask fields\], found: null$"):
        mask("a").apply(sink(None))
    with pytest.raises(DataError, match=r"^Only Struct objects supported for \[mask fields\]"):
        mask("a").apply(sink(None, SchemaBuilder.struct().optional().build()))


def test_mask_config_errors() -> None:
    errors = MaskFieldValue().config_def().validate({"fields": "", "replacement": " "})
    assert errors["fields"] == ["Invalid value [] for configuration fields: Empty list"]
    assert errors["replacement"] == [
        "Invalid value   for configuration replacement: String must be non-empty"]


# --- InsertHeader -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "schema_type", "value"),
    [("42", Type.INT8, 42), ("1000", Type.INT16, 1000), ("true", Type.BOOLEAN, True),
     ("hello world", Type.STRING, "hello world"), ("3.14", Type.FLOAT32, None)],
)
def test_insert_header_parses_the_literal_once(literal: str, schema_type: Type,
                                               value: object) -> None:
    smt = InsertHeader()
    smt.configure({"header": "h", "value.literal": literal})
    inserted = smt.apply(sink("v", headers=(("h", b"old"),)))
    assert isinstance(inserted.headers, ConnectHeaders)
    old, new = list(inserted.headers)
    assert (old.key, old.value, old.schema) == ("h", b"old", None)
    assert new.key == "h"
    assert new.schema.type is schema_type
    if value is not None:
        assert new.value == value
    assert inserted.value == "v"


def test_insert_header_leaves_the_input_headers_alone() -> None:
    headers = ConnectHeaders().add("a", 1, INT32_SCHEMA)
    smt = InsertHeader()
    smt.configure({"header": "b", "value.literal": "x"})
    assert [h.key for h in smt.apply(sink("v", headers=headers)).headers] == ["a", "b"]
    assert len(headers) == 1


def test_insert_header_config_errors() -> None:
    errors = InsertHeader().config_def().validate({})
    assert errors == {
        "header": ['Missing required configuration "header" which has no default value.'],
        "value.literal": [
            'Missing required configuration "value.literal" which has no default value.'],
    }
