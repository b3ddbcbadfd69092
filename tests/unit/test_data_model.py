"""The Connect data model: schemas, builder rules, structs, logical types, headers."""

from __future__ import annotations

import datetime
import decimal
import pickle

import pytest

from connect_grpc.data.errors import DataError, SchemaBuilderError
from connect_grpc.data.headers import ConnectHeaders, Header
from connect_grpc.data.logical import Date, Decimal, Time, Timestamp
from connect_grpc.data.schema import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Field,
    Schema,
    SchemaBuilder,
    Type,
    validate_value,
)
from connect_grpc.data.struct import Struct

UTC = datetime.UTC


def person_schema() -> Schema:
    return (
        SchemaBuilder.struct()
        .name("Person")
        .field("id", INT32_SCHEMA)
        .field("name", OPTIONAL_STRING_SCHEMA)
        .field("age", SchemaBuilder.int8().default_value(18).build())
        .build()
    )


# --- Type and Schema ---------------------------------------------------------------------

def test_type_values_are_kafka_names_and_str_is_upper_case() -> None:
    assert Type.INT32.value == "int32"
    assert Type.BOOLEAN.value == "boolean"
    assert str(Type.FLOAT64) == "FLOAT64"
    assert Type.STRING.is_primitive
    assert not Type.STRUCT.is_primitive
    assert not Type.MAP.is_primitive


def test_schemas_are_equal_by_value_and_hashable() -> None:
    first = SchemaBuilder.string().optional().name("n").version(2).doc("d").parameter("a", "b")
    second = SchemaBuilder.string().optional().name("n").version(2).doc("d").parameter("a", "b")
    assert first.build() == second.build()
    assert hash(first.build()) == hash(second.build())
    assert len({first.build(), second.build()}) == 1
    assert SchemaBuilder.string().build() == STRING_SCHEMA
    assert SchemaBuilder.string().optional().build() != STRING_SCHEMA
    assert SchemaBuilder.string().doc("x").build() != STRING_SCHEMA


def test_schema_defaults_of_different_python_types_differ() -> None:
    assert (SchemaBuilder.bool().default_value(True).build()
            != SchemaBuilder.bool().default_value(False).build())


def test_schema_is_immutable() -> None:
    with pytest.raises(AttributeError):
        STRING_SCHEMA.optional = True  # type: ignore[misc]


def test_schema_survives_pickle() -> None:
    schema = person_schema()
    assert pickle.loads(pickle.dumps(schema)) == schema


def test_fields_and_sub_schemas_of_the_wrong_type_raise_kafkas_messages() -> None:
    with pytest.raises(DataError, match=r"^Cannot list fields on non-struct type$"):
        _ = STRING_SCHEMA.fields
    with pytest.raises(DataError, match=r"^Cannot look up fields on non-struct type$"):
        STRING_SCHEMA.field("x")
    with pytest.raises(DataError, match=r"^Cannot look up key schema on non-map type$"):
        _ = SchemaBuilder.array(INT32_SCHEMA).build().key_schema
    with pytest.raises(DataError, match=r"value schema on non-array and non-map type"):
        _ = STRING_SCHEMA.value_schema


def test_struct_schema_lists_fields_in_order_and_looks_them_up() -> None:
    schema = person_schema()
    assert [f.name for f in schema.fields] == ["id", "name", "age"]
    assert schema.field("name") == Field("name", 1, OPTIONAL_STRING_SCHEMA)
    assert schema.field("missing") is None
    array = SchemaBuilder.array(INT32_SCHEMA).build()
    assert array.value_schema == INT32_SCHEMA
    mapping = SchemaBuilder.map(STRING_SCHEMA, INT64_SCHEMA).build()
    assert (mapping.key_schema, mapping.value_schema) == (STRING_SCHEMA, INT64_SCHEMA)
    assert repr(schema) == "Schema{Person:STRUCT}"
    assert repr(INT32_SCHEMA) == "Schema{INT32}"


# --- validate_value ----------------------------------------------------------------------

def test_null_for_a_required_value_or_field() -> None:
    with pytest.raises(DataError) as raised:
        validate_value(STRING_SCHEMA, None)
    assert str(raised.value) == "Invalid value: null used for required value, schema type: STRING"
    with pytest.raises(DataError) as raised:
        validate_value(STRING_SCHEMA, None, "f")
    assert str(raised.value) == (
        'Invalid value: null used for required field: "f", schema type: STRING'
    )
    validate_value(OPTIONAL_STRING_SCHEMA, None)


