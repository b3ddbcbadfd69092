"""JsonConverter: Kafka's envelope, byte for byte, and its reading rules and messages."""

from __future__ import annotations

import datetime
import decimal
import json

import pytest

from connect_grpc.data.converters.json import JsonConverter
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
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Schema,
    SchemaBuilder,
)
from connect_grpc.data.struct import Struct

T = "topic"
UTC = datetime.UTC


def converter(**configs: str) -> JsonConverter:
    result = JsonConverter()
    result.configure({key.replace("_", "."): value for key, value in configs.items()}, False)
    return result


def write(schema: Schema | None, value: object, **configs: str) -> bytes | None:
    return converter(**configs).from_connect_data(T, None, schema, value)


def read(data: bytes | None, **configs: str) -> tuple[Schema | None, object]:
    schema, value = converter(**configs).to_connect_data(T, None, data)
    return schema, value


def id_name_schema() -> Schema:
    builder = SchemaBuilder.struct().field("id", INT32_SCHEMA)
    return builder.field("name", OPTIONAL_STRING_SCHEMA).build()


# --- the envelope, byte for byte --------------------------------------------------------------

def test_reference_examples_byte_for_byte() -> None:
    assert write(INT32_SCHEMA, 42) == b'{"schema":{"type":"int32","optional":false},"payload":42}'
    assert write(OPTIONAL_STRING_SCHEMA, None) == (
        b'{"schema":{"type":"string","optional":true},"payload":null}'
    )
    schema = id_name_schema()
    assert write(schema, Struct(schema).put("id", 1)) == (
        b'{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},'
        b'{"type":"string","optional":true,"field":"name"}],"optional":false},'
        b'"payload":{"id":1,"name":null}}'
    )
    assert write(None, {"a": 1}) == b'{"schema":null,"payload":{"a":1}}'


def test_decimal_is_base64_of_the_twos_complement_by_default() -> None:
    assert write(Decimal.schema(2), decimal.Decimal("1.56")) == (
        b'{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal",'
        b'"version":1,"parameters":{"scale":"2"}},"payload":"AJw="}'
    )


def test_decimal_numeric_keeps_the_exact_text_both_ways() -> None:
    data = write(Decimal.schema(4), decimal.Decimal("1.5600"), decimal_format="numeric")
    assert data is not None and data.endswith(b'"payload":1.5600}')
    schema, value = read(data)
    assert schema == Decimal.schema(4)
    assert str(value) == "1.5600"
    big = decimal.Decimal("12345678901234567890.123456789012345678")
    data = write(Decimal.schema(18), big, decimal_format="NUMERIC")
    assert read(data)[1] == big


def test_schema_keys_in_kafkas_order_with_field_last() -> None:
    field_schema = (
        SchemaBuilder.int64().optional().name("n").version(2).doc("d").parameter("p", "v")
        .default_value(5).build()
    )
    schema = SchemaBuilder.struct().field("f", field_schema).build()
    envelope = json.loads(write(schema, Struct(schema)) or b"")
    field = envelope["schema"]["fields"][0]
    assert list(field) == [
        "type", "optional", "name", "version", "doc", "parameters", "default", "field"
    ]
    assert field["default"] == 5
    assert envelope["payload"] == {"f": 5}  # null replaced by the default


def test_array_and_map_schemas_and_payloads() -> None:
    array = SchemaBuilder.array(INT16_SCHEMA).build()
    assert write(array, [1, 2]) == (
        b'{"schema":{"type":"array","items":{"type":"int16","optional":false},"optional":false},'
        b'"payload":[1,2]}'
    )
    string_map = SchemaBuilder.map(STRING_SCHEMA, BOOLEAN_SCHEMA).build()
    assert write(string_map, {"a": True}) == (
        b'{"schema":{"type":"map","keys":{"type":"string","optional":false},'
        b'"values":{"type":"boolean","optional":false},"optional":false},"payload":{"a":true}}'
    )
    int_map = SchemaBuilder.map(INT8_SCHEMA, STRING_SCHEMA).build()
    data = write(int_map, {1: "x", 2: "y"})
    assert data is not None and data.endswith(b'"payload":[[1,"x"],[2,"y"]]}')
    assert read(data) == (int_map, {1: "x", 2: "y"})


