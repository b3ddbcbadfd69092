"""Our JsonConverter against Apache Kafka Connect 4.4.0's own, both ways (no broker needed).

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
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from connect_grpc.data.converters.json import JsonConverter
from connect_grpc.data.errors import DataError
from connect_grpc.data.javatext import to_single
from connect_grpc.data.logical import (
    Date,
    Decimal,
    Time,
    Timestamp,
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
    Schema,
    SchemaBuilder,
)
from connect_grpc.data.struct import Struct
from tests.interop.describe import describe_schema, describe_value
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
        # a FLOAT32 read from float bits: written as Jackson writes the Float, read back as 0.1
        Case("float32-from-bits", FLOAT32_SCHEMA, to_single(0.1),
             expected=(FLOAT32_SCHEMA, 0.1)),
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


def _configs_field(configs: dict[str, str]) -> str:
    """The configs as JsonInterop reads them: ``key=value`` pairs joined by ``,``, each value
    URL-encoded (a schema's JSON holds commas), or ``-`` for none."""
    return ",".join(
        f"{key}={urllib.parse.quote(value, safe='')}" for key, value in configs.items()
    ) or "-"


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
        encoded = "-" if our_bytes is None else base64.b64encode(our_bytes).decode("ascii")
        lines.append(f"{_configs_field(case.configs)}\t{encoded}")
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
    assert not result[2].startswith("!"), result  # Kafka wrote back what it read
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


# --- bad input: both refuse it, with the same message ------------------------------------------

_STRUCT = '{"type":"struct","fields":[{"type":"string","optional":false,"field":"s"}]}'
_DECIMAL = ('{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","version":1,'
            '"parameters":{"scale":"2"}}')
BAD_INPUTS: list[tuple[dict[str, str], bytes]] = [
    ({}, b'{"payload":1}'),
    ({}, b'{"schema":null,"payload":1,"extra":2}'),
    ({}, b"[1,2]"),
    ({}, b"42"),
    ({}, b""),
    ({}, b'{"schema":{"optional":false},"payload":1}'),
    ({}, b'{"schema":{"type":"uint8"},"payload":1}'),
    ({}, b'{"schema":{"type":"array"},"payload":[]}'),
    ({}, b'{"schema":{"type":"map","values":{"type":"int8"}},"payload":{}}'),
    ({}, b'{"schema":{"type":"map","keys":{"type":"int8"}},"payload":{}}'),
    ({}, b'{"schema":{"type":"struct","fields":5},"payload":{}}'),
    ({}, b'{"schema":{"type":"struct","fields":[{"type":"int8"}]},"payload":{}}'),
    ({}, b'{"schema":{"type":"int8","parameters":{"a":1}},"payload":1}'),
    ({}, b'{"schema":{"type":"string","optional":false},"payload":null}'),
    ({}, b'{"schema":' + _STRUCT.encode() + b',"payload":[]}'),
    ({}, b'{"schema":' + _STRUCT.encode() + b',"payload":{}}'),
    ({}, b'{"schema":{"type":"map","keys":{"type":"string"},"values":{"type":"int8"}},'
         b'"payload":[1]}'),
    ({}, b'{"schema":{"type":"map","keys":{"type":"int8"},"values":{"type":"int8"}},'
         b'"payload":{}}'),
    ({}, b'{"schema":{"type":"map","keys":{"type":"int8"},"values":{"type":"int8"}},'
         b'"payload":[[1,2,3]]}'),
    ({}, b'{"schema":{"type":"map","keys":{"type":"int8"},"values":{"type":"int8"}},'
         b'"payload":[5]}'),
    ({}, b'{"schema":{"type":"int32","name":"org.apache.kafka.connect.data.Date"},'
         b'"payload":"2020-01-01"}'),
    ({}, b'{"schema":{"type":"int32","name":"org.apache.kafka.connect.data.Time"},'
         b'"payload":1.5}'),
    ({}, b'{"schema":{"type":"int64","name":"org.apache.kafka.connect.data.Timestamp"},'
         b'"payload":true}'),
    ({}, b'{"schema":' + _DECIMAL.encode() + b',"payload":true}'),
    ({}, b'{"schema":{"type":"int32","optional":false,"default":null},"payload":1}'),
]


def _bad_input_id(item: tuple[dict[str, str], bytes]) -> str:
    return item[1].decode()[:60] or "empty"


def _kafka_reads(
    tmp_path_factory: pytest.TempPathFactory, name: str,
    inputs: list[tuple[dict[str, str], bytes]],
) -> list[tuple[str, ...]]:
    """What Kafka's JsonConverter makes of each input (its configs and bytes): the fields of
    its answer, one line an input (``ERROR`` and the exception, or the schema and value)."""
    classpath = compile_program(ensure_json_libs(), Path(tmp_path_factory.mktemp(name)))
    lines = [
        f"{_configs_field(configs)}\t{base64.b64encode(data).decode('ascii')}"
        for configs, data in inputs
    ]
    output = run_program(classpath, "read", "\n".join(lines) + "\n").splitlines()
    assert len(output) == len(inputs), output
    return [tuple(line.split("\t")) for line in output]


@pytest.fixture(scope="module")
def kafka_refusals(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, ...]]:
    return _kafka_reads(tmp_path_factory, "bad-json", BAD_INPUTS)


