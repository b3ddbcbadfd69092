"""Kafka's Values: parse_string typing, narrowing conversions, text output, schema inference."""

from __future__ import annotations

import datetime
import decimal

import pytest

from connect_grpc.data import values
from connect_grpc.data.errors import DataError, SchemaBuilderError
from connect_grpc.data.javatext import java_double_str, java_string, wrap_signed
from connect_grpc.data.logical import Date, Decimal, Time, Timestamp
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
    Schema,
    SchemaBuilder,
    Type,
)
from connect_grpc.data.struct import Struct
from connect_grpc.data.values import (
    convert_to,
    convert_to_boolean,
    convert_to_byte,
    convert_to_date,
    convert_to_decimal,
    convert_to_double,
    convert_to_float,
    convert_to_integer,
    convert_to_list,
    convert_to_long,
    convert_to_map,
    convert_to_short,
    convert_to_string,
    convert_to_struct,
    convert_to_time,
    convert_to_timestamp,
    escape,
    infer_schema,
    parse_string,
)

UTC = datetime.UTC


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("42", INT8_SCHEMA, 42),
        ("-128", INT8_SCHEMA, -128),
        ("1000", INT16_SCHEMA, 1000),
        ("100000", INT32_SCHEMA, 100000),
        ("10000000000", INT64_SCHEMA, 10000000000),
        ("1.0", INT8_SCHEMA, 1),  # integral decimals are integers
        ("1e2", INT8_SCHEMA, 100),
        ("+5", INT8_SCHEMA, 5),
        ("1.5", FLOAT32_SCHEMA, 1.5),
        ("3.14", FLOAT32_SCHEMA, 3.14),
        ("true", BOOLEAN_SCHEMA, True),
        ("  false  ", BOOLEAN_SCHEMA, False),
        ("", STRING_SCHEMA, ""),
        ("hello world", STRING_SCHEMA, "hello world"),
        ("{foo: 3}", STRING_SCHEMA, "{foo: 3}"),
        ("[foo]", STRING_SCHEMA, "[foo]"),
        ("true}", STRING_SCHEMA, "true}"),
        ("null=", STRING_SCHEMA, "null="),
        ("{6:9 4:20}", STRING_SCHEMA, "{6:9 4:20}"),
        ("[0 1 2]", STRING_SCHEMA, "[0 1 2]"),
        ("2020-02-30", Date.SCHEMA, datetime.date(2020, 3, 1)),  # lenient as Java
    ],
)
def test_parse_string_types_text_as_kafka(text: str, schema: Schema, value: object) -> None:
    parsed = parse_string(text)
    assert parsed.schema == schema
    assert parsed.value == value
    assert type(parsed.value) is type(value)


def test_numbers_beyond_long_or_double_become_decimals() -> None:
    parsed = parse_string("99999999999999999999")
    assert parsed.schema == Decimal.schema(0)
    assert parsed.value == decimal.Decimal("99999999999999999999")
    huge = parse_string("1.5e400")
    assert huge.schema == Decimal.schema(-399)
    assert parse_string("1.5e300").schema == FLOAT64_SCHEMA


def test_null_parses_to_no_schema_and_no_value() -> None:
    assert parse_string("null") == (None, None)
    assert parse_string("  null ") == (None, None)
    assert parse_string(None) == (None, None)


def test_temporal_texts_become_logical_values() -> None:
    assert parse_string("2020-01-02") == (Date.SCHEMA, datetime.date(2020, 1, 2))
    assert parse_string("12:34:56.789Z") == (Time.SCHEMA, datetime.time(12, 34, 56, 789000))
    assert parse_string("2020-01-02T12:34:56.789Z") == (
        Timestamp.SCHEMA, datetime.datetime(2020, 1, 2, 12, 34, 56, 789000, tzinfo=UTC)
    )