def test_every_primitive_type_round_trips() -> None:
    cases: list[tuple[Schema, object]] = [
        (INT8_SCHEMA, -5), (INT16_SCHEMA, 300), (INT32_SCHEMA, 2**31 - 1), (INT64_SCHEMA, -(2**63)),
        (FLOAT32_SCHEMA, 1.5), (FLOAT64_SCHEMA, 1e-300), (BOOLEAN_SCHEMA, False),
        (STRING_SCHEMA, "ünïcode \"quoted\""), (BYTES_SCHEMA, b"\x00\xff"),
    ]
    json_converter = converter()
    for schema, value in cases:
        data = json_converter.from_connect_data(T, None, schema, value)
        assert json_converter.to_connect_data(T, None, data) == (schema, value), schema


def test_logical_types_round_trip_as_integers() -> None:
    day = datetime.date(2020, 1, 2)
    data = write(Date.SCHEMA, day)
    assert data is not None and data.endswith(b'"payload":18263}')
    assert read(data) == (Date.SCHEMA, day)
    noon = datetime.time(12, 0, 0, 1000)
    data = write(Time.SCHEMA, noon)
    assert data is not None and data.endswith(b'"payload":43200001}')
    assert read(data) == (Time.SCHEMA, noon)
    moment = datetime.datetime(2020, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)
    data = write(Timestamp.SCHEMA, moment)
    assert data is not None and data.endswith(b'"payload":1577934245006}')
    assert read(data) == (Timestamp.SCHEMA, moment)


def test_nested_struct_with_everything() -> None:
    inner = SchemaBuilder.struct().name("Inner").field("d", Decimal.schema(1)).build()
    schema = (
        SchemaBuilder.struct().name("Outer").version(3).doc("doc")
        .field("inner", inner)
        .field("list", SchemaBuilder.array(inner).optional().build())
        .field("map", SchemaBuilder.map(STRING_SCHEMA, Timestamp.SCHEMA).build())
        .build()
    )
    value = (
        Struct(schema)
        .put("inner", Struct(inner).put("d", decimal.Decimal("-0.5")))
        .put("list", [Struct(inner).put("d", decimal.Decimal("9.9"))])
        .put("map", {"t": datetime.datetime(2021, 1, 1, tzinfo=UTC)})
    )
    json_converter = converter()
    data = json_converter.from_connect_data(T, None, schema, value)
    assert json_converter.to_connect_data(T, None, data) == (schema, value)
    # a second converter (no cache) reads the same
    assert converter().to_connect_data(T, None, data) == (schema, value)


# --- nulls and tombstones -----------------------------------------------------------------------

def test_tombstones_both_ways() -> None:
    assert write(None, None) is None
    assert write(None, None, schemas_enable="false") is None
    assert read(None) == (None, None)
    assert read(None, schemas_enable="false") == (None, None)


def test_null_with_a_schema() -> None:
    assert write(OPTIONAL_INT32_SCHEMA, None, schemas_enable="false") == b"null"
    with_default = SchemaBuilder.int32().default_value(7).build()
    assert write(with_default, None) == (
        b'{"schema":{"type":"int32","optional":false,"default":7},"payload":7}'
    )
    with pytest.raises(DataError, match=r"null value for field that is required"):
        write(with_default, None, replace_null_with_default="false")
    with pytest.raises(DataError) as raised:
        write(INT32_SCHEMA, None)
    assert str(raised.value) == (
        "Conversion error: null value for field that is required and has no default value"
    )


def test_null_payload_reading() -> None:
    with_default = b'{"schema":{"type":"int32","optional":false,"default":7},"payload":null}'
    assert read(with_default) == (SchemaBuilder.int32().default_value(7).build(), 7)
    with pytest.raises(DataError, match=r"^Invalid null value for required INT32 field$"):
        read(with_default, replace_null_with_default="false")
    optional = b'{"schema":{"type":"int32","optional":true,"default":7},"payload":null}'
    assert read(optional, replace_null_with_default="false")[1] is None
    with pytest.raises(DataError, match=r"^Invalid null value for required STRING field$"):
        read(b'{"schema":{"type":"string","optional":false},"payload":null}')


def test_struct_fields_missing_from_the_payload_use_defaults_or_fail() -> None:
    schema_json = (
        '{"type":"struct","optional":false,"fields":['
        '{"type":"int32","optional":false,"default":3,"field":"a"},'
        '{"type":"string","optional":true,"field":"b"},'
        '{"type":"string","optional":false,"field":"c"}]}'
    )
    _, value = read(f'{{"schema":{schema_json},"payload":{{"c":"x","extra":1}}}}'.encode())
    assert isinstance(value, Struct)
    assert (value.get("a"), value.get("b"), value.get("c")) == (3, None, "x")
    with pytest.raises(DataError, match=r"^Invalid null value for required STRING field$"):
        read(f'{{"schema":{schema_json},"payload":{{}}}}'.encode())
    with pytest.raises(DataError) as raised:
        read(f'{{"schema":{schema_json},"payload":{{"c":5}}}}'.encode())
    assert str(raised.value) == (
        'Invalid value: null used for required field: "c", schema type: STRING'
    )