def test_wrong_python_class_names_schema_name_type_and_location() -> None:
    with pytest.raises(DataError) as raised:
        validate_value(SchemaBuilder.int32().name("n").build(), "1", "f")
    assert str(raised.value) == (
        'Invalid Java object for schema "n" with type INT32: class str for field: "f"'
    )
    with pytest.raises(DataError) as raised:
        validate_value(INT32_SCHEMA, 1.5)
    assert str(raised.value) == (
        "Invalid Java object for schema with type INT32: class float for value"
    )


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (SchemaBuilder.int32().build(), True),  # bool is not an int here
        (SchemaBuilder.float64().build(), 1),
        (SchemaBuilder.bool().build(), 1),
        (SchemaBuilder.bytes().build(), "x"),
        (SchemaBuilder.string().build(), b"x"),
        (SchemaBuilder.array(INT32_SCHEMA).build(), (1, 2)),
        (SchemaBuilder.map(STRING_SCHEMA, INT32_SCHEMA).build(), [("a", 1)]),
        (Decimal.schema(2), b"\x00"),
        (Timestamp.SCHEMA, 5),
        (Time.SCHEMA, datetime.datetime(2020, 1, 1)),
    ],
)
def test_values_of_another_class_are_refused(schema: Schema, value: object) -> None:
    with pytest.raises(DataError, match=r"Invalid Java object for schema"):
        validate_value(schema, value)


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (SchemaBuilder.int8().build(), -128),
        (SchemaBuilder.int16().build(), 32767),
        (SchemaBuilder.int64().build(), 2**63 - 1),
        (SchemaBuilder.float32().build(), 1.5),
        (SchemaBuilder.bool().build(), False),
        (SchemaBuilder.bytes().build(), bytearray(b"x")),
        (SchemaBuilder.bytes().build(), memoryview(b"x")),
        (Decimal.schema(2), decimal.Decimal("1.23")),
        (Date.SCHEMA, datetime.date(2020, 1, 1)),
        (Time.SCHEMA, datetime.time(1, 2)),
        (Timestamp.SCHEMA, datetime.datetime(2020, 1, 1, tzinfo=UTC)),
    ],
)
def test_values_of_the_right_class_are_accepted(schema: Schema, value: object) -> None:
    validate_value(schema, value)


def test_integers_out_of_the_types_range_are_refused() -> None:
    with pytest.raises(DataError, match=r"^Invalid value 128 for schema with type INT8: out of"):
        validate_value(SchemaBuilder.int8().build(), 128)
    with pytest.raises(DataError, match=r"out of range"):
        validate_value(INT32_SCHEMA, 2**31)


def test_array_and_map_entries_are_validated_with_their_location() -> None:
    array = SchemaBuilder.array(INT32_SCHEMA).build()
    with pytest.raises(DataError) as raised:
        validate_value(array, [1, None], "xs")
    assert str(raised.value) == (
        'Invalid value: null used for required element of array field: "xs", schema type: INT32'
    )
    mapping = SchemaBuilder.map(STRING_SCHEMA, INT32_SCHEMA).build()
    with pytest.raises(DataError, match=r"for key of map value$"):
        validate_value(mapping, {1: 1})
    with pytest.raises(DataError, match=r"for value of map value$"):
        validate_value(mapping, {"a": "b"})


def test_struct_with_another_schema_is_refused() -> None:
    other = SchemaBuilder.struct().field("id", INT32_SCHEMA).build()
    with pytest.raises(DataError, match=r"^Struct schemas do not match\.$"):
        validate_value(person_schema(), Struct(other).put("id", 1))


# --- SchemaBuilder rules -----------------------------------------------------------------

def test_builder_is_not_a_schema_and_builds_every_attribute() -> None:
    builder = (
        SchemaBuilder.struct().optional().name("n").version(3).doc("d")
        .parameters({"p": "1"}).parameter("q", "2").field("a", INT32_SCHEMA)
    )
    assert not isinstance(builder, Schema)
    schema = builder.build()
    assert (schema.type, schema.optional, schema.name, schema.version, schema.doc) == (
        Type.STRUCT, True, "n", 3, "d"
    )
    assert schema.parameters == {"p": "1", "q": "2"}
    assert schema.default is None
    assert SchemaBuilder.type(Type.INT16).build() == SchemaBuilder.int16().build()
    assert SchemaBuilder.int8().build().parameters is None
    assert SchemaBuilder.int8().parameters({}).build().parameters is None


