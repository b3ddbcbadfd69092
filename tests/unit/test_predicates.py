"""The built-in predicates: HasHeaderKey, RecordIsTombstone, TopicNameMatches."""

from __future__ import annotations

import pytest

from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.data.predicates import (
    BUILTIN_PREDICATES,
    HasHeaderKey,
    RecordIsTombstone,
    TopicNameMatches,
)


def sink(topic: str = "orders", value: object = b"v", headers: tuple = ()) -> SinkRecord:
    return SinkRecord(topic, 0, 5, b"k", value, 1000, headers)


def test_builtin_predicates_are_keyed_by_kafka_class_names() -> None:
    assert {
        "org.apache.kafka.connect.transforms.predicates.HasHeaderKey": HasHeaderKey,
        "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone": RecordIsTombstone,
        "org.apache.kafka.connect.transforms.predicates.TopicNameMatches": TopicNameMatches,
    } == BUILTIN_PREDICATES


def test_has_header_key_matches_any_header_with_the_exact_name() -> None:
    predicate = HasHeaderKey()
    predicate.configure({"name": "trace"})
    assert predicate.test(sink(headers=(("a", b"1"), ("trace", None))))
    assert not predicate.test(sink(headers=(("Trace", b"1"),)))
    assert not predicate.test(sink())


def test_has_header_key_reads_connect_headers_too() -> None:
    from connect_grpc.data.headers import ConnectHeaders

    headers = ConnectHeaders()
    headers.add("trace", "x")
    predicate = HasHeaderKey()
    predicate.configure({"name": "trace"})
    assert predicate.test(sink(headers=headers))


def test_has_header_key_requires_a_non_empty_name() -> None:
    config_def = HasHeaderKey().config_def()
    assert config_def.validate({})["name"] == [
        'Missing required configuration "name" which has no default value.']
    assert config_def.validate({"name": " "})["name"] == [
        "Invalid value   for configuration name: String must be non-empty"]
    with pytest.raises(ValueError, match="String must be non-empty"):
        HasHeaderKey().configure({"name": ""})


def test_record_is_tombstone_looks_at_the_value_only() -> None:
    predicate = RecordIsTombstone()
    predicate.configure({})
    assert predicate.test(sink(value=None))
    assert not predicate.test(sink(value=b""))
    assert predicate.test(SourceRecord({}, {}, "t", None, key=b"k"))


def test_topic_name_matches_needs_a_full_match() -> None:
    predicate = TopicNameMatches()
    predicate.configure({"pattern": "orders-.*"})
    assert predicate.test(sink("orders-eu"))
    assert not predicate.test(sink("old-orders-eu"))
    assert not predicate.test(sink("orders"))


def test_topic_name_matches_takes_java_named_groups() -> None:
    predicate = TopicNameMatches()
    predicate.configure({"pattern": "(?<region>eu|us)-.+"})
    assert predicate.test(sink("eu-orders"))
    assert not predicate.test(sink("ap-orders"))


def test_topic_name_matches_refuses_an_empty_or_invalid_pattern() -> None:
    config_def = TopicNameMatches().config_def()
    assert config_def.validate({"pattern": ""})["pattern"] == [
        "Invalid value  for configuration pattern: String must be non-empty"]
    [message] = config_def.validate({"pattern": "a(b"})["pattern"]
    assert message.startswith("Invalid value a(b for configuration pattern: Invalid regex: ")
    with pytest.raises(ValueError, match="Invalid regex"):
        TopicNameMatches().configure({"pattern": "[x"})


def test_topic_name_matches_refuses_java_only_constructs() -> None:
    config_def = TopicNameMatches().config_def()
    for pattern in ("[a-z&&[^e]]+", "\\p{Alpha}+", "\\Qa.b\\E"):
        [message] = config_def.validate({"pattern": pattern})["pattern"]
        assert "Invalid regex: " in message, pattern