# --- schemaless ----------------------------------------------------------------------------------

def test_schemaless_json_reads_as_int64_float64_and_maps() -> None:
    data = b'{"a":1,"b":2.5,"c":[true,null,"x"],"d":{"e":-7}}'
    schema, value = read(data, schemas_enable="false")
    assert schema is None
    assert value == {"a": 1, "b": 2.5, "c": [True, None, "x"], "d": {"e": -7}}
    assert read(b"12", schemas_enable="false") == (None, 12)
    assert read(b"", schemas_enable="false") == (None, None)
    assert read(b'{"schema":null,"payload":[1]}') == (None, [1])


def test_schemaless_writing() -> None:
    assert write(None, [1, 2.5, "x", None, b"\x01"], schemas_enable="false") == (
        b'[1,2.5,"x",null,"AQ=="]'
    )
    assert write(None, {1: "a"}, schemas_enable="false") == b'[[1,"a"]]'
    assert write(None, float("nan"), schemas_enable="false") == b'"NaN"'
    with pytest.raises(DataError) as raised:
        write(None, decimal.Decimal(1))
    assert str(raised.value) == (
        "Java class class decimal.Decimal does not have corresponding schema type."
    )
    schema = id_name_schema()
    with pytest.raises(DataError, match=r"^Mismatching schema\.$"):
        write(None, Struct(schema).put("id", 1))


# --- errors on bad input -------------------------------------------------------------------------

def test_envelope_is_required_with_schemas_enabled() -> None:
    for data in (b'{"payload":1}', b'{"schema":null,"payload":1,"x":2}', b"[1]", b"1", b""):
        with pytest.raises(DataError) as raised:
            read(data)
        assert str(raised.value).startswith(
            'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
            "contain additional fields. If you are trying to deserialize plain JSON data, set "
            "schemas.enable=false in your converter configuration."
        )


def test_bad_json_is_a_serialization_error() -> None:
    with pytest.raises(DataError, match=r"^Converting byte.. to Kafka Connect data failed due to "
                                        "serialization error: "):
        read(b"{not json", schemas_enable="false")
    with pytest.raises(DataError, match=r"serialization error"):
        read(b"NaN", schemas_enable="false")


@pytest.mark.parametrize(
    ("schema_json", "message"),
    [
        ('{"optional":false}', "Schema must contain 'type' field"),
        ('{"type":5}', "Schema must contain 'type' field"),
        ('{"type":"uint8"}', "Unknown schema type: uint8"),
        ('{"type":"array"}', "Array schema did not specify the element type"),
        ('{"type":"map","values":{"type":"int8"}}', "Map schema did not specify the key type"),
        ('{"type":"map","keys":{"type":"int8"}}', "Map schema did not specify the value type"),
        ('{"type":"struct","fields":5}', 'Struct schema\'s "fields" argument is not an array.'),
        ('{"type":"struct","fields":[{"type":"int8"}]}',
         "Struct schema's field name not specified properly"),
        ('{"type":"int8","parameters":{"a":1}}', "Schema parameters must have string values."),
    ],
)
def test_bad_schemas_raise_kafkas_messages(schema_json: str, message: str) -> None:
    with pytest.raises(DataError) as raised:
        read(f'{{"schema":{schema_json},"payload":null}}'.encode())
    assert str(raised.value) == message


