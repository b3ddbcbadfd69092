"""Validation refuses a source whose transformations certainly make Struct/Map data that its
converters cannot write (no converter: bytes and str only), naming ``value.converter`` or
``key.converter`` and why; and it accepts every config where that is not certain."""

from __future__ import annotations

import pytest

from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.validation import ConfigValidator
from connect_grpc.kernel.errors import InvalidArgumentError

T = "org.apache.kafka.connect.transforms."
JSON = "org.apache.kafka.connect.json.JsonConverter"

#: Kafka's documented SMT example (connect.html, "Transformations").
KAFKA_EXAMPLE = {
    "name": "local-file-source",
    "connector.class": "FileStreamSource",
    "tasks.max": "1",
    "file": "/tmp/test.txt",
    "topic": "connect-test",
    "transforms": "MakeMap,InsertSource",
    "transforms.MakeMap.type": f"{T}HoistField$Value",
    "transforms.MakeMap.field": "line",
    "transforms.InsertSource.type": f"{T}InsertField$Value",
    "transforms.InsertSource.static.field": "data_source",
    "transforms.InsertSource.static.value": "test-file-source",
}


def _errors(
    config: dict[str, str], worker_converters: dict[str, str | None] | None = None
) -> dict[str, list[str]]:
    validator = ConfigValidator(Plugins(), max_tasks=8, worker_converters=worker_converters)
    errors: dict[str, list[str]] = {}
    for key, message in validator.validate(config).all_errors():
        errors.setdefault(key, []).append(message)
    return errors


def test_kafkas_example_without_converters_is_refused_on_value_converter() -> None:
    errors = _errors(KAFKA_EXAMPLE)
    assert list(errors) == ["value.converter"]
    [message] = errors["value.converter"]
    assert message.startswith(
        f"transforms.MakeMap ({T}HoistField$Value) makes every record's value a Struct"
    )
    assert "neither the connector nor the worker sets value.converter" in message
    assert JSON in message


def test_create_answers_invalid_argument_naming_value_converter() -> None:
    validator = ConfigValidator(Plugins(), max_tasks=8)
    with pytest.raises(InvalidArgumentError) as raised:
        validator.ensure_valid(KAFKA_EXAMPLE)
    assert [v.field for v in raised.value.violations] == ["config.value.converter"]


@pytest.mark.parametrize(
    ("config", "workers"),
    [
        (KAFKA_EXAMPLE, {"value.converter": JSON}),  # the worker's converter
        ({**KAFKA_EXAMPLE, "value.converter": JSON}, None),  # the connector's
        ({**KAFKA_EXAMPLE, "value.converter": "StringConverter"}, None),  # writes toString
        # a predicate: some records may stay strings
        ({**KAFKA_EXAMPLE, "transforms.MakeMap.predicate": "p", "predicates": "p",
          "predicates.p.type": "TopicNameMatches", "predicates.p.pattern": "x"}, None),
        # ExtractField undoes the wrap: not known to keep it structured
        ({**KAFKA_EXAMPLE, "transforms": "MakeMap,Back", "transforms.Back.type":
          f"{T}ExtractField$Value", "transforms.Back.field": "line"}, None),
        # InsertField alone fails on the line itself, not at the converter
        ({**KAFKA_EXAMPLE, "transforms": "InsertSource"}, None),
        # a key-side wrap leaves the value alone, and the key has its converter
        ({**KAFKA_EXAMPLE, "transforms": "k", "transforms.k.type": f"{T}HoistField$Key",
          "transforms.k.field": "k", "key.converter": JSON}, None),
    ],
)
def test_what_is_not_certain_to_fail_is_accepted(
    config: dict[str, str], workers: dict[str, str | None] | None
) -> None:
    assert _errors(config, workers) == {}


def test_a_key_made_a_struct_without_key_converter_is_refused_on_key_converter() -> None:
    config = {**KAFKA_EXAMPLE, "value.converter": JSON, "transforms": "MakeMap,k",
              "transforms.k.type": "ValueToKey", "transforms.k.fields": "line"}
    errors = _errors(config, {"value.converter": None})
    assert list(errors) == ["key.converter"]
    assert "transforms.k (ValueToKey) makes every record's key a Struct" in (
        errors["key.converter"][0]
    )


def test_a_converter_that_cannot_write_a_struct_is_named() -> None:
    config = {**KAFKA_EXAMPLE, "value.converter": "ByteArrayConverter"}
    [message] = _errors(config)["value.converter"]
    assert "which the value.converter ByteArrayConverter cannot write" in message


def test_a_sink_is_never_refused_for_it() -> None:
    sink = {"name": "s", "connector.class": "FileStreamSink", "file": "/tmp/out",
            "topics": "t", "transforms": "MakeMap", "transforms.MakeMap.type":
            f"{T}HoistField$Value", "transforms.MakeMap.field": "line"}
    assert _errors(sink) == {}
