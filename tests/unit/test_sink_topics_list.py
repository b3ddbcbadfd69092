"""A sink's ``topics`` list with a repeated or an empty entry is refused with Kafka Connect
4.4.0's messages: the answers its own ``PUT /connector-plugins/FileStreamSinkConnector/config/
validate`` gave for these lists (Kafka Connect 4.1.1 accepted every one of them)."""

from __future__ import annotations

import pytest

from connect_grpc.connectors.plugins import Plugins
from connect_grpc.herder.validation import ConfigValidator

DUPLICATED = "Configuration 'topics' values must not be duplicated."
EMPTY = "Configuration 'topics' values must not be empty."


@pytest.fixture
def validator() -> ConfigValidator:
    return ConfigValidator(Plugins(), max_tasks=8)


def _topics_errors(validator: ConfigValidator, topics: str) -> list[str]:
    config = {"connector.class": "FileStreamSink", "file": "/tmp/x", "topics": topics}
    return [error for key, error in validator.validate(config).all_errors() if key == "topics"]


@pytest.mark.parametrize(
    ("topics", "expected"),
    [
        ("a,a", DUPLICATED),
        (" a , a ", DUPLICATED),
        ("a,b,a", DUPLICATED),
        # the repeat is looked for first: these lists have an empty entry too
        ("a,,a", DUPLICATED),
        (",,", DUPLICATED),
        ("a,,b", EMPTY),
        ("a,", EMPTY),
        (",a", EMPTY),
        ("a, ,b", EMPTY),
    ],
)
def test_a_repeated_or_empty_entry_is_refused_as_kafka_refuses_it(
    validator: ConfigValidator, topics: str, expected: str
) -> None:
    assert _topics_errors(validator, topics) == [expected]


def test_names_that_differ_in_case_are_two_topics(validator: ConfigValidator) -> None:
    assert _topics_errors(validator, "a,A") == []