def test_bad_payloads_raise_kafkas_messages() -> None:
    def payload(schema_json: str, value: str) -> bytes:
        return f'{{"schema":{schema_json},"payload":{value}}}'.encode()

    struct = '{"type":"struct","fields":[],"optional":false}'
    with pytest.raises(DataError, match=r"^Structs should be encoded as JSON objects, but found A"):
        read(payload(struct, "[]"))
    string_map = '{"type":"map","keys":{"type":"string"},"values":{"type":"int8"}}'
    with pytest.raises(DataError, match=r"^Maps with string fields should be encoded as JSON "
                                        "objects, but found NUMBER$"):
        read(payload(string_map, "1"))
    int_map = '{"type":"map","keys":{"type":"int8"},"values":{"type":"int8"}}'
    with pytest.raises(DataError, match=r"encoded as JSON array of tuples, but found OBJECT$"):
        read(payload(int_map, "{}"))
    with pytest.raises(DataError, match=r"^Found invalid map entry, expected length 2 but found :"):
        read(payload(int_map, "[[1,2,3]]"))
    date = '{"type":"int32","name":"org.apache.kafka.connect.data.Date","version":1}'
    with pytest.raises(DataError, match=r"^Invalid type for Date, underlying representation "
                                        "should be integer but was STRING$"):
        read(payload(date, '"2020-01-01"'))
    timestamp = '{"type":"int64","name":"org.apache.kafka.connect.data.Timestamp"}'
    with pytest.raises(DataError, match=r"should be integral but was NUMBER$"):
        read(payload(timestamp, "1.5"))
    decimal_schema = ('{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal",'
                      '"parameters":{"scale":"2"}}')
    with pytest.raises(DataError, match=r"should be numeric or bytes but was BOOLEAN$"):
        read(payload(decimal_schema, "true"))
    with pytest.raises(DataError, match=r"^Invalid bytes for Decimal field"):
        read(payload(decimal_schema, '"!!"'))
    with pytest.raises(DataError, match=r"^Invalid bytes field"):
        read(payload('{"type":"bytes"}', '"not base64!"'))


def test_integers_are_narrowed_like_java_casts_on_reading() -> None:
    assert read(b'{"schema":{"type":"int8"},"payload":300}')[1] == 44
    assert read(b'{"schema":{"type":"int32"},"payload":1.9}')[1] == 1
    assert read(b'{"schema":{"type":"int16"},"payload":"12"}')[1] == 0  # Jackson's intValue
    assert read(b'{"schema":{"type":"double"},"payload":3}')[1] == 3.0
    assert read(b'{"schema":{"type":"boolean"},"payload":1}')[1] is False


def test_writing_values_of_the_wrong_type() -> None:
    with pytest.raises(DataError, match=r"^Invalid type for INT32: class str$"):
        write(INT32_SCHEMA, "1")
    with pytest.raises(DataError, match=r"^Invalid type for INT8: class int \(value 300 out"):
        write(INT8_SCHEMA, 300)
    with pytest.raises(DataError, match=r"^Invalid type for Decimal, expected BigDecimal but was "
                                        "class float$"):
        write(Decimal.schema(2), 1.5)
    with pytest.raises(DataError, match=r"^Invalid type for Timestamp, expected Date but was "):
        write(Timestamp.SCHEMA, 5)
    other = SchemaBuilder.struct().field("x", INT32_SCHEMA).build()
    with pytest.raises(DataError, match=r"^Mismatching schema\.$"):
        write(id_name_schema(), Struct(other).put("x", 1))
    with pytest.raises(DataError, match=r"mismatching scale"):
        write(Decimal.schema(2), decimal.Decimal("1.5"))


# --- config, caches, header converter ----------------------------------------------------------

def test_config_def_has_kafkas_keys_and_defaults() -> None:
    keys = JsonConverter().config_def().keys
    assert [k for k in keys] == [
        "converter.type", "schemas.enable", "schemas.cache.size", "schema.content",
        "decimal.format", "replace.null.with.default",
    ]
    assert keys["schema.content"].default is None
    assert keys["schemas.enable"].default is True
    assert keys["schemas.cache.size"].default == 1000
    assert keys["decimal.format"].default == "BASE64"
    assert keys["replace.null.with.default"].default is True
    errors = JsonConverter().config_def().validate({"converter.type": "value",
                                                    "decimal.format": "hex"})
    assert errors["decimal.format"] == [
        "Invalid value hex for configuration decimal.format: String must be one of "
        "(case insensitive): BASE64, NUMERIC"
    ]
    with pytest.raises(ValueError, match=r"schemas.enable"):
        converter(schemas_enable="maybe")


def test_schema_caches_are_bounded_by_schemas_cache_size() -> None:
    json_converter = converter(schemas_cache_size="2")
    for index in range(5):
        schema = SchemaBuilder.int32().name(f"s{index}").build()
        data = json_converter.from_connect_data(T, None, schema, index)
        assert json_converter.to_connect_data(T, None, data) == (schema, index)
    assert json_converter.cached_schemas == (2, 2)


def test_reading_the_same_schema_twice_and_then_another() -> None:
    json_converter = converter()
    first = json_converter.from_connect_data(T, None, INT32_SCHEMA, 1)
    second = json_converter.from_connect_data(T, None, INT64_SCHEMA, 2)
    for _ in range(2):
        assert json_converter.to_connect_data(T, None, first) == (INT32_SCHEMA, 1)
        assert json_converter.to_connect_data(T, None, second) == (INT64_SCHEMA, 2)
    # the same schema text followed by something that is not a payload is still refused
    assert first is not None
    broken = first[:-1] + b',"extra":1}'
    with pytest.raises(DataError, match=r"schemas.enable requires"):
        json_converter.to_connect_data(T, None, broken)


