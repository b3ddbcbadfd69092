"""The simple built-in converters: String, ByteArray, the number converters, Boolean and
SimpleHeaderConverter, and the registry of Kafka class names."""

from __future__ import annotations

import datetime
import struct

import pytest

from connect_grpc.data.converters import (
    BUILTIN_CONVERTERS,
    BooleanConverter,
    ByteArrayConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    JsonConverter,
    LongConverter,
    ShortConverter,
    SimpleHeaderConverter,
    StringConverter,
)
from connect_grpc.data.errors import DataError
from connect_grpc.data.logical import Date, Timestamp
from connect_grpc.data.plugins import Converter, HeaderConverter
from connect_grpc.data.schema import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    OPTIONAL_BOOLEAN_SCHEMA,
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_FLOAT32_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT16_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    SchemaBuilder,
)
from connect_grpc.data.struct import Struct

T = "topic"


def configured(converter_class: type, configs: dict[str, str] | None = None,
               is_key: bool = False) -> Converter:
    converter = converter_class()
    converter.configure(configs or {}, is_key)
    return converter  # type: ignore[no-any-return]


# --- registry -----------------------------------------------------------------------------

def test_builtin_converters_are_keyed_by_kafka_class_names() -> None:
    assert BUILTIN_CONVERTERS["org.apache.kafka.connect.json.JsonConverter"] is JsonConverter
    assert BUILTIN_CONVERTERS["org.apache.kafka.connect.storage.StringConverter"] is StringConverter
    assert (BUILTIN_CONVERTERS["org.apache.kafka.connect.storage.SimpleHeaderConverter"]
            is SimpleHeaderConverter)
    assert (BUILTIN_CONVERTERS["org.apache.kafka.connect.converters.ByteArrayConverter"]
            is ByteArrayConverter)
    for simple in ("Boolean", "Double", "Float", "Integer", "Long", "Short"):
        name = f"org.apache.kafka.connect.converters.{simple}Converter"
        assert BUILTIN_CONVERTERS[name].__name__ == f"{simple}Converter"
    for name, cls in BUILTIN_CONVERTERS.items():
        assert issubclass(cls, HeaderConverter), name
        assert issubclass(cls, Converter) == (cls is not SimpleHeaderConverter), name


def test_every_converter_lists_converter_type_with_kafkas_validator() -> None:
    for cls in BUILTIN_CONVERTERS.values():
        if cls is SimpleHeaderConverter:
            assert cls().config_def().keys == {}
            continue
        config_def = cls().config_def()
        assert "converter.type" in config_def.keys
        errors = config_def.validate({"converter.type": "sideways"})
        assert errors["converter.type"] == [
            "Invalid value sideways for configuration converter.type: String must be one of: "
            "key, value, header"
        ]


def test_configure_reports_a_bad_key_as_value_error() -> None:
    with pytest.raises(ValueError, match=r"converter.encoding"):
        configured(StringConverter, {"converter.encoding": "no-such-charset"})


# --- StringConverter ----------------------------------------------------------------------

def test_string_converter_writes_java_text_and_reads_optional_strings() -> None:
    converter = configured(StringConverter)
    assert converter.from_connect_data(T, None, STRING_SCHEMA, "héllo") == "héllo".encode()
    assert converter.from_connect_data(T, None, None, 42) == b"42"
    assert converter.from_connect_data(T, None, None, True) == b"true"
    assert converter.from_connect_data(T, None, None, 1e20) == b"1.0E20"
    assert converter.from_connect_data(T, None, None, None) is None
    assert converter.to_connect_data(T, None, b"abc") == (OPTIONAL_STRING_SCHEMA, "abc")
    assert converter.to_connect_data(T, None, None) == (OPTIONAL_STRING_SCHEMA, None)


def test_string_converter_encodings() -> None:
    latin = configured(StringConverter, {"converter.encoding": "ISO-8859-1"})
    assert latin.from_connect_data(T, None, None, "é") == b"\xe9"
    assert latin.to_connect_data(T, None, b"\xe9").value == "é"
    utf16 = configured(StringConverter, {"converter.encoding": "UTF-16"})
    assert utf16.from_connect_data(T, None, None, "a") == b"\xfe\xff\x00a"
    assert utf16.to_connect_data(T, None, b"\xfe\xff\x00a").value == "a"
    assert utf16.to_connect_data(T, None, b"\x00a").value == "a"
    assert configured(StringConverter).to_connect_data(T, None, b"\xff").value == "\ufffd"


