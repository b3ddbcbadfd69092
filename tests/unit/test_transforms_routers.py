"""Filter, RegexRouter and TimestampRouter: the SMTs that touch neither key nor value."""

from __future__ import annotations

import pytest

from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.data.errors import DataError
from connect_grpc.data.transforms.filter import Filter
from connect_grpc.data.transforms.regex_router import RegexRouter
from connect_grpc.data.transforms.timestamp_router import TimestampRouter


def sink(topic: str, timestamp_ms: int | None = 0) -> SinkRecord:
    return SinkRecord(topic, 3, 42, b"k", b"v", timestamp_ms, (("h", b"1"),))


def router(regex: str, replacement: str) -> RegexRouter:
    smt = RegexRouter()
    smt.configure({"regex": regex, "replacement": replacement})
    return smt


def test_filter_drops_every_record() -> None:
    smt = Filter()
    smt.configure({})
    assert smt.apply(sink("t")) is None
    assert list(smt.config_def().keys) == []


def test_regex_router_reference_example_keeps_the_rest_of_the_record() -> None:
    routed = router("(.*)-raw", "$1-clean").apply(sink("orders-raw"))
    assert routed.topic == "orders-clean"
    assert (routed.kafka_partition, routed.kafka_offset, routed.headers) == (3, 42, (("h", b"1"),))


def test_regex_router_leaves_a_partly_matching_topic_alone() -> None:
    record = sink("orders-raw-2")
    assert router("(.*)-raw", "$1-clean").apply(record) is record


@pytest.mark.parametrize(
    ("regex", "replacement", "topic", "expected"),
    [
        # Kafka's RegexRouterTest examples
        ("(.*)", "prefix-$1", "orig", "prefix-orig"),
        ("(.*)", "$1-suffix", "orig", "orig-suffix"),
        ("(.*)-old", "$1", "orig-old", "orig"),
        ("(.*)-(.*)", "$1-$2-$1", "a-b", "a-b-a"),
        ("([^-]*)-(.*)", "$2", "in-the-middle", "the-middle"),
        # Java's replacement syntax: named groups, escaped dollar, greedy group digits
        ("(?<name>.*)-raw", "${name}", "x-raw", "x"),
        ("(.*)", "\\$1", "x", "$1"),
        ("(.*)", "$10", "x", "x0"),
        # replaceFirst replaces the first match, which need not be the whole topic
        ("a|ab", "X", "ab", "Xb"),
    ],
)
def test_regex_router_java_replacements(regex: str, replacement: str, topic: str,
                                        expected: str) -> None:
    assert router(regex, replacement).apply(sink(topic)).topic == expected


def test_regex_router_config_errors() -> None:
    config_def = RegexRouter().config_def()
    errors = config_def.validate({})
    assert errors == {
        "regex": ['Missing required configuration "regex" which has no default value.'],
        "replacement": ['Missing required configuration "replacement" which has no default value.'],
    }
    [message] = config_def.validate({"regex": "(", "replacement": "x"})["regex"]
    assert message.startswith("Invalid value ( for configuration regex: Invalid regex: ")
    with pytest.raises(ValueError, match="for configuration replacement: No group 2"):
        router("(.*)", "$2")


def test_timestamp_router_default_format() -> None:
    smt = TimestampRouter()
    smt.configure({})
    assert smt.apply(sink("t", 0)).topic == "t-19700101"
    assert smt.apply(sink("t", 1_700_000_000_000)).topic == "t-20231114"


def test_timestamp_router_custom_formats() -> None:
    smt = TimestampRouter()
    smt.configure({"topic.format": "${timestamp}_${topic}_${topic}",
                   "timestamp.format": "yyyy-MM-dd'T'HH"})
    record = SourceRecord({}, {}, "t", b"v", timestamp_ms=1_700_000_000_000)
    assert smt.apply(record).topic == "2023-11-14T22_t_t"


def test_timestamp_router_needs_a_timestamp() -> None:
    smt = TimestampRouter()
    smt.configure({})
    with pytest.raises(DataError, match=r"^Timestamp missing on record: "):
        smt.apply(sink("t", None))


def test_timestamp_router_refuses_unsupported_patterns_at_validation() -> None:
    [message] = TimestampRouter().config_def().validate({"timestamp.format": "yyyyww"})[
        "timestamp.format"]
    assert message == ("Invalid value yyyyww for configuration timestamp.format: Not a supported "
                       "SimpleDateFormat pattern: pattern letter 'w' (week-based) is not supported")
    with pytest.raises(ValueError, match="Illegal pattern character 'b'"):
        TimestampRouter().configure({"timestamp.format": "yyyyb"})