def test_json_converter_is_a_header_converter() -> None:
    json_converter = JsonConverter()
    json_converter.configure({"schemas.enable": "false"})
    assert json_converter.converter_type == "header"
    assert json_converter.from_connect_header(T, "h", INT32_SCHEMA, 5) == b"5"
    assert json_converter.to_connect_header(T, "h", b"5") == (None, 5)


def test_a_struct_default_cannot_be_written_as_in_kafka() -> None:
    # The default's struct was made with the schema before the default was set, which is
    # not the final schema: Kafka's asJsonSchema fails the same way.
    inner = SchemaBuilder.struct().field("a", INT32_SCHEMA)
    default = Struct(inner.build()).put("a", 1)
    schema = inner.default_value(default).build()
    with pytest.raises(DataError, match=r"^Mismatching schema\.$"):
        write(schema, None)


def test_generated_struct_code_takes_any_field_name() -> None:
    odd = ["a'b", 'c"d', "e\\nf", "g\nh", "{i}", "def", "x", "v"]
    builder = SchemaBuilder.struct()
    for name in odd:
        builder.field(name, OPTIONAL_STRING_SCHEMA)
    schema = builder.build()
    value = Struct(schema)
    for name in odd:
        value.put(name, name * 2)
    data = write(schema, value)
    assert data is not None
    assert json.loads(data)["payload"] == {name: name * 2 for name in odd}
    assert read(data) == (schema, value)


def test_struct_fields_get_kafkas_handling_in_the_generated_code() -> None:
    schema = (
        SchemaBuilder.struct()
        .field("f", FLOAT64_SCHEMA).field("g", FLOAT32_SCHEMA)
        .field("i8", INT8_SCHEMA).field("s", STRING_SCHEMA)
        .field("d", SchemaBuilder.int32().default_value(9).build())
        .build()
    )
    value = Struct(schema).put("f", float("nan")).put("g", float("-inf")).put("i8", 1).put(
        "s", "x")
    data = write(schema, value)
    assert data is not None
    assert json.loads(data)["payload"] == {"f": "NaN", "g": "-Infinity", "i8": 1, "s": "x",
                                           "d": 9}
    with pytest.raises(DataError, match="null value for field that is required"):
        write(schema, Struct(schema).put("f", 1.0).put("g", 1.0).put("i8", 1))
    # reading: out-of-range integers narrowed, wrong JSON types as Jackson reads them
    envelope = json.loads(data)
    envelope["payload"] = {"f": 1, "g": "text", "i8": 300, "s": "y", "d": None}
    _, read_value = read(json.dumps(envelope).encode())
    assert isinstance(read_value, Struct)
    assert [read_value.get(name) for name in ("f", "g", "i8", "s", "d")] == [1.0, 0.0, 44, "y", 9]
    envelope["payload"]["s"] = 5
    with pytest.raises(DataError, match='null used for required field: "s"'):
        read(json.dumps(envelope).encode())


def test_a_used_converter_pickles_with_its_settings_and_empty_caches() -> None:
    import pickle

    json_converter = converter(decimal_format="NUMERIC", schemas_enable="true")
    schema = id_name_schema()
    data = json_converter.from_connect_data(T, None, schema, Struct(schema).put("id", 1))
    copy = pickle.loads(pickle.dumps(json_converter))
    assert copy.cached_schemas == (0, 0)
    assert copy.converter_type == "value"
    assert copy.to_connect_data(T, None, data) == json_converter.to_connect_data(T, None, data)
    assert copy.from_connect_data(T, None, Decimal.schema(2), decimal.Decimal("1.50")) == (
        b'{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.'
        b'Decimal","version":1,"parameters":{"scale":"2"}},"payload":1.50}'
    )


def test_schemaless_numbers_beyond_long_and_double() -> None:
    assert read(b"9223372036854775807", schemas_enable="false") == (None, 2**63 - 1)
    assert read(b"9223372036854775808", schemas_enable="false") == (None, -(2**63))
    assert read(b'{"a":[18446744073709551615]}', schemas_enable="false") == (None, {"a": [-1]})
    assert read(b'["12345678901234567890"]', schemas_enable="false") == (
        None, ["12345678901234567890"]
    )
    assert read(b"[1e400]", schemas_enable="false") == (None, [float("inf")])
    assert read(b"  ", schemas_enable="false") == (None, None)