@pytest.mark.parametrize("index", range(len(BAD_INPUTS)),
                         ids=[_bad_input_id(item) for item in BAD_INPUTS])
def test_bad_input_is_refused_with_kafkas_message(
    index: int, kafka_refusals: list[tuple[str, ...]]
) -> None:
    configs, data = BAD_INPUTS[index]
    kafka = kafka_refusals[index]
    assert kafka[0] == "ERROR", kafka
    kafka_class, _, kafka_message = kafka[1].partition(": ")
    assert kafka_class in ("DataException", "SchemaBuilderException")
    with pytest.raises(DataError) as raised:
        _converter(configs).to_connect_data("topic", None, data)
    # Kafka's message, with its cause appended where Kafka keeps the cause apart
    assert str(raised.value).startswith(kafka_message), (str(raised.value), kafka_message)


# --- JSON that is not ours: read as Kafka reads it ----------------------------------------------

RAW_INPUTS: list[tuple[dict[str, str], bytes]] = [
    ({}, b'{"schema":{"type":"int32","optional":false},"payload":0012}'),
    (SCHEMALESS, b'[0012, -007, 00.5, "0012"]'),
    ({}, b'{"schema":{"type":"double"},"payload":1.0E20}'),
    ({}, b' { "payload" : [1, 2] , "schema" : { "type" : "array", "items" : {"type":"int8"} } } '),
    ({}, b'{"schema":{"type":"int8","optional":false},"payload":300}'),
    ({}, b'{"schema":{"type":"int16"},"payload":"12"}'),
    ({}, b'{"schema":{"type":"boolean"},"payload":1}'),
    ({}, b'{"schema":{"type":"string"},"payload":5}'),
    ({}, b'{"schema":{"type":"float"},"payload":0.1}'),
    ({}, b'{"schema":{"type":"array","items":{"type":"int8"}},"payload":{"a":1,"b":2}}'),
    ({}, b'{"schema":{"type":"array","items":{"type":"int8"}},"payload":7}'),
    ({}, b'{"schema":{"type":"int64","optional":true,"version":1.5,"doc":5,"name":null},'
         b'"payload":null}'),
    ({}, b'{"schema":{"type":"int64","optional":"true"},"payload":3}'),
    ({}, b'{"schema":{"type":"int32","optional":true,"default":null},"payload":null}'),
    (SCHEMALESS, b'{"big":12345678901234567890123,"small":-1}'),
    (SCHEMALESS, b'1E+2'),
    (SCHEMALESS, b'"text"'),
    (SCHEMALESS, b'{"a":{"b":[{"c":null}]}}'),
    ({}, b'{"schema":' + _DECIMAL.encode() + b',"payload":12.345}'),
    ({}, b'{"schema":' + _DECIMAL.encode() + b',"payload":7}'),
]


@pytest.fixture(scope="module")
def kafka_readings(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, ...]]:
    return _kafka_reads(tmp_path_factory, "raw-json", RAW_INPUTS)


@pytest.mark.parametrize("index", range(len(RAW_INPUTS)),
                         ids=[_bad_input_id(item) for item in RAW_INPUTS])
def test_json_not_written_by_us_is_read_as_kafka_reads_it(
    index: int, kafka_readings: list[tuple[str, ...]]
) -> None:
    configs, data = RAW_INPUTS[index]
    kafka = kafka_readings[index]
    assert kafka[0] != "ERROR", kafka
    schema, value = _converter(configs).to_connect_data("topic", None, data)
    assert (describe_schema(schema), describe_value(schema, value)) == (kafka[0], kafka[1])


# --- schema.content (KIP-1054): one schema in the config, bare values in the messages -----------

def _content(schema_json: str, **more: str) -> dict[str, str]:
    return {"schema.content": schema_json, **more}


_POINT = ('{"type":"struct","fields":[{"type":"int32","optional":false,"field":"x"},'
          '{"type":"int32","optional":true,"field":"y"}],"optional":false,"name":"Point"}')
_ENVELOPE_STRUCT = ('{"type":"struct","fields":[{"field":"schema","type":"struct","fields":'
                    '[{"field":"type","type":"string"}]},{"field":"payload","type":"string"}]}')
_ENVELOPE = b'{"schema":{"type":"string"},"payload":"foo-bar-baz"}'

