"""Offset request validation (KIP-875): sink rules as Kafka's, plus negatives rejected."""

from __future__ import annotations

import pytest

from connect_grpc.herder import offsets as rules
from connect_grpc.kernel.domain import ConnectorOffset, OffsetPrimitive
from connect_grpc.kernel.errors import InvalidArgumentError


def _sink(partition: dict[str, OffsetPrimitive] | None,
          offset: dict[str, OffsetPrimitive] | None) -> list[ConnectorOffset]:
    return [ConnectorOffset(partition, offset)]


def test_sink_offsets_parse_strings_and_integers() -> None:
    parsed = rules.parse_sink_offsets(
        _sink({"kafka_topic": "t", "kafka_partition": "10"}, {"kafka_offset": 5})
        + _sink({"kafka_topic": "t", "kafka_partition": 3}, {"kafka_offset": "7"})
        + _sink({"kafka_topic": "u", "kafka_partition": 0}, None)
    )
    assert parsed == {("t", 10): 5, ("t", 3): 7, ("u", 0): None}


@pytest.mark.parametrize(
    ("partition", "offset", "field", "text"),
    [
        (None, {"kafka_offset": 1}, "offsets[0].partition", "cannot be null or missing"),
        ({"kafka_topic": "t"}, None, "offsets[0].partition.kafka_partition",
         "The partition for a sink connector offset must contain the keys 'kafka_topic' and "
         "'kafka_partition'"),
        ({"kafka_partition": 0}, None, "offsets[0].partition.kafka_topic",
         "The partition for a sink connector offset must contain the keys 'kafka_topic' and "
         "'kafka_partition'"),
        ({}, None, "offsets[0].partition.kafka_topic", "must contain the keys"),
        ({"kafka_topic": None, "kafka_partition": 0}, None,
         "offsets[0].partition.kafka_topic",
         "Kafka topic names must be valid strings and may not be null"),
        ({"kafka_topic": "t", "kafka_partition": None}, None,
         "offsets[0].partition.kafka_partition",
         "Kafka partitions must be valid numbers and may not be null"),
        ({"kafka_topic": None}, None, "offsets[0].partition.kafka_partition",
         "must contain the keys"),
        ({"kafka_topic": 5, "kafka_partition": 0}, None,
         "offsets[0].partition.kafka_topic", "non-empty string"),
        ({"kafka_topic": "t", "kafka_partition": 2**31}, None,
         "offsets[0].partition.kafka_partition", "need to be integers"),
        ({"kafka_topic": "t", "kafka_partition": "2147483648"}, None,
         "offsets[0].partition.kafka_partition", "need to be integers"),
        ({"kafka_topic": "t", "kafka_partition": "1_0"}, None,
         "offsets[0].partition.kafka_partition", "need to be integers"),
        ({"kafka_topic": "t", "kafka_partition": 0}, {"kafka_offset": 2**63},
         "offsets[0].offset.kafka_offset", "need to be integers"),
        ({"kafka_topic": "t", "kafka_partition": 10.0}, None,
         "offsets[0].partition.kafka_partition", "need to be integers"),
        ({"kafka_topic": "t", "kafka_partition": "x"}, None,
         "offsets[0].partition.kafka_partition", "need to be integers"),
        ({"kafka_topic": "t", "kafka_partition": True}, None,
         "offsets[0].partition.kafka_partition", "need to be integers"),
        ({"kafka_topic": "t", "kafka_partition": -1}, None,
         "offsets[0].partition.kafka_partition", "non-negative"),
        ({"kafka_topic": "t", "kafka_partition": 0}, {"offset": 1},
         "offsets[0].offset", "either be null or contain the key 'kafka_offset'"),
        ({"kafka_topic": "t", "kafka_partition": 0}, {"kafka_offset": 1.5},
         "offsets[0].offset.kafka_offset", "need to be integers"),
        ({"kafka_topic": "t", "kafka_partition": 0}, {"kafka_offset": -3},
         "offsets[0].offset.kafka_offset", "non-negative"),
    ],
)
def test_sink_offset_errors_name_the_field(
    partition: dict[str, OffsetPrimitive] | None,
    offset: dict[str, OffsetPrimitive] | None,
    field: str,
    text: str,
) -> None:
    with pytest.raises(InvalidArgumentError) as excinfo:
        rules.parse_sink_offsets(_sink(partition, offset))
    assert excinfo.value.violations[0].field == field
    assert text in excinfo.value.violations[0].description


def test_source_offsets_need_a_partition() -> None:
    with pytest.raises(InvalidArgumentError) as excinfo:
        rules.parse_source_offsets([ConnectorOffset({"a": 1}, None), ConnectorOffset(None, {})])
    assert excinfo.value.violations[0].field == "offsets[1].partition"


def test_source_offsets_keep_exact_integers() -> None:
    parsed = rules.parse_source_offsets([ConnectorOffset({"f": "x"}, {"pos": 2**63 - 1})])
    assert parsed == [({"f": "x"}, {"pos": 2**63 - 1})]


def test_empty_offsets_are_rejected_with_kafkas_message() -> None:
    with pytest.raises(InvalidArgumentError, match="Partitions / offsets need to be provided"):
        rules.require_offsets([])


def test_success_messages() -> None:
    assert rules.success_message("altered", True) == (
        "The offsets for this connector have been altered successfully"
    )
    assert rules.success_message("reset", False) == (
        "The Connect framework-managed offsets for this connector have been reset successfully. "
        "However, if this connector manages offsets externally, they will need to be manually "
        "reset in the system that the connector uses."
    )


def test_offsets_for_missing_topics_or_partitions_name_the_field() -> None:
    counts = {"t": 2}
    rules.check_partitions_exist(
        _sink({"kafka_topic": "t", "kafka_partition": 1}, {"kafka_offset": 1})
        + _sink({"kafka_topic": "gone", "kafka_partition": 0}, None),  # a reset only deletes
        counts,
    )
    with pytest.raises(InvalidArgumentError) as missing_topic:
        rules.check_partitions_exist(
            _sink({"kafka_topic": "t", "kafka_partition": 0}, {"kafka_offset": 1})
            + _sink({"kafka_topic": "u", "kafka_partition": 0}, {"kafka_offset": 1}),
            counts,
        )
    assert missing_topic.value.violations[0].field == "offsets[1].partition.kafka_topic"
    assert "Topic u does not exist" in missing_topic.value.violations[0].description
    with pytest.raises(InvalidArgumentError) as missing_partition:
        rules.check_partitions_exist(
            _sink({"kafka_topic": "t", "kafka_partition": 2}, {"kafka_offset": 1}), counts,
            "initial_offsets.offsets",
        )
    violation = missing_partition.value.violations[0]
    assert violation.field == "initial_offsets.offsets[0].partition.kafka_partition"
    assert "has 2 partition(s)" in violation.description