def test_arrays_merge_their_element_schemas() -> None:
    parsed = parse_string("[1, 2, 300]")
    assert parsed.schema == SchemaBuilder.array(INT16_SCHEMA).build()
    assert parsed.value == [1, 2, 300]
    widened = parse_string("[1, 2.5]")
    assert widened.schema.value_schema == FLOAT32_SCHEMA  # type: ignore[union-attr]
    assert widened.value == [1.0, 2.5]
    assert parse_string('["a", "b"]').value == ["a", "b"]
    assert parse_string("[true, false]").schema == SchemaBuilder.array(BOOLEAN_SCHEMA).build()
    mixed = parse_string('[1, "a"]')
    assert mixed.schema is not None and mixed.schema.type is Type.ARRAY
    assert mixed.schema.value_schema is None
    assert parse_string("[]").value == []
    assert parse_string("[null]").value == [None]


def test_maps_merge_key_and_value_schemas() -> None:
    parsed = parse_string('{"a": 1, "b": 1000}')
    assert parsed.schema == SchemaBuilder.map(STRING_SCHEMA, INT16_SCHEMA).build()
    assert parsed.value == {"a": 1, "b": 1000}
    flags = parse_string("{true: false, false: true}")
    assert flags.value == {True: False, False: True}
    nulls = parse_string("{3: null}")
    assert nulls.schema is not None and nulls.schema.key_schema == INT8_SCHEMA
    assert nulls.value == {3: None}
    assert parse_string("{}").value == {}
    assert parse_string("{null: 3}").value == "{null: 3}"


def test_quoted_strings_inside_structures_keep_delimiters() -> None:
    parsed = parse_string('["a,b", "c:d"]')
    assert parsed.value == ["a,b", "c:d"]


def test_values_text_round_trips_through_parse_string() -> None:
    for value in ([1, 2, 3], {"a": "x y", "b": "z"}, "three\"blind\\\"mice", True, 1.5):
        text = convert_to_string(None, value)
        assert text is not None
        back = parse_string(text).value
        assert back == value


def test_convert_to_string_writes_java_text() -> None:
    assert convert_to_string(None, None) is None
    assert convert_to_string(None, True) == "true"
    assert convert_to_string(None, 1e20) == "1.0E20"
    assert convert_to_string(None, 2.0) == "2.0"
    assert convert_to_string(None, b"\x00\x01") == "AAE="
    assert convert_to_string(None, [1, "a", None, b"\x00"]) == '[1,"a",null,"AA=="]'
    assert convert_to_string(None, {"k": [True]}) == '{"k":[true]}'
    assert convert_to_string(None, decimal.Decimal("1.50")) == "1.50"
    schema = SchemaBuilder.struct().field("a", INT32_SCHEMA).field("b", OPTIONAL_STRING_SCHEMA)
    struct = Struct(schema.build()).put("a", 1)
    assert convert_to_string(None, struct) == '{"a":1,"b":null}'
    assert convert_to_string(None, 'say "hi"') == 'say "hi"'
    assert convert_to_string(None, ['say "hi"']) == '["say \\"hi\\""]'
    with pytest.raises(DataError, match=r"^Failed to serialize unexpected value type object"):
        convert_to_string(None, object())


def test_temporal_text_is_chosen_by_the_instant() -> None:
    assert convert_to_string(None, datetime.time(1, 2, 3, 4000)) == "01:02:03.004Z"
    assert convert_to_string(None, datetime.date(2020, 1, 2)) == "2020-01-02"
    moment = datetime.datetime(2020, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)
    assert convert_to_string(None, moment) == "2020-01-02T03:04:05.006Z"
    midnight = datetime.datetime(2020, 1, 2, tzinfo=UTC)
    assert convert_to_string(None, midnight) == "2020-01-02"


def test_escape() -> None:
    assert escape('a"b\\c') == 'a\\"b\\\\c'