def test_schemaless_writing_fast_path_writes_what_the_walk_writes() -> None:
    import orjson

    from connect_grpc.data.converters.json_writers import _dump_schemaless, _write_schemaless

    values: list[object] = [
        {"a": 1, "b": [1.5, "x", True, b"\x00\x01"], "c": {"d": (1, 2)}},
        [2**63 - 1, -(2**63)], "text", 0.1, 1e20, {"n": None}, [float("nan")],
        {1: "non-string key"}, [2**64], bytearray(b"ab"),
    ]
    for value in values:
        fast = _dump_schemaless(value)
        if fast is not None:
            assert fast == orjson.dumps(_write_schemaless(value)), value
    assert _dump_schemaless({"n": None}) is None  # a null: the walk decides (NaN is one too)
    assert _dump_schemaless({1: "x"}) is None
    with pytest.raises(DataError, match="serialization error"):
        write(None, [2**64], schemas_enable="false")
    with pytest.raises(DataError, match="does not have corresponding schema type"):
        write(None, {"at": datetime.datetime(2020, 1, 1)}, schemas_enable="false")


def test_numeric_decimals_stay_exact_when_the_schema_text_repeats() -> None:
    json_converter = converter(decimal_format="NUMERIC")
    schema = SchemaBuilder.struct().field("price", Decimal.schema(4)).field(
        "ratio", FLOAT64_SCHEMA).build()
    for text in ("1.5600", "2.0000", "123456789012345678.1234"):
        value = Struct(schema).put("price", decimal.Decimal(text)).put("ratio", 0.1)
        data = json_converter.from_connect_data(T, None, schema, value)
        read_schema, read_value = json_converter.to_connect_data(T, None, data)
        assert read_schema == schema
        assert isinstance(read_value, Struct)
        assert str(read_value.get("price")) == text
        assert read_value.get("ratio") == 0.1


def test_a_numeric_decimal_default_is_read_exactly() -> None:
    data = (b'{"schema":{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.'
            b'Decimal","version":1,"parameters":{"scale":"2"},"default":1.50},"payload":null}')
    schema, value = read(data)
    assert schema is not None and str(schema.default) == "1.50"
    assert str(value) == "1.50"
    schema_json = json.loads(data)["schema"]
    assert str(JsonConverter().as_connect_schema(schema_json).default) == "1.5"  # type: ignore[union-attr]


def test_numbers_with_leading_zeros_are_read_as_kafkas_jackson_reads_them() -> None:
    assert read(b'[0012, -007, 00.5, "0012"]', schemas_enable="false") == (
        None, [12, -7, 0.5, "0012"]
    )
    assert read(b'{"schema":{"type":"int32"},"payload":0012}') == (INT32_SCHEMA, 12)
    with pytest.raises(DataError, match="serialization error"):
        read(b"[0012, oops]", schemas_enable="false")


def test_float32_values_from_float_bits_are_written_as_jackson_writes_a_float() -> None:
    import struct as binary

    single = binary.unpack(">f", binary.pack(">f", 0.1))[0]
    assert write(FLOAT32_SCHEMA, single, schemas_enable="false") == b"0.1"
    assert write(FLOAT64_SCHEMA, single, schemas_enable="false") == b"0.10000000149011612"
    assert write(FLOAT32_SCHEMA, 3.25, schemas_enable="false") == b"3.25"
    big = binary.unpack(">f", binary.pack(">f", 16777217.0))[0]
    assert write(FLOAT32_SCHEMA, big, schemas_enable="false") == b"16777216.0"
    schema = SchemaBuilder.struct().field("f", FLOAT32_SCHEMA).build()
    data = write(schema, Struct(schema).put("f", single))
    assert data is not None and data.endswith(b'"payload":{"f":0.1}}')


# --- schemas equal but built again (another object each time) -----------------------------

def test_a_struct_of_an_equal_schema_object_is_written_and_another_schema_refused() -> None:
    """The writer compiled for one schema object takes a struct of an equal schema built
    again (the first such struct is compared deeply, the next by identity), and still
    refuses a struct of another schema afterwards."""
    json_converter = converter()
    compiled_for = id_name_schema()
    first = Struct(compiled_for).put("id", 0)
    assert json_converter.from_connect_data(T, None, compiled_for, first) is not None
    rebuilt = id_name_schema()
    assert rebuilt == compiled_for and rebuilt is not compiled_for
    for index in (1, 2):
        written = json_converter.from_connect_data(
            T, None, compiled_for, Struct(rebuilt).put("id", index)
        )
        assert written is not None
        assert json.loads(written)["payload"] == {"id": index, "name": None}
    other = SchemaBuilder.struct().field("id", INT32_SCHEMA).build()
    with pytest.raises(DataError, match=r"^Mismatching schema\.$"):
        json_converter.from_connect_data(T, None, compiled_for, Struct(other).put("id", 3))