@pytest.mark.parametrize(
    ("builder", "attribute"),
    [
        (lambda: SchemaBuilder.string().name("a").name("b"), "name"),
        (lambda: SchemaBuilder.string().version(1).version(2), "version"),
        (lambda: SchemaBuilder.string().doc("a").doc("b"), "doc"),
        (lambda: SchemaBuilder.string().optional().required(), "optional"),
        (lambda: SchemaBuilder.string().default_value("a").default_value("b"), "default"),
    ],
)
def test_setting_an_attribute_twice_to_another_value_raises(
    builder: object, attribute: str
) -> None:
    with pytest.raises(SchemaBuilderError) as raised:
        builder()  # type: ignore[operator]
    assert str(raised.value) == f"Invalid SchemaBuilder call: {attribute} has already been set."


def test_setting_an_attribute_again_to_the_same_value_is_allowed() -> None:
    schema = SchemaBuilder.string().name("a").name("a").optional().optional().build()
    assert (schema.name, schema.optional) == ("a", True)


def test_default_must_be_valid_for_the_schema() -> None:
    with pytest.raises(SchemaBuilderError, match=r"^Invalid default value: Invalid Java object"):
        SchemaBuilder.int32().default_value("x")
    with pytest.raises(SchemaBuilderError, match=r"Invalid default value"):
        SchemaBuilder.string().default_value(None)
    assert SchemaBuilder.string().optional().default_value(None).build().default is None
    assert SchemaBuilder.int64().default_value(7).build().default == 7


def test_struct_default_is_validated_against_the_struct_built_so_far() -> None:
    inner = SchemaBuilder.struct().field("a", INT32_SCHEMA)
    default = Struct(inner.build()).put("a", 1)
    schema = inner.default_value(default).build()
    assert schema.default == default


def test_field_rules() -> None:
    with pytest.raises(SchemaBuilderError, match=r"^Cannot create fields on type STRING$"):
        SchemaBuilder.string().field("a", INT32_SCHEMA)
    with pytest.raises(SchemaBuilderError, match=r"^fieldName cannot be null\.$"):
        SchemaBuilder.struct().field("", INT32_SCHEMA)
    with pytest.raises(SchemaBuilderError, match=r"^fieldSchema for field a cannot be null\.$"):
        SchemaBuilder.struct().field("a", None)  # type: ignore[arg-type]
    with pytest.raises(
        SchemaBuilderError, match=r"^Cannot create field because of field name duplication a$"
    ):
        SchemaBuilder.struct().field("a", INT32_SCHEMA).field("a", STRING_SCHEMA)
    with pytest.raises(SchemaBuilderError, match=r"^valueSchema cannot be null\.$"):
        SchemaBuilder.array(None)  # type: ignore[arg-type]
    with pytest.raises(SchemaBuilderError, match=r"^keySchema cannot be null\.$"):
        SchemaBuilder.map(None, INT32_SCHEMA)  # type: ignore[arg-type]


def test_a_builder_given_as_a_sub_schema_is_built() -> None:
    schema = SchemaBuilder.array(SchemaBuilder.int32()).build()  # type: ignore[arg-type]
    assert schema.value_schema == INT32_SCHEMA


# --- Struct ------------------------------------------------------------------------------

def test_struct_put_validates_and_get_falls_back_to_the_default() -> None:
    struct = Struct(person_schema()).put("id", 1)
    assert struct.get("id") == 1
    assert struct.get("age") == 18
    assert struct.get_without_default("age") is None
    assert struct.get("name") is None
    with pytest.raises(DataError) as raised:
        struct.put("id", 2**40)
    assert "out of range" in str(raised.value)
    with pytest.raises(DataError) as raised:
        struct.put("id", None)
    assert str(raised.value) == (
        'Invalid value: null used for required field: "id", schema type: INT32'
    )
    with pytest.raises(DataError, match=r"^nope is not a valid field name$"):
        struct.put("nope", 1)
    with pytest.raises(DataError, match=r"^nope is not a valid field name$"):
        struct.get("nope")


def test_struct_put_accepts_a_field() -> None:
    schema = person_schema()
    struct = Struct(schema).put(schema.fields[0], 5)
    assert struct.get(schema.fields[0]) == 5


def test_struct_validate_requires_required_fields_without_default() -> None:
    struct = Struct(person_schema())
    with pytest.raises(DataError, match='null used for required field: "id"'):
        struct.validate()
    struct.put("id", 1)
    struct.validate()


