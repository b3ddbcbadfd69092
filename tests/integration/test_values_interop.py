"""Our Values (what SimpleHeaderConverter reads a header's text as, and writes back) against
Apache Kafka Connect 4.4.0's own ``Values.parseString`` / ``convertToString`` (no broker).

tests/interop/JsonInterop.java ("values" mode) parses each text with Kafka's Values and
prints the canonical description of the schema and value it got and the text Kafka writes
for that value; ours must give the same description and text.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from connect_grpc.data.values import convert_to_string, parse_string
from tests.interop.describe import describe_schema, describe_value
from tests.interop.kafka_json import compile_program, ensure_json_libs, run_program

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TEXTS = [
    # numbers: the smallest integer type, FLOAT32 when finite as a float, then FLOAT64/Decimal
    "0", "42", "-128", "128", "1000", "-32769", "100000", "2147483648", "-9223372036854775808",
    "9223372036854775808", "99999999999999999999", "1.5", "3.14", "-0.001", "1.0", "1e2",
    "1E-3", "+7", "1.5e300", "2e400", "007",
    # booleans, null, empty, whitespace
    "true", "false", "  true  ", "null", " null ", "", "   ", "TRUE",
    # temporal literals (lenient calendars included)
    "2020-01-02", "2020-02-30", "2020-13-01", "12:34:56.789Z", "23:59:59.999Z",
    "2020-01-02T03:04:05.678Z", "2020-01-01T25:00:00.000Z", "12\\:34\\:56.789Z",
    # arrays and maps, with merged element schemas
    "[]", "[1,2,3]", "[1, 2.5]", "[1, 1000, 100000]", '["a", "b"]', "[true, false]",
    "[null]", '[true, "a"]', "[[1, 2], [3]]", "{}", '{"a": 1, "b": 1000}',
    "{true: false, false: true}", "{3: null}", '{"k": [1, 2]}', '["a,b", "c:d"]',
    '["2020-01-02", "x"]', "[2020-01-02]",
    # what stays a string
    "hello world", "a:b", "{foo: 3}", "{3: foo}", "[foo]", "true}", "false]", "null=",
    "{6:9 4:20}", "[0 1 2]", "[1,null]", "{null: 3}", '"quoted"', "ünïcödé", "a\\,b",
    "1.2.3", "--5", "0x10", "NaN", "Infinity", "1_000",
    # Kafka's quirks kept: a number followed by more text is the number. (Not compared: a
    # mixed list such as [1, "a"], whose 1 Kafka keeps as a Byte and Python as an int.)
    "12:30", "5 apples",
]


@pytest.fixture(scope="module")
def kafka_values(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, ...]]:
    libs = ensure_json_libs()
    classpath = compile_program(libs, Path(tmp_path_factory.mktemp("values-interop")))
    stdin = "".join(base64.b64encode(text.encode()).decode() + "\n" for text in TEXTS)
    output = run_program(classpath, "values", stdin).splitlines()
    assert len(output) == len(TEXTS), output
    return [tuple(line.split("\t")) for line in output]


@pytest.mark.parametrize("index", range(len(TEXTS)), ids=[repr(text) for text in TEXTS])
def test_parse_string_and_convert_to_string_as_kafka(
    index: int, kafka_values: list[tuple[str, ...]]
) -> None:
    text = TEXTS[index]
    kafka = kafka_values[index]
    assert kafka[0] != "ERROR", kafka
    schema, value = parse_string(text)
    assert (describe_schema(schema), describe_value(schema, value)) == (kafka[0], kafka[1])
    written = convert_to_string(schema, value)
    kafka_written = None if kafka[2] == "-" else base64.b64decode(kafka[2]).decode()
    assert written == kafka_written