def test_integer_conversions_narrow_as_java_casts() -> None:
    assert convert_to_byte(None, 300) == 44
    assert convert_to_byte(None, "300") == 44
    assert convert_to_short(None, 70000) == 4464
    assert convert_to_integer(None, 2**40 + 5) == 5
    assert convert_to_long(None, 12.9) == 12
    assert convert_to_long(None, -12.9) == -12
    assert convert_to_long(None, "12.9") == 12
    assert convert_to_long(None, decimal.Decimal("7.5")) == 7
    assert convert_to_long(None, float("nan")) == 0
    assert convert_to_long(None, 1e30) == 2**63 - 1
    assert convert_to_integer(None, None) is None
    assert wrap_signed(255, 8) == -1


def test_number_conversions_refuse_text_that_is_not_a_number() -> None:
    with pytest.raises(DataError) as raised:
        convert_to_integer(None, "abc")
    assert str(raised.value) == "Unable to convert abc (class str) to a number"
    with pytest.raises(DataError) as raised:
        convert_to_integer(STRING_SCHEMA, "abc")
    assert str(raised.value) == "Unable to convert abc (class str) to Schema{STRING}"
    with pytest.raises(DataError, match="to a number"):
        convert_to_long(None, True)


def test_float_conversions() -> None:
    assert convert_to_float(None, 1) == 1.0
    assert convert_to_float(None, "2.5") == 2.5
    assert convert_to_float(None, "1e300") == float("inf")  # Java's (float) of a large double
    assert convert_to_float(None, 10**300) == float("inf")
    assert convert_to_float(None, 1e300) == 1e300  # a float is kept: Float and Double are one
    assert convert_to_double(None, 1e300) == 1e300
    assert convert_to_double(None, decimal.Decimal("0.1")) == 0.1


def test_boolean_conversion() -> None:
    assert convert_to_boolean(None, "true") is True
    assert convert_to_boolean(None, "false") is False
    assert convert_to_boolean(None, 0) is False
    assert convert_to_boolean(None, 5) is True
    assert convert_to_boolean(None, "0") is False
    with pytest.raises(DataError):
        convert_to_boolean(STRING_SCHEMA, '"green"')


def test_logical_values_convert_to_numbers_with_their_schema() -> None:
    assert convert_to_integer(Date.SCHEMA, datetime.date(1970, 1, 3)) == 2
    assert convert_to_long(Timestamp.SCHEMA, datetime.datetime(1970, 1, 1, 0, 0, 1)) == 1000
    with pytest.raises(DataError, match="to a number"):
        convert_to_integer(None, datetime.date(1970, 1, 3))


def test_conversions_to_temporal_types() -> None:
    assert convert_to_date(None, "2020-01-02") == datetime.date(2020, 1, 2)
    assert convert_to_date(None, 1) == datetime.date(1970, 1, 2)
    moment = datetime.datetime(2020, 1, 2, 3, 4, tzinfo=UTC)
    assert convert_to_date(Timestamp.SCHEMA, moment) == datetime.date(2020, 1, 2)
    assert convert_to_time(Timestamp.SCHEMA, moment) == datetime.time(3, 4)
    assert convert_to_timestamp(None, 1000) == datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert convert_to_timestamp(Date.SCHEMA, datetime.date(1970, 1, 2)) == datetime.datetime(
        1970, 1, 2, tzinfo=UTC
    )
    with pytest.raises(DataError, match="requires a value"):
        convert_to_date(None, None)


def test_conversion_to_decimal() -> None:
    assert convert_to_decimal(None, 5, 1) == decimal.Decimal("5.0")
    assert convert_to_decimal(None, "1.25", 2) == decimal.Decimal("1.25")
    assert convert_to_decimal(None, b"\x00\x9c", 2) == decimal.Decimal("1.56")