def test_struct_needs_a_struct_schema() -> None:
    with pytest.raises(DataError, match=r"^Not a struct schema: Schema\{INT32\}$"):
        Struct(INT32_SCHEMA)


def test_struct_equality_hash_and_repr() -> None:
    schema = person_schema()
    first = Struct(schema).put("id", 1).put("name", "x")
    second = Struct(schema).put("id", 1).put("name", "x")
    assert first == second
    assert hash(first) == hash(second)
    assert first != Struct(schema).put("id", 2)
    assert repr(first) == "Struct{id=1,name=x}"
    nested = SchemaBuilder.struct().field("flag", SchemaBuilder.bool().build()).field(
        "xs", SchemaBuilder.array(INT32_SCHEMA).build()
    ).build()
    assert repr(Struct(nested).put("flag", True).put("xs", [1, 2])) == "Struct{flag=true,xs=[1, 2]}"


def test_struct_hash_with_list_and_map_values() -> None:
    schema = SchemaBuilder.struct().field(
        "m", SchemaBuilder.map(STRING_SCHEMA, SchemaBuilder.array(INT32_SCHEMA).build()).build()
    ).build()
    assert hash(Struct(schema).put("m", {"a": [1]})) == hash(Struct(schema).put("m", {"a": [1]}))


# --- logical types -----------------------------------------------------------------------

def test_decimal_schema_and_encoding_is_big_endian_twos_complement() -> None:
    schema = Decimal.schema(2)
    assert schema.type is Type.BYTES
    assert schema.name == "org.apache.kafka.connect.data.Decimal"
    assert schema.version == 1
    assert schema.parameters == {"scale": "2"}
    assert Decimal.from_logical(schema, decimal.Decimal("1.56")) == b"\x00\x9c"
    assert Decimal.from_logical(schema, decimal.Decimal("-1.56")) == b"\xff\x64"
    assert Decimal.from_logical(schema, decimal.Decimal("0.00")) == b"\x00"
    assert Decimal.from_logical(schema, decimal.Decimal("1.27")) == b"\x7f"
    assert Decimal.from_logical(schema, decimal.Decimal("1.28")) == b"\x00\x80"
    assert Decimal.from_logical(schema, decimal.Decimal("-1.28")) == b"\x80"


def test_decimal_round_trips_exactly_beyond_the_context_precision() -> None:
    schema = Decimal.schema(10)
    value = decimal.Decimal("-123456789012345678901234567890.0123456789")
    assert Decimal.to_logical(schema, Decimal.from_logical(schema, value)) == value
    assert str(Decimal.to_logical(Decimal.schema(2), b"\x00\x9c")) == "1.56"
    assert str(Decimal.to_logical(Decimal.schema(0), b"\x9c")) == "-100"


def test_decimal_scale_mismatch_and_bad_schemas() -> None:
    with pytest.raises(DataError) as raised:
        Decimal.from_logical(Decimal.schema(2), decimal.Decimal("1.5"))
    assert str(raised.value) == (
        "Decimal value has mismatching scale for given Decimal schema. "
        "Schema has scale 2, value has scale 1."
    )
    with pytest.raises(DataError, match=r"scale parameter not found"):
        Decimal.from_logical(SchemaBuilder.bytes().build(), decimal.Decimal("1"))
    with pytest.raises(DataError, match=r"Invalid scale parameter found in Decimal schema"):
        Decimal.to_logical(SchemaBuilder.bytes().parameter("scale", "x").build(), b"\x01")
    with pytest.raises(DataError, match=r"not a finite number"):
        Decimal.from_logical(Decimal.schema(0), decimal.Decimal("NaN"))


def test_date_is_days_since_epoch_and_must_be_midnight() -> None:
    expected = SchemaBuilder.int32().name("org.apache.kafka.connect.data.Date").version(1)
    assert expected.build() == Date.SCHEMA
    assert Date.from_logical(Date.SCHEMA, datetime.date(1970, 1, 2)) == 1
    assert Date.from_logical(Date.SCHEMA, datetime.date(1969, 12, 31)) == -1
    assert Date.from_logical(Date.SCHEMA, datetime.datetime(2020, 1, 1, tzinfo=UTC)) == 18262
    assert Date.to_logical(Date.SCHEMA, 18262) == datetime.date(2020, 1, 1)
    with pytest.raises(DataError) as raised:
        Date.from_logical(Date.SCHEMA, datetime.datetime(2020, 1, 1, 0, 0, 1))
    assert str(raised.value) == (
        "Kafka Connect Date type should not have any time fields set to non-zero values."
    )
    with pytest.raises(DataError, match=r"^Requested conversion of Date object but the schema"):
        Date.from_logical(INT32_SCHEMA, datetime.date(2020, 1, 1))


