"""The framework's connector config checks: typed values parsed as Kafka's ConfigDef parses
them, the worker's tasks.max.limit, sink topic rules and built-in plugins' value checks."""

from __future__ import annotations

import pytest

from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.framework_keys import tasks_max
from connect_grpc.herder.validation import ConfigValidator
from connect_grpc.kernel.configdef import topic_name_error
from connect_grpc.kernel.errors import InvalidArgumentError

LIMIT = 8


@pytest.fixture
def validator() -> ConfigValidator:
    return ConfigValidator(Plugins(), max_tasks=LIMIT)


def _sequence(**extra: str) -> dict[str, str]:
    return {"connector.class": "SequenceSource", "topic": "t", **extra}


def _sink(**extra: str) -> dict[str, str]:
    return {"connector.class": "FileStreamSink", "file": "/tmp/x", **extra}


def _errors(validator: ConfigValidator, config: dict[str, str]) -> dict[str, str]:
    return dict(validator.validate(config).all_errors())


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("2147483648", "Not a number of type INT"),
        ("1_0", "Not a number of type INT"),
        ("9" * 30, "Not a number of type INT"),
        ("0x10", "Not a number of type INT"),
        ("0", "Value must be at least 1"),
        (str(LIMIT + 1), f"no more than {LIMIT} (the worker property tasks.max.limit)"),
    ],
)
def test_tasks_max_is_a_bounded_java_int(validator: ConfigValidator, raw: str, text: str) -> None:
    assert text in _errors(validator, _sequence(**{"tasks.max": raw}))["tasks.max"]


def test_tasks_max_at_the_limit_and_padded_with_spaces_is_valid(
    validator: ConfigValidator,
) -> None:
    config = _sequence(**{"tasks.max": f" {LIMIT}\t"})
    assert "tasks.max" not in _errors(validator, config)
    assert tasks_max(config) == LIMIT
    assert tasks_max(_sequence()) == 1


@pytest.mark.parametrize("rate", ["NaN", "Infinity", "-Infinity"])
def test_sequence_rate_must_be_finite(validator: ConfigValidator, rate: str) -> None:
    errors = _errors(validator, _sequence(**{"sequence.rate": rate}))
    assert "finite" in errors["sequence.rate"]


def test_sequence_count_is_a_java_long(validator: ConfigValidator) -> None:
    errors = _errors(validator, _sequence(**{"sequence.count": "1e3"}))
    assert "Not a number of type LONG" in errors["sequence.count"]


def test_topics_regex_must_compile(validator: ConfigValidator) -> None:
    errors = _errors(validator, _sink(**{"topics.regex": "[unclosed"}))
    assert "Not a valid regular expression" in errors["topics.regex"]
    assert "topics.regex" not in _errors(validator, _sink(**{"topics.regex": "events-.*"}))


@pytest.mark.parametrize("topics", ["a b", "ok,bad/name", "x" * 250, ".."])
def test_sink_topics_must_be_legal_kafka_topic_names(
    validator: ConfigValidator, topics: str
) -> None:
    assert "Topic name" in _errors(validator, _sink(topics=topics))["topics"]


def test_source_topic_must_be_a_legal_kafka_topic_name(validator: ConfigValidator) -> None:
    assert "illegal" in _errors(validator, _sequence(topic="no spaces please"))["topic"]


@pytest.mark.parametrize("raw", ["0", "2_000", "1e3", "2147483648"])
def test_batch_max_records_is_a_positive_java_int(validator: ConfigValidator, raw: str) -> None:
    assert "batch.max.records" in _errors(validator, _sequence(**{"batch.max.records": raw}))


def test_topic_name_rules_match_kafkas() -> None:
    assert topic_name_error("orders.v1_x-2") is None
    assert topic_name_error("") is not None
    assert topic_name_error(".") is not None
    assert topic_name_error("x" * 249) is None
    assert topic_name_error("x" * 250) is not None
    assert topic_name_error("ü") is not None


def test_a_misspelt_connector_class_names_the_field_and_the_closest_plugin(
    validator: ConfigValidator,
) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        validator.validate({"connector.class": "FileStreamSorce", "topic": "t"})
    (violation,) = caught.value.violations
    assert violation.field == "config.connector.class"
    assert "did you mean FileStreamSource?" in violation.description
    assert "FileStreamSink, FileStreamSinkConnector" in caught.value.message


WORKER_GROUP = "connect-cluster"


@pytest.fixture
def distributed_validator() -> ConfigValidator:
    return ConfigValidator(Plugins(), max_tasks=LIMIT, worker_group_id=WORKER_GROUP)


def test_a_sink_named_after_the_worker_group_is_refused_on_its_name(
    distributed_validator: ConfigValidator,
) -> None:
    errors = _errors(distributed_validator, _sink(name="cluster", topics="t"))
    assert errors == {
        "name": "Consumer group for sink connector named cluster conflicts with Connect worker "
                "group connect-cluster"
    }
    with pytest.raises(InvalidArgumentError) as refused:
        distributed_validator.ensure_valid(_sink(name="cluster", topics="t"))
    assert [v.field for v in refused.value.violations] == ["config.name"]


def test_a_sink_group_override_equal_to_the_worker_group_is_refused_on_the_override(
    distributed_validator: ConfigValidator,
) -> None:
    config = _sink(name="cluster", topics="t", **{"consumer.override.group.id": WORKER_GROUP})
    assert _errors(distributed_validator, config) == {
        "consumer.override.group.id": "Consumer group connect-cluster conflicts with Connect "
                                      "worker group connect-cluster"
    }
    # another override frees the name that would otherwise conflict
    free = _sink(name="cluster", topics="t", **{"consumer.override.group.id": "mine"})
    assert _errors(distributed_validator, free) == {}


def test_sources_and_standalone_workers_have_no_group_conflict(
    validator: ConfigValidator, distributed_validator: ConfigValidator
) -> None:
    assert _errors(distributed_validator, _sequence(name="cluster")) == {}
    assert _errors(validator, _sink(name="cluster", topics="t")) == {}