def test_the_schema_cache_finds_an_equal_schema_built_again() -> None:
    """A schema equal to a cached one but built again writes the same envelope (the cache
    entry is found by equality, then kept under the newer object)."""
    json_converter = converter()
    written = []
    for _ in range(2):
        schema = id_name_schema()
        value = Struct(schema).put("id", 1)
        written.append(json_converter.from_connect_data(T, None, schema, value))
    assert written[0] == written[1] is not None
    assert json_converter.cached_schemas == (1, 0)


# --- schema.content (KIP-1054): Kafka's JsonConverterTest cases, then ours ----------------------

ENVELOPE = b'{ "schema": { "type": "string" }, "payload": "foo-bar-baz" }'


def test_schema_content_null_reads_the_envelope() -> None:
    # Kafka's testSchemaContentIsNull (a Java null is a missing key here)
    assert read(ENVELOPE) == (STRING_SCHEMA, "foo-bar-baz")


def test_schema_content_empty_string_reads_the_envelope() -> None:
    # Kafka's testSchemaContentIsEmptyString
    assert read(ENVELOPE, schema_content="") == (STRING_SCHEMA, "foo-bar-baz")


def test_schema_content_valid_schema_reads_the_bare_value() -> None:
    # Kafka's testSchemaContentValidSchema
    assert read(b'"foo-bar-baz"', schema_content='{ "type": "string" }') == (
        STRING_SCHEMA, "foo-bar-baz"
    )


def test_schema_content_invalid_schema_fails_configure() -> None:
    # Kafka's testSchemaContentInValidSchema: a DataException from configure
    with pytest.raises(DataError, match=r"^Failed to parse schema in converter config due to "
                                        r"serialization error: "):
        converter(schema_content='{ "string" }')


def test_schema_content_that_looks_like_an_envelope_reads_the_message_as_its_value() -> None:
    # Kafka's testSchemaContentLooksLikeSchema: the envelope is not unwrapped
    content = (
        '{ "type": "struct", "fields": [{"field": "schema", "type": "struct","fields": '
        '[{"field": "type", "type": "string" }]}, {"field": "payload", "type": "string"}]}'
    )
    schema, value = read(ENVELOPE, schema_content=content)
    assert isinstance(value, Struct)
    assert value.get("payload") == "foo-bar-baz"
    assert value.get("schema").get("type") == "string"
    assert schema is not None and [f.name for f in schema.fields] == ["schema", "payload"]


@pytest.mark.parametrize(
    "data",
    [
        b"{ }",
        b'{ "wrong": "schema" }',
        b'{ "schema": { "type": "string" } }',
        b'{ "payload": "foo-bar-baz" }',
        b'{ "schema": { "type": "string" }, "payload": "foo-bar-baz", "extra": "field" }',
    ],
)
def test_without_schema_content_a_message_that_is_no_envelope_is_refused(data: bytes) -> None:
    # Kafka's testNullSchemaContentWithWrongConnectDataValue
    with pytest.raises(DataError, match=r"schemas.enable requires"):
        read(data)


def test_schema_content_envelope_under_a_string_schema_is_a_null_string() -> None:
    # the envelope is a JSON object, read as a string as Kafka reads one (its text value)
    assert read(ENVELOPE, schema_content='{"type":"string","optional":true}') == (
        OPTIONAL_STRING_SCHEMA, None
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"type":"uint8"}', "Unknown schema type: uint8"),
        ('{"optional":true}', "Schema must contain 'type' field"),
        ("[1]", "Schema must contain 'type' field"),
        ('{"type":"struct","fields":5}', 'Struct schema\'s "fields" argument is not an array.'),
        ("{not json", "Failed to parse schema in converter config due to serialization error: "),
    ],
)
def test_a_bad_schema_content_fails_configure_with_kafkas_message(
    content: str, message: str
) -> None:
    with pytest.raises(DataError) as raised:
        converter(schema_content=content)
    assert str(raised.value).startswith(message)
    # validation reports the same message on the key itself
    errors = JsonConverter().config_def().validate(
        {"converter.type": "value", "schema.content": content}
    )
    assert len(errors["schema.content"]) == 1
    assert errors["schema.content"][0].startswith(message)