#: Messages read under a schema.content, each read or refused by both alike.
SCHEMA_CONTENT_INPUTS: list[tuple[dict[str, str], bytes]] = [
    (_content('{"type":"string"}'), b'"foo-bar-baz"'),
    (_content('{"type":"string"}'), _ENVELOPE),
    (_content('{"type":"string","optional":true}'), _ENVELOPE),
    (_content(_ENVELOPE_STRUCT), _ENVELOPE),
    (_content(""), _ENVELOPE),
    (_content("   "), _ENVELOPE),
    (_content("null"), _ENVELOPE),
    (_content('{"type":"int32"}'), b"42"),
    (_content('{"type":"int64","optional":true}'), b"null"),
    (_content('{"type":"int64","optional":true,"default":5}'), b"null"),
    (_content('{"type":"int64","optional":true,"default":5}', **KEEP_NULLS), b"null"),
    (_content('{"type":"double"}'), b"1.0E20"),
    (_content(_POINT), b'{"x":1,"y":2}'),
    (_content(_POINT), b'{"x":1}'),
    (_content(_POINT), b'{"x":1,"z":3}'),
    (_content('{"type":"array","items":{"type":"string"}}'), b'["a","b"]'),
    (_content('{"type":"map","keys":{"type":"string"},"values":{"type":"int16"}}'),
     b'{"a":1,"b":2}'),
    (_content(_DECIMAL), b'"AQ=="'),
    (_content(_DECIMAL, **NUMERIC), b"12.34"),
    (_content('{"type":"int32","name":"org.apache.kafka.connect.data.Date"}'), b"19000"),
    (_content('{"type":"int64","name":"org.apache.kafka.connect.data.Timestamp"}'),
     b"1700000000000"),
    (_content('{"type":"string"}', **SCHEMALESS), b'{"a":1}'),
    (_content('{"type":"int32"}'), b"null"),
    (_content(_POINT), b"[1,2]"),
    (_content(_POINT), b'{"y":2}'),
    (_content('{"type":"int32"}'), b"{not json"),
    # empty bytes: Jackson's missing node, read by the schema type's own conversion
    *[(_content(schema_json), b"") for schema_json in (
        '{"type":"int32"}', '{"type":"int8","optional":true,"default":3}', '{"type":"double"}',
        '{"type":"boolean"}', '{"type":"string"}', '{"type":"bytes"}',
        '{"type":"array","items":{"type":"int8"}}',
        '{"type":"map","keys":{"type":"string"},"values":{"type":"int8"}}', _POINT,
        '{"type":"int32","name":"org.apache.kafka.connect.data.Date"}', _DECIMAL,
    )],
]


@pytest.fixture(scope="module")
def kafka_content_readings(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, ...]]:
    return _kafka_reads(tmp_path_factory, "schema-content", SCHEMA_CONTENT_INPUTS)


@pytest.mark.parametrize("index", range(len(SCHEMA_CONTENT_INPUTS)),
                         ids=[f"{index}-{item[1].decode()[:40]}"
                              for index, item in enumerate(SCHEMA_CONTENT_INPUTS)])
def test_schema_content_messages_are_read_as_kafka_reads_them(
    index: int, kafka_content_readings: list[tuple[str, ...]]
) -> None:
    configs, data = SCHEMA_CONTENT_INPUTS[index]
    kafka = kafka_content_readings[index]
    assert kafka[0] != "CONFIGURE", kafka
    if kafka[0] == "ERROR":
        kafka_message = kafka[1].partition(": ")[2]
        with pytest.raises(DataError) as raised:
            _converter(configs).to_connect_data("topic", None, data)
        assert str(raised.value).startswith(kafka_message), (str(raised.value), kafka_message)
        return
    schema, value = _converter(configs).to_connect_data("topic", None, data)
    assert (describe_schema(schema), describe_value(schema, value)) == (kafka[0], kafka[1])


#: schema.content values Kafka's configure refuses: ours refuses them with its message.
BAD_SCHEMA_CONTENTS = [
    '{ "string" }',
    "{not json",
    '{"type":"text"}',
    '{"optional":true}',
    "[1]",
    "5",
    '"string"',
    '{"type":"array"}',
    '{"type":"struct","fields":[{"type":"int8"}]}',
    '{"type":"int8","parameters":{"a":1}}',
]


@pytest.fixture(scope="module")
def kafka_content_refusals(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, ...]]:
    return _kafka_reads(tmp_path_factory, "bad-schema-content",
                        [(_content(content), b"1") for content in BAD_SCHEMA_CONTENTS])


@pytest.mark.parametrize("index", range(len(BAD_SCHEMA_CONTENTS)), ids=BAD_SCHEMA_CONTENTS)
def test_a_bad_schema_content_is_refused_at_configure_with_kafkas_message(
    index: int, kafka_content_refusals: list[tuple[str, ...]]
) -> None:
    kafka = kafka_content_refusals[index]
    assert kafka[0] == "CONFIGURE", kafka
    kafka_class, _, kafka_message = kafka[1].partition(": ")
    assert kafka_class in ("DataException", "SchemaBuilderException")
    with pytest.raises(DataError) as raised:
        _converter(_content(BAD_SCHEMA_CONTENTS[index]))
    assert str(raised.value).startswith(kafka_message), (str(raised.value), kafka_message)