def test_list_map_and_struct_conversions() -> None:
    assert convert_to_list(None, "[1, 2]") == [1, 2]
    assert convert_to_list(None, [3]) == [3]
    with pytest.raises(DataError, match=r"^Unable to convert 5 \(class int\) to Schema\{ARRAY\}$"):
        convert_to_list(None, 5)
    with pytest.raises(DataError, match="requires a value"):
        convert_to_list(None, None)
    assert convert_to_map(None, '{"a": 1}') == {"a": 1}
    with pytest.raises(DataError, match=r"to Schema\{MAP\}"):
        convert_to_map(None, "not a map")
    struct = Struct(SchemaBuilder.struct().field("a", INT32_SCHEMA).build()).put("a", 1)
    assert convert_to_struct(None, struct) is struct
    with pytest.raises(DataError):
        convert_to_struct(None, "")
    with pytest.raises(DataError):
        convert_to_struct(None, None)


def test_convert_to_by_target_schema() -> None:
    assert convert_to(INT16_SCHEMA, None, "7") == 7
    assert convert_to(OPTIONAL_STRING_SCHEMA, None, None) is None
    with pytest.raises(DataError, match="requires a value"):
        convert_to(STRING_SCHEMA, None, None)
    assert convert_to(STRING_SCHEMA, None, 1.5) == "1.5"
    assert convert_to(Decimal.schema(2), None, "1.50") == decimal.Decimal("1.50")


def test_infer_schema() -> None:
    assert infer_schema("x") == STRING_SCHEMA
    assert infer_schema(True) == BOOLEAN_SCHEMA
    assert infer_schema(5) == INT64_SCHEMA
    assert infer_schema(2**70) is None
    assert infer_schema(1.5) == FLOAT64_SCHEMA
    assert infer_schema([1, None]) == SchemaBuilder.array(
        SchemaBuilder.int64().optional().build()
    ).build()
    assert infer_schema([1, "a"]) is None
    assert infer_schema([]) is None
    assert infer_schema({"a": 1.5}) == SchemaBuilder.map(STRING_SCHEMA, FLOAT64_SCHEMA).build()
    assert infer_schema(decimal.Decimal(1)) is None
    with pytest.raises(SchemaBuilderError, match="type cannot be null"):
        infer_schema([None])


def test_java_text_helpers() -> None:
    assert java_double_str(1e20) == "1.0E20"
    assert java_double_str(1.5e-5) == "1.5E-5"
    assert java_double_str(123.0) == "123.0"
    assert java_double_str(-1e7) == "-1.0E7"
    assert java_double_str(float("nan")) == "NaN"
    assert java_double_str(float("-inf")) == "-Infinity"
    assert java_double_str(-0.0) == "-0.0"
    assert java_string([1, True, None]) == "[1, true, null]"
    assert java_string({"a": 1}) == "{a=1}"


def test_float32_values_are_written_as_javas_float_to_string() -> None:
    from connect_grpc.data.javatext import java_float_str, to_single

    single = to_single(0.1)  # what a FLOAT32 read from bytes looks like in Python
    assert single != 0.1
    assert java_float_str(single) == "0.1"
    assert java_float_str(to_single(16777217.0)) == "1.6777216E7"
    assert java_float_str(1e39) == "Infinity"
    assert convert_to_string(FLOAT32_SCHEMA, single) == "0.1"
    assert convert_to_string(FLOAT64_SCHEMA, single) == "0.10000000149011612"
    array = SchemaBuilder.array(FLOAT32_SCHEMA).build()
    assert convert_to_string(array, [single, 2.5]) == "[0.1,2.5]"
    schema = SchemaBuilder.struct().field("f", FLOAT32_SCHEMA).build()
    assert convert_to_string(schema, Struct(schema).put("f", single)) == '{"f":0.1}'
    float_map = SchemaBuilder.map(STRING_SCHEMA, FLOAT32_SCHEMA).build()
    assert convert_to_string(float_map, {"k": single}) == '{"k":0.1}'


@pytest.mark.parametrize("word", ["web", "Bench", "TRUE", "Null", "ünïcode", "x"])
def test_a_word_of_letters_is_typed_as_the_parser_types_it(word: str) -> None:
    """parse_string's shortcut for words of letters gives what the full parser gives."""
    assert parse_string(word) == values._ValueParser(word).parse(False)