def test_string_converter_is_a_header_converter() -> None:
    converter = StringConverter()
    converter.configure({})
    assert converter.converter_type == "header"
    assert converter.from_connect_header(T, "h", None, "v") == b"v"
    assert converter.to_connect_header(T, "h", b"v") == (OPTIONAL_STRING_SCHEMA, "v")


def test_converter_type_follows_is_key() -> None:
    assert configured(StringConverter, is_key=True).converter_type == "key"  # type: ignore[attr-defined]
    assert configured(StringConverter).converter_type == "value"  # type: ignore[attr-defined]


# --- ByteArrayConverter -------------------------------------------------------------------

def test_byte_array_converter_passes_bytes_through() -> None:
    converter = configured(ByteArrayConverter)
    assert converter.from_connect_data(T, None, BYTES_SCHEMA, b"\x00\x01") == b"\x00\x01"
    assert converter.from_connect_data(T, None, None, bytearray(b"x")) == b"x"
    assert converter.from_connect_data(T, None, None, None) is None
    assert converter.to_connect_data(T, None, b"raw") == (OPTIONAL_BYTES_SCHEMA, b"raw")
    assert converter.to_connect_data(T, None, None) == (OPTIONAL_BYTES_SCHEMA, None)


def test_byte_array_converter_errors() -> None:
    converter = configured(ByteArrayConverter)
    with pytest.raises(DataError) as raised:
        converter.from_connect_data(T, None, STRING_SCHEMA, b"x")
    assert str(raised.value) == "Invalid schema type for ByteArrayConverter: STRING"
    with pytest.raises(DataError) as raised:
        converter.from_connect_data(T, None, None, "text")
    assert str(raised.value) == (
        "ByteArrayConverter is not compatible with objects of type class str"
    )


# --- number converters --------------------------------------------------------------------

@pytest.mark.parametrize(
    ("cls", "value", "encoded", "schema"),
    [
        (ShortConverter, -2, struct.pack(">h", -2), OPTIONAL_INT16_SCHEMA),
        (IntegerConverter, 123456, b"\x00\x01\xe2\x40", OPTIONAL_INT32_SCHEMA),
        (LongConverter, -1, b"\xff" * 8, OPTIONAL_INT64_SCHEMA),
        (FloatConverter, 1.5, struct.pack(">f", 1.5), OPTIONAL_FLOAT32_SCHEMA),
        (DoubleConverter, 0.1, struct.pack(">d", 0.1), OPTIONAL_FLOAT64_SCHEMA),
    ],
)
def test_number_converters_are_big_endian_and_null_safe(
    cls: type, value: object, encoded: bytes, schema: object
) -> None:
    converter = configured(cls)
    assert converter.from_connect_data(T, None, None, value) == encoded
    assert converter.to_connect_data(T, None, encoded) == (schema, value)
    assert converter.from_connect_data(T, None, None, None) is None
    assert converter.to_connect_data(T, None, None) == (schema, None)


def test_number_converters_do_not_check_the_schema_but_the_value_type() -> None:
    converter = configured(IntegerConverter)
    assert converter.from_connect_data(T, None, STRING_SCHEMA, 7) == b"\x00\x00\x00\x07"
    with pytest.raises(DataError) as raised:
        converter.from_connect_data(T, None, INT32_SCHEMA, "7")
    assert str(raised.value) == "Failed to serialize to integer (was class str): "
    with pytest.raises(DataError, match=r"^Failed to serialize to float \(was class int\): $"):
        configured(FloatConverter).from_connect_data(T, None, FLOAT32_SCHEMA, 1)
    with pytest.raises(DataError, match=r"^Failed to serialize to short: "):
        configured(ShortConverter).from_connect_data(T, None, INT16_SCHEMA, 40000)
    with pytest.raises(DataError, match=r"was class bool"):
        converter.from_connect_data(T, None, None, True)


def test_number_converters_refuse_bytes_of_the_wrong_size() -> None:
    with pytest.raises(DataError) as raised:
        configured(IntegerConverter).to_connect_data(T, None, b"\x00\x01")
    assert str(raised.value) == (
        "Failed to deserialize integer: Size of data received by IntegerDeserializer is not 4"
    )
    with pytest.raises(DataError, match=r"^Failed to deserialize long: .*Deserializer is not 8"):
        configured(LongConverter).to_connect_data(T, None, b"\x00")
    with pytest.raises(DataError, match=r"DoubleDeserializer is not 8"):
        configured(DoubleConverter).to_connect_data(T, None, b"")


def test_float_converter_overflows_to_infinity_as_javas_cast() -> None:
    converter = configured(FloatConverter)
    encoded = converter.from_connect_data(T, None, None, 1e300)
    assert converter.to_connect_data(T, None, encoded).value == float("inf")


