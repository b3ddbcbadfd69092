"""Our JsonConverter against Apache Kafka Connect 4.1.1's own, both ways (no broker needed).

Each case is Connect data and a converter config. Our converter writes it; Kafka's
JsonConverter (run by tests/interop/JsonInterop.java in one JVM for all cases) reads our
bytes and prints a canonical description of the schema and value it got, which must equal
the description of our data (direction 1); Kafka then writes that data back, and our
converter must read Kafka's bytes as the same Python data, while Kafka's JSON must equal
ours once parsed (direction 2).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import struct as binary
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.data.converters.json import JsonConverter
from connect_grpc.data.logical import (
    DATE_LOGICAL_NAME,
    Date,
    Decimal,
    Time,
    Timestamp,
    unscaled_and_scale,
)
from connect_grpc.data.schema import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_BOOLEAN_SCHEMA,
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    TIME_LOGICAL_NAME,
    TIMESTAMP_LOGICAL_NAME,
    Schema,
    SchemaBuilder,
    Type,
)
from connect_grpc.data.struct import Struct
from tests.interop.kafka_json import compile_program, ensure_json_libs, run_program

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

UTC = datetime.UTC
NUMERIC = {"decimal.format": "NUMERIC"}
SCHEMALESS = {"schemas.enable": "false"}
KEEP_NULLS = {"replace.null.with.default": "false"}


@dataclass
class Case:
    name: str
    schema: Schema | None
    value: Any
    configs: dict[str, str] = field(default_factory=dict)
    #: What a reader gets back, when not (schema, value) itself.
    expected: tuple[Schema | None, Any] | None = None


# --- canonical descriptions (the same text JsonInterop.java prints) ----------------------------


def _b64_text(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def describe_schema(schema: Schema | None) -> str:
    if schema is None:
        return "null"
    params = (
        "null" if schema.parameters is None
        else ";".join(f"{k}={v}" for k, v in sorted(schema.parameters.items()))
    )
    parts = [
        f"{{{schema.type.name}{'?' if schema.optional else ''}",
        f"name={schema.name if schema.name is not None else 'null'}",
        f"version={schema.version if schema.version is not None else 'null'}",
        f"doc={_b64_text(schema.doc) if schema.doc is not None else 'null'}",
        f"params={params}",
        f"default={describe_value(schema, schema.default)}",
    ]
    if schema.type is Type.ARRAY:
        parts.append(f"items={describe_schema(schema.value_schema)}")
    elif schema.type is Type.MAP:
        parts.append(f"keys={describe_schema(schema.key_schema)}")
        parts.append(f"values={describe_schema(schema.value_schema)}")
    elif schema.type is Type.STRUCT:
        fields = ",".join(f"{f.name}:{describe_schema(f.schema)}" for f in schema.fields)
        parts.append(f"fields=[{fields}]")
    return "|".join(parts) + "}"


_INT_PREFIX = {Type.INT8: "i8", Type.INT16: "i16", Type.INT32: "i32", Type.INT64: "i64"}


def describe_value(schema: Schema | None, value: Any) -> str:
    if value is None:
        return "null"
    if schema is not None and schema.name in (DATE_LOGICAL_NAME, TIME_LOGICAL_NAME,
                                             TIMESTAMP_LOGICAL_NAME):
        return f"ms:{_millis(schema, value)}"
    if isinstance(value, decimal.Decimal):
        unscaled, scale = unscaled_and_scale(value)
        return f"dec:{unscaled}e{scale}"
    if isinstance(value, bool):
        return f"bool:{'true' if value else 'false'}"
    if isinstance(value, int):
        prefix = _INT_PREFIX[schema.type] if schema is not None else "i64"
        return f"{prefix}:{value}"
    if isinstance(value, float):
        if schema is not None and schema.type is Type.FLOAT32:
            return f"f32:{binary.pack('>f', value).hex()}"
        return f"f64:{binary.pack('>d', value).hex()}"
    if isinstance(value, str):
        return f"str:{_b64_text(value)}"
    if isinstance(value, bytes | bytearray):
        return f"bytes:{base64.b64encode(value).decode('ascii')}"
    if isinstance(value, list):
        item_schema = schema.value_schema if schema is not None else None
        return "[" + ",".join(describe_value(item_schema, item) for item in value) + "]"
    if isinstance(value, dict):
        key_schema = schema.key_schema if schema is not None else None
        value_schema = schema.value_schema if schema is not None else None
        entries = sorted(
            f"{describe_value(key_schema, k)}={describe_value(value_schema, v)}"
            for k, v in value.items()
        )
        return "{" + ",".join(entries) + "}"
    if isinstance(value, Struct):
        fields = ",".join(
            f"{f.name}={describe_value(f.schema, value.get_without_default(f.name))}"
            for f in value.schema.fields
        )
        return f"Struct{{{fields}}}"
    raise AssertionError(f"no description for {value!r}")


def _millis(schema: Schema, value: Any) -> int:
    if schema.name == DATE_LOGICAL_NAME:
        return Date.from_logical(schema, value) * 86_400_000
    if schema.name == TIME_LOGICAL_NAME:
        return Time.from_logical(schema, value)
    return Timestamp.from_logical(schema, value)


# --- the cases ---------------------------------------------------------------------------------


def _struct_cases() -> list[Case]:
    point = SchemaBuilder.struct().name("Point").field("x", INT32_SCHEMA).field(
        "y", OPTIONAL_INT32_SCHEMA).build()
    everything = (
        SchemaBuilder.struct().name("com.example.Everything").version(7).doc("all of it")
        .field("i8", INT8_SCHEMA).field("i16", INT16_SCHEMA).field("i32", INT32_SCHEMA)
        .field("i64", INT64_SCHEMA).field("f32", FLOAT32_SCHEMA).field("f64", FLOAT64_SCHEMA)
        .field("flag", BOOLEAN_SCHEMA).field("text", STRING_SCHEMA).field("raw", BYTES_SCHEMA)
        .field("maybe", OPTIONAL_STRING_SCHEMA)
        .field("points", SchemaBuilder.array(point).build())
        .field("by_name", SchemaBuilder.map(STRING_SCHEMA, point).optional().build())
        .field("by_id", SchemaBuilder.map(INT64_SCHEMA, OPTIONAL_STRING_SCHEMA).build())
        .field("matrix", SchemaBuilder.array(SchemaBuilder.array(FLOAT64_SCHEMA).build()).build())
        .field("price", Decimal.schema(2))
        .field("day", Date.SCHEMA).field("time", Time.SCHEMA).field("at", Timestamp.SCHEMA)
        .field("nested", SchemaBuilder.struct().optional().field("p", point).build())
        .build()
    )
    value = (
        Struct(everything).put("i8", -128).put("i16", 32767).put("i32", -(2**31))
        .put("i64", 2**63 - 1).put("f32", 3.25).put("f64", -1e20).put("flag", True)
        .put("text", 'ünï "côdé"\n\t\\').put("raw", b"\x00\xff\x10")
        .put("points", [Struct(point).put("x", 1), Struct(point).put("x", 2).put("y", 3)])
        .put("by_name", {"a": Struct(point).put("x", 5).put("y", -5)})
        .put("by_id", {1: "one", -2: None})
        .put("matrix", [[1.5, -2.25], []])
        .put("price", decimal.Decimal("-12345.67"))
        .put("day", datetime.date(1999, 12, 31))
        .put("time", datetime.time(23, 59, 59, 999000))
        .put("at", datetime.datetime(1969, 7, 20, 20, 17, 40, 123000, tzinfo=UTC))
    )
    return [
        Case("struct-everything", everything, value),
        Case("struct-everything-numeric", everything, value, NUMERIC),
        Case("struct-everything-schemaless", everything, value, SCHEMALESS),
    ]


def _defaults_cases() -> list[Case]:
    with_defaults = (
        SchemaBuilder.struct()
        .field("count", SchemaBuilder.int32().default_value(42).build())
        .field("label", SchemaBuilder.string().optional().default_value("none").build())
        .field("ratio", SchemaBuilder.float64().optional().default_value(0.5).build())
        .field("price", Decimal.builder(3).optional().default_value(decimal.Decimal("9.990"))
               .build())
        .field("day", Date.builder().optional().default_value(datetime.date(2020, 2, 29))
               .build())
        .build()
    )
    empty = Struct(with_defaults)
    filled = (
        Struct(with_defaults).put("count", 1).put("label", "x").put("ratio", 2.0)
        .put("price", decimal.Decimal("1.000")).put("day", datetime.date(2021, 1, 1))
    )
    defaulted = (
        Struct(with_defaults).put("count", 42).put("label", "none").put("ratio", 0.5)
        .put("price", decimal.Decimal("9.990")).put("day", datetime.date(2020, 2, 29))
    )
    optional_nulls = Struct(with_defaults).put("count", 42)
    return [
        Case("defaults-replace-null", with_defaults, empty, expected=(with_defaults, defaulted)),
        Case("defaults-keep-null", with_defaults, optional_nulls, KEEP_NULLS),
        Case("defaults-filled", with_defaults, filled),
        Case("defaults-numeric", with_defaults, filled, NUMERIC),
        Case("default-top-level", SchemaBuilder.int64().default_value(-7).build(), None,
             expected=(SchemaBuilder.int64().default_value(-7).build(), -7)),
    ]


def _primitive_cases() -> list[Case]:
    cases = [
        Case("int8", INT8_SCHEMA, 127), Case("int16", INT16_SCHEMA, -32768),
        Case("int32", INT32_SCHEMA, 2**31 - 1), Case("int64", INT64_SCHEMA, -(2**63)),
        Case("float32", FLOAT32_SCHEMA, -0.125), Case("float64", FLOAT64_SCHEMA, 1e20),
        Case("float64-small", FLOAT64_SCHEMA, 1.5e-7), Case("boolean", BOOLEAN_SCHEMA, False),
        Case("string", STRING_SCHEMA, "plain"), Case("string-empty", STRING_SCHEMA, ""),
        Case("bytes", BYTES_SCHEMA, bytes(range(256))), Case("bytes-empty", BYTES_SCHEMA, b""),
    ]
    named = (
        SchemaBuilder.string().optional().name("com.example.Name").version(3).doc("a doc")
        .parameters({"b": "2", "a": "1"}).build()
    )
    cases.append(Case("name-version-doc-params", named, "named"))
    for schema in (OPTIONAL_INT32_SCHEMA, OPTIONAL_INT64_SCHEMA, OPTIONAL_FLOAT64_SCHEMA,
                   OPTIONAL_BOOLEAN_SCHEMA, OPTIONAL_STRING_SCHEMA, OPTIONAL_BYTES_SCHEMA):
        cases.append(Case(f"null-{schema.type.value}", schema, None))
    return cases


def _logical_cases() -> list[Case]:
    cases = []
    for scale, text in ((2, "1.56"), (2, "-1.56"), (0, "0"), (5, "0.00001"),
                        (10, "-98765432109876543210.0123456789"), (-2, "1200E+2")):
        schema = Decimal.schema(scale)
        cases.append(Case(f"decimal-{text}", schema, decimal.Decimal(text)))
        cases.append(Case(f"decimal-numeric-{text}", schema, decimal.Decimal(text), NUMERIC))
    optional_decimal = Decimal.builder(2).optional().build()
    cases.append(Case("decimal-null", optional_decimal, None))
    for day in (datetime.date(1970, 1, 1), datetime.date(2038, 1, 19), datetime.date(1900, 3, 1)):
        cases.append(Case(f"date-{day}", Date.SCHEMA, day))
    for moment in (datetime.time(0), datetime.time(12, 30, 15, 250000)):
        cases.append(Case(f"time-{moment}", Time.SCHEMA, moment))
    for instant in (datetime.datetime(2024, 2, 29, 12, 0, 0, 1000, tzinfo=UTC),
                    datetime.datetime(1901, 1, 1, tzinfo=UTC)):
        cases.append(Case(f"timestamp-{instant.isoformat()}", Timestamp.SCHEMA, instant))
    cases.append(Case("timestamp-null", Timestamp.builder().optional().build(), None))
    return cases


def _schemaless_cases() -> list[Case]:
    document = {"a": 1, "b": [1.5, "x", None, True], "c": {"d": -(2**40)}, "e": None}
    return [
        Case("schemaless-envelope", None, document),
        Case("schemaless-plain", None, document, SCHEMALESS),
        Case("schemaless-int", None, 7, SCHEMALESS),
        Case("schemaless-string", None, "text", SCHEMALESS),
        Case("schemaless-list", None, [1, 2, 3]),
        Case("typed-written-plain", INT16_SCHEMA, 12, SCHEMALESS, expected=(None, 12)),
        Case("null-written-plain", OPTIONAL_STRING_SCHEMA, None, SCHEMALESS,
             expected=(None, None)),
        Case("tombstone", None, None),
        Case("tombstone-plain", None, None, SCHEMALESS),
    ]


CASES = _primitive_cases() + _logical_cases() + _struct_cases() + _defaults_cases() \
    + _schemaless_cases()


def _expected(case: Case, ours: JsonConverter, our_bytes: bytes | None) -> tuple[Any, Any]:
    if case.expected is not None:
        return case.expected
    if case.configs.get("schemas.enable") == "false":
        schema, value = ours.to_connect_data("topic", None, our_bytes)
        return schema, value
    return case.schema, case.value


def _converter(configs: dict[str, str]) -> JsonConverter:
    converter = JsonConverter()
    converter.configure(configs, False)
    return converter


@pytest.fixture(scope="module")
def kafka_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, ...]]:
    """Kafka's reading (and writing back) of our bytes for every case, in one JVM run."""
    libs = ensure_json_libs()
    classpath = compile_program(libs, Path(tmp_path_factory.mktemp("json-interop")))
    lines = []
    for case in CASES:
        our_bytes = _converter(case.configs).from_connect_data(
            "topic", None, case.schema, case.value
        )
        configs = ",".join(f"{k}={v}" for k, v in case.configs.items()) or "-"
        encoded = "-" if our_bytes is None else base64.b64encode(our_bytes).decode("ascii")
        lines.append(f"{configs}\t{encoded}")
    output = run_program(classpath, "read", "\n".join(lines) + "\n").splitlines()
    assert len(output) == len(CASES), output
    return {case.name: tuple(line.split("\t")) for case, line in zip(CASES, output, strict=True)}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_kafka_reads_our_bytes_as_our_data(
    case: Case, kafka_results: dict[str, tuple[str, ...]]
) -> None:
    ours = _converter(case.configs)
    our_bytes = ours.from_connect_data("topic", None, case.schema, case.value)
    result = kafka_results[case.name]
    assert result[0] != "ERROR", result
    schema, value = _expected(case, ours, our_bytes)
    assert (result[0], result[1]) == (describe_schema(schema), describe_value(schema, value))


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_we_read_kafkas_bytes_as_our_data(
    case: Case, kafka_results: dict[str, tuple[str, ...]]
) -> None:
    ours = _converter(case.configs)
    our_bytes = ours.from_connect_data("topic", None, case.schema, case.value)
    result = kafka_results[case.name]
    assert result[0] != "ERROR", result
    kafka_bytes = None if result[2] == "-" else base64.b64decode(result[2])
    expected = _expected(case, ours, our_bytes)
    # Kafka wrote back what it read (the expected data): ours writes the same JSON for it.
    ours_for_expected = _converter(case.configs).from_connect_data("topic", None, *expected)
    if ours_for_expected is None or kafka_bytes is None:
        assert ours_for_expected is None and kafka_bytes is None  # tombstones both
    else:
        assert _parsed(kafka_bytes) == _parsed(ours_for_expected)
        if expected[0] is not None and case.configs.get("schemas.enable") != "false":
            # the schema's keys in the same order (payload maps are Java HashMaps: unordered)
            assert _ordered_schema(kafka_bytes) == _ordered_schema(ours_for_expected)
    assert tuple(_converter(case.configs).to_connect_data("topic", None, kafka_bytes)) == expected


def _parsed(data: bytes) -> Any:
    return json.loads(data, parse_float=decimal.Decimal)


def _ordered_schema(data: bytes) -> Any:
    envelope = json.loads(data, parse_float=decimal.Decimal, object_pairs_hook=list)
    assert [key for key, _ in envelope] == ["schema", "payload"]
    return envelope[0][1]