def test_a_refused_schema_content_leaves_the_converter_as_it_was() -> None:
    json_converter = converter(schema_content='{"type":"int32"}')
    with pytest.raises(DataError):
        json_converter.configure({"schema.content": '{"type":"nope"}'}, False)
    assert json_converter.to_connect_data(T, None, b"7") == (INT32_SCHEMA, 7)


def test_schema_content_blank_or_json_null_means_no_schema() -> None:
    for content in ("   ", "null"):
        assert read(ENVELOPE, schema_content=content) == (STRING_SCHEMA, "foo-bar-baz")


def test_schema_content_reads_every_bare_value_with_its_schema() -> None:
    content = json.dumps(json.loads(write(id_name_schema(), Struct(id_name_schema()).put(
        "id", 1)) or b"")["schema"])
    json_converter = converter(schema_content=content)
    schema, value = json_converter.to_connect_data(T, None, b'{"id": 7, "name": "x"}')
    assert schema == id_name_schema()
    assert value == Struct(id_name_schema()).put("id", 7).put("name", "x")
    schema, value = json_converter.to_connect_data(T, None, b'{"id": 8}')
    assert value == Struct(id_name_schema()).put("id", 8)
    with pytest.raises(DataError, match=r"Invalid null value for required INT32 field"):
        json_converter.to_connect_data(T, None, b'{"name": "no id"}')
    # a tombstone is still a tombstone
    assert json_converter.to_connect_data(T, None, None) == (None, None)


def test_schema_content_keeps_decimals_exact_and_reads_defaults() -> None:
    decimal_content = (
        '{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","version":1,'
        '"parameters":{"scale":"2"},"optional":true}'
    )
    schema, value = read(b"12.34", schema_content=decimal_content)
    assert value == decimal.Decimal("12.34") and schema is not None
    assert read(b"null", schema_content='{"type":"double","default":1.5}') == (
        SchemaBuilder.float64().default_value(1.5).build(), 1.5
    )


def test_schema_content_is_ignored_with_schemas_disabled_but_still_checked() -> None:
    assert read(b'{"a": 1}', schemas_enable="false", schema_content='{"type":"string"}') == (
        None, {"a": 1}
    )
    with pytest.raises(DataError, match=r"Unknown schema type"):
        converter(schemas_enable="false", schema_content='{"type":"text"}')


def test_schema_content_does_not_change_writing() -> None:
    plain = write(INT32_SCHEMA, 42)
    assert write(INT32_SCHEMA, 42, schema_content='{"type":"int32"}') == plain
    assert write(INT32_SCHEMA, 42, schema_content='{"type":"string"}') == plain


def test_schema_content_for_keys_headers_and_a_pickled_copy() -> None:
    import pickle

    key_converter = JsonConverter()
    key_converter.configure({"schema.content": '{"type":"int64"}'}, True)
    assert key_converter.to_connect_data(T, None, b"5") == (INT64_SCHEMA, 5)
    header_converter = JsonConverter()
    header_converter.configure({"schema.content": '{"type":"boolean"}'})
    assert header_converter.to_connect_header(T, "h", b"true") == (BOOLEAN_SCHEMA, True)
    copy = pickle.loads(pickle.dumps(key_converter))
    assert copy.to_connect_data(T, None, b"6") == (INT64_SCHEMA, 6)


def test_schema_content_reads_empty_bytes_as_kafka_reads_a_missing_node() -> None:
    # not null: the type's own conversion, whatever the schema's optionality or default
    assert read(b"", schema_content='{"type":"int32"}') == (INT32_SCHEMA, 0)
    assert read(b"", schema_content='{"type":"string"}') == (STRING_SCHEMA, None)
    with pytest.raises(DataError, match=r"Structs should be encoded as JSON objects, but found "
                                        r"MISSING"):
        read(b"", schema_content='{"type":"struct","fields":[]}')


@pytest.mark.parametrize("side", ["key", "value"])
def test_validation_refuses_a_bad_schema_content_on_its_own_key(side: str) -> None:
    from connect_grpc.connectors.plugins import Plugins
    from connect_grpc.herder.validation import ConfigValidator

    config = {
        "connector.class": "SequenceSource", "topic": "t",
        f"{side}.converter": "org.apache.kafka.connect.json.JsonConverter",
        f"{side}.converter.schema.content": '{"type":"int33"}',
    }
    errors = ConfigValidator(Plugins(), max_tasks=8).validate(config).all_errors()
    assert errors == [(f"{side}.converter.schema.content", "Unknown schema type: int33")]
    config[f"{side}.converter.schema.content"] = '{"type":"int32"}'
    assert ConfigValidator(Plugins(), max_tasks=8).validate(config).all_errors() == []