# --- BooleanConverter ---------------------------------------------------------------------

def test_boolean_converter() -> None:
    converter = configured(BooleanConverter)
    assert converter.from_connect_data(T, None, BOOLEAN_SCHEMA, True) == b"\x01"
    assert converter.from_connect_data(T, None, None, False) == b"\x00"
    assert converter.from_connect_data(T, None, None, None) is None
    assert converter.to_connect_data(T, None, b"\x01") == (OPTIONAL_BOOLEAN_SCHEMA, True)
    assert converter.to_connect_data(T, None, b"\x00") == (OPTIONAL_BOOLEAN_SCHEMA, False)
    assert converter.to_connect_data(T, None, None) == (OPTIONAL_BOOLEAN_SCHEMA, None)


def test_boolean_converter_errors() -> None:
    converter = configured(BooleanConverter)
    with pytest.raises(DataError, match=r"^Invalid schema type for BooleanConverter: INT8$"):
        converter.from_connect_data(T, None, INT8_SCHEMA, True)
    with pytest.raises(
        DataError, match=r"^BooleanConverter is not compatible with objects of type class int$"
    ):
        converter.from_connect_data(T, None, None, 1)
    with pytest.raises(DataError, match=r"Size of data received by BooleanDeserializer is not 1"):
        converter.to_connect_data(T, None, b"\x01\x00")
    with pytest.raises(DataError, match=r"Unexpected byte received by BooleanDeserializer: -1$"):
        converter.to_connect_data(T, None, b"\xff")


# --- SimpleHeaderConverter ----------------------------------------------------------------

def test_simple_header_converter_narrows_numbers_as_kafka() -> None:
    converter = SimpleHeaderConverter()
    converter.configure({})
    assert converter.to_connect_header(T, "h", b"42") == (INT8_SCHEMA, 42)
    assert converter.to_connect_header(T, "h", b"1.5") == (FLOAT32_SCHEMA, 1.5)
    assert converter.to_connect_header(T, "h", b"true") == (BOOLEAN_SCHEMA, True)
    assert converter.to_connect_header(T, "h", b"hello") == (STRING_SCHEMA, "hello")
    assert converter.to_connect_header(T, "h", b"") == (STRING_SCHEMA, "")
    assert converter.to_connect_header(T, "h", b"null") == (None, None)
    assert converter.to_connect_header(T, "h", None) == (None, None)
    assert converter.to_connect_header(T, "h", b"2020-01-02").value == datetime.date(2020, 1, 2)


def test_simple_header_converter_writes_values_text() -> None:
    converter = SimpleHeaderConverter()
    assert converter.from_connect_header(T, "h", STRING_SCHEMA, "raw text") == b"raw text"
    assert converter.from_connect_header(T, "h", INT32_SCHEMA, 7) == b"7"
    assert converter.from_connect_header(T, "h", None, [1, "a"]) == b'[1,"a"]'
    assert converter.from_connect_header(T, "h", None, {"k": True}) == b'{"k":true}'
    assert converter.from_connect_header(T, "h", BYTES_SCHEMA, b"\x00") == b"AA=="
    assert converter.from_connect_header(T, "h", None, None) is None
    moment = datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    assert converter.from_connect_header(T, "h", Timestamp.SCHEMA, moment) == (
        b"2020-01-02T03:04:05.000Z"
    )
    assert converter.from_connect_header(T, "h", Date.SCHEMA, datetime.date(2020, 1, 2)) == (
        b"2020-01-02"
    )
    schema = SchemaBuilder.struct().field("a", INT32_SCHEMA).build()
    assert converter.from_connect_header(T, "h", schema, Struct(schema).put("a", 1)) == b'{"a":1}'


def test_simple_header_converter_round_trips() -> None:
    converter = SimpleHeaderConverter()
    for schema, value in ((INT8_SCHEMA, 5), (STRING_SCHEMA, "x"), (BOOLEAN_SCHEMA, False),
                          (SchemaBuilder.array(INT8_SCHEMA).build(), [1, 2])):
        encoded = converter.from_connect_header(T, "h", schema, value)
        assert converter.to_connect_header(T, "h", encoded) == (schema, value)


def test_string_converter_writes_a_float32_as_java_float() -> None:
    read_back = configured(FloatConverter).to_connect_data(T, None, struct.pack(">f", 0.1))
    assert read_back.value != 0.1
    assert configured(StringConverter).from_connect_data(T, None, *read_back) == b"0.1"
    assert configured(StringConverter).from_connect_data(T, None, None, read_back.value) == (
        b"0.10000000149011612"
    )