def test_time_is_millis_since_midnight() -> None:
    assert Time.SCHEMA.type is Type.INT32
    assert Time.from_logical(Time.SCHEMA, datetime.time(1, 0, 0, 5000)) == 3_600_005
    assert Time.to_logical(Time.SCHEMA, 3_600_005) == datetime.time(1, 0, 0, 5000)
    tz = datetime.timezone(datetime.timedelta(hours=1))
    assert Time.from_logical(Time.SCHEMA, datetime.time(1, 0, tzinfo=tz)) == 0
    with pytest.raises(DataError, match=r"should not have any date fields"):
        Time.from_logical(Time.SCHEMA, datetime.time(0, 30, tzinfo=tz))
    with pytest.raises(DataError, match=r"^Time values must use number of milliseconds"):
        Time.to_logical(Time.SCHEMA, -1)
    with pytest.raises(DataError, match=r"^Requested conversion of Time object"):
        Time.from_logical(INT32_SCHEMA, datetime.time(0))


def test_timestamp_is_millis_since_epoch_and_naive_means_utc() -> None:
    assert Timestamp.SCHEMA.type is Type.INT64
    moment = datetime.datetime(2020, 1, 1, 0, 0, 0, 123000, tzinfo=UTC)
    assert Timestamp.from_logical(Timestamp.SCHEMA, moment) == 1_577_836_800_123
    naive = moment.replace(tzinfo=None)
    assert Timestamp.from_logical(Timestamp.SCHEMA, naive) == 1_577_836_800_123
    assert Timestamp.to_logical(Timestamp.SCHEMA, 1_577_836_800_123) == moment
    assert Timestamp.to_logical(Timestamp.SCHEMA, -1).tzinfo is UTC
    assert Timestamp.from_logical(
        Timestamp.SCHEMA, datetime.datetime(1969, 12, 31, 23, 59, 59, 999500, tzinfo=UTC)
    ) == -1
    with pytest.raises(DataError, match=r"^Requested conversion of Timestamp object"):
        Timestamp.to_logical(INT64_SCHEMA, 0)
    with pytest.raises(DataError, match=r"out of range"):
        Timestamp.to_logical(Timestamp.SCHEMA, 2**62)


# --- headers -----------------------------------------------------------------------------

def test_header_iterates_as_a_key_value_pair() -> None:
    key, value = Header("k", STRING_SCHEMA, "v")
    assert (key, value) == ("k", "v")
    headers = ConnectHeaders.from_raw((("a", b"1"), ("b", None)))
    assert [(k, v) for k, v in headers] == [("a", b"1"), ("b", None)]
    assert all(h.schema is None for h in headers)


def test_headers_add_validates_against_the_schema() -> None:
    headers = ConnectHeaders().add("a", 1, INT32_SCHEMA).add("b", "free")
    assert [h.schema for h in headers] == [INT32_SCHEMA, None]
    with pytest.raises(DataError, match=r"Invalid Java object"):
        headers.add("c", "x", INT32_SCHEMA)
    with pytest.raises(DataError, match=r"A null value requires an optional schema"):
        headers.add("c", None, INT32_SCHEMA)
    assert len(headers) == 2


def test_headers_lookups_remove_and_retain_latest() -> None:
    headers = ConnectHeaders()
    for key, value in (("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5)):
        headers.add(key, value)
    assert headers.last_with_name("a") == Header("a", None, 3)
    assert headers.last_with_name("z") is None
    assert [h.value for h in headers.all_with_name("b")] == [2, 5]
    copy = headers.duplicate().retain_latest("a")
    assert [(h.key, h.value) for h in copy] == [("b", 2), ("a", 3), ("c", 4), ("b", 5)]
    assert len(headers) == 5  # the duplicate is independent
    latest = headers.duplicate().retain_latest()
    assert [(h.key, h.value) for h in latest] == [("a", 3), ("c", 4), ("b", 5)]
    headers.remove("b")
    assert [h.key for h in headers] == ["a", "a", "c"]
    headers.add_header(Header("d", None, b"x"))
    assert headers.last_with_name("d") == Header("d", None, b"x")
    assert ConnectHeaders.from_raw(headers) == headers
    assert ConnectHeaders.from_raw(headers) is not headers
