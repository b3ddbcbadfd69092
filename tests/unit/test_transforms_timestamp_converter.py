"""TimestampConverter: string, unix, Date, Time and Timestamp, both ways, schemaless and
with a schema (the reference's and Kafka's TimestampConverterTest examples)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from connect_grpc.data.errors import DataError
from connect_grpc.data.logical import Date, Time, Timestamp
from connect_grpc.data.schema import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    SchemaBuilder,
)
from connect_grpc.data.struct import Struct
from connect_grpc.data.transforms.timestamp_converter import (
    TimestampConverterKey,
    TimestampConverterValue,
)

from ._smt_records import sink

# Kafka's test instant: 1970-01-02 01:02:03.004 UTC
DATE_PLUS_TIME = dt.datetime(1970, 1, 2, 1, 2, 3, 4000, tzinfo=dt.UTC)
DATE_PLUS_TIME_MILLIS = 90_123_004
STRING_FORMAT = "yyyy MM dd HH mm ss SSS z"
DATE_PLUS_TIME_STRING = "1970 01 02 01 02 03 004 UTC"


def converter(target: str, cls: type = TimestampConverterValue, **extra: str) -> Any:
    smt = cls()
    smt.configure({"target.type": target, **{k.replace("_", "."): v for k, v in extra.items()}})
    return smt


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("Timestamp", DATE_PLUS_TIME),
        ("Date", dt.date(1970, 1, 2)),
        ("Time", dt.time(1, 2, 3, 4000)),
        ("unix", DATE_PLUS_TIME_MILLIS),
        ("string", DATE_PLUS_TIME_STRING),
    ],
)
def test_schemaless_from_a_timestamp(target: str, expected: object) -> None:
    smt = converter(target, format=STRING_FORMAT)
    converted = smt.apply(sink(DATE_PLUS_TIME))
    assert (converted.value_schema, converted.value) == (None, expected)


@pytest.mark.parametrize(
    "source", [DATE_PLUS_TIME_MILLIS, DATE_PLUS_TIME_STRING, DATE_PLUS_TIME])
def test_schemaless_to_a_timestamp_from_every_input(source: object) -> None:
    smt = converter("Timestamp", format=STRING_FORMAT)
    assert smt.apply(sink(source)).value == DATE_PLUS_TIME


def test_reference_example_field_to_string() -> None:
    smt = converter("string", field="ts", format="yyyy-MM-dd")
    converted = smt.apply(sink({"ts": 86_400_000, "other": 1}))
    assert converted.value == {"ts": "1970-01-02", "other": 1}


def test_schemaless_missing_field_is_put_as_null() -> None:
    smt = converter("unix", field="ts")
    assert smt.apply(sink({"a": 1})).value == {"a": 1, "ts": None}


@pytest.mark.parametrize(
    ("precision", "unix"),
    [("seconds", 90_123), ("milliseconds", 90_123_004), ("microseconds", 90_123_004_000),
     ("nanoseconds", 90_123_004_000_000)],
)
def test_unix_precision_both_ways(precision: str, unix: int) -> None:
    to_unix = converter("unix", unix_precision=precision)
    assert to_unix.apply(sink(DATE_PLUS_TIME)).value == unix
    from_unix = converter("Timestamp", unix_precision=precision)
    expected = DATE_PLUS_TIME.replace(microsecond=0) if precision == "seconds" else DATE_PLUS_TIME
    assert from_unix.apply(sink(unix)).value == expected


def test_sub_millisecond_input_is_truncated_toward_zero() -> None:
    smt = converter("unix", unix_precision="microseconds")
    assert converter("Timestamp", unix_precision="microseconds").apply(
        sink(-1_500)).value == dt.datetime(1969, 12, 31, 23, 59, 59, 999_000, tzinfo=dt.UTC)
    assert smt.apply(sink(dt.datetime(1970, 1, 1, 0, 0, 0, 1999, tzinfo=dt.UTC))).value == 1000


def test_with_schema_whole_value() -> None:
    smt = converter("Date", TimestampConverterKey)
    converted = smt.apply(sink("v", key=DATE_PLUS_TIME, key_schema=Timestamp.SCHEMA))
    assert (converted.key_schema, converted.key) == (Date.SCHEMA, dt.date(1970, 1, 2))
    optional = converter("string", format=STRING_FORMAT).apply(
        sink(DATE_PLUS_TIME_MILLIS, OPTIONAL_INT64_SCHEMA))
    assert (optional.value_schema, optional.value) == (OPTIONAL_STRING_SCHEMA,
                                                       DATE_PLUS_TIME_STRING)


def test_with_schema_from_date_and_time() -> None:
    from_time = converter("unix").apply(sink(dt.time(1, 2, 3, 4000), Time.SCHEMA))
    assert (from_time.value_schema, from_time.value) == (INT64_SCHEMA, 3_723_004)
    from_date = converter("Timestamp").apply(sink(dt.date(1970, 1, 2), Date.SCHEMA))
    assert from_date.value == dt.datetime(1970, 1, 2, tzinfo=dt.UTC)


def test_with_schema_one_field_keeps_the_others() -> None:
    schema = (SchemaBuilder.struct().name("r").field("ts", STRING_SCHEMA)
              .field("other", STRING_SCHEMA).build())
    value = Struct(schema).put("ts", DATE_PLUS_TIME_STRING).put("other", "x")
    smt = converter("Timestamp", field="ts", format=STRING_FORMAT)
    converted = smt.apply(sink(value, schema))
    assert [(f.name, f.schema) for f in converted.value_schema.fields] == [
        ("ts", Timestamp.SCHEMA), ("other", STRING_SCHEMA)]
    assert converted.value_schema.name == "r"
    assert (converted.value.get("ts"), converted.value.get("other")) == (DATE_PLUS_TIME, "x")


def test_with_schema_null_struct_and_struct_default() -> None:
    inner = SchemaBuilder.struct().field("ts", INT64_SCHEMA).optional()
    default = Struct(inner.build()).put("ts", 0)
    schema = inner.default_value(default).build()
    converted = converter("Date", field="ts").apply(sink(None, schema))
    assert converted.value is None
    assert converted.value_schema.optional
    assert converted.value_schema.default.get("ts") == dt.date(1970, 1, 1)


def test_errors_on_bad_input() -> None:
    with pytest.raises(DataError, match=r"^TimestampConverter does not support class float "
                                        r"objects as timestamps$"):
        converter("unix").apply(sink(1.5))
    with pytest.raises(DataError, match=r"^Schema Schema\{INT32\} does not correspond to a "
                                        r"known timestamp type format$"):
        converter("unix").apply(sink(1, INT32_SCHEMA))
    with pytest.raises(DataError, match=r"^Could not parse timestamp: value \(nope\) does not "
                                        r"match pattern \(yyyy-MM-dd\)$"):
        converter("unix", format="yyyy-MM-dd").apply(sink("nope"))
    with pytest.raises(DataError, match=r"\[converting timestamp formats\], found: int$"):
        converter("unix", field="ts").apply(sink(5))


def test_config_errors() -> None:
    config_def = TimestampConverterValue().config_def()
    errors = config_def.validate({"target.type": "date", "unix.precision": "hours",
                                  "format": "yyyy-ww"})
    assert errors["target.type"] == ["Invalid value date for configuration target.type: String "
                                     "must be one of: string, unix, Date, Time, Timestamp"]
    assert errors["unix.precision"] == [
        "Invalid value hours for configuration unix.precision: String must be one of: "
        "nanoseconds, microseconds, milliseconds, seconds"]
    assert errors["format"] == [
        "Invalid value yyyy-ww for configuration format: TimestampConverter requires a "
        "SimpleDateFormat-compatible pattern for string timestamps: yyyy-ww (pattern letter "
        "'w' (week-based) is not supported)"]
    assert config_def.validate({})["target.type"] == [
        'Missing required configuration "target.type" which has no default value.']
    with pytest.raises(ValueError, match=r"^TimestampConverter requires format option to be "
                                         r"specified when using string timestamps$"):
        converter("string")
