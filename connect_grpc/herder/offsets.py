"""Validation and messages of offset requests (KIP-875 alter/reset, KIP-995 initial offsets).

Pure functions: every bad offset becomes an InvalidArgumentError naming its field, before
anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from connect_grpc.configdef import INT_MAX, LONG_MAX, parse_java_integer
from connect_grpc.domain import ConnectorOffset, OffsetMap, OffsetPrimitive
from connect_grpc.errors import InvalidArgumentError

KAFKA_TOPIC = "kafka_topic"
KAFKA_PARTITION = "kafka_partition"
KAFKA_OFFSET = "kafka_offset"

#: (topic, partition) → next offset to consume; None resets the partition.
SinkOffsets = dict[tuple[str, int], int | None]
#: (partition, offset) pairs; offset None resets the partition.
SourceOffsets = list[tuple[OffsetMap, OffsetMap | None]]

EMPTY_OFFSETS = "Partitions / offsets need to be provided for an alter offsets request"


def success_message(verb: str, applied_externally: bool) -> str:
    """Kafka Connect's success texts; ``verb`` is "altered", "reset" or "set"."""
    if applied_externally:
        return f"The offsets for this connector have been {verb} successfully"
    return (
        f"The Connect framework-managed offsets for this connector have been {verb} "
        "successfully. However, if this connector manages offsets externally, they will need "
        f"to be manually {verb} in the system that the connector uses."
    )


def require_offsets(offsets: Sequence[ConnectorOffset], field: str = "offsets") -> None:
    if not offsets:
        raise InvalidArgumentError.for_field(field, EMPTY_OFFSETS)


#: Kafka Connect's message for a sink partition without one of its two keys; a key that is
#: present with a null value has a message of its own (below).
MISSING_PARTITION_KEYS = (
    f"The partition for a sink connector offset must contain the keys '{KAFKA_TOPIC}' and "
    f"'{KAFKA_PARTITION}'"
)
#: Kafka Connect's messages for a sink partition key whose value is null.
NULL_TOPIC = "Kafka topic names must be valid strings and may not be null"
NULL_PARTITION = "Kafka partitions must be valid numbers and may not be null"


def _integer(value: OffsetPrimitive, maximum: int) -> int | None:
    """A JSON integer or a decimal string as Java's ``parseInt``/``parseLong`` reads it (``10``
    and ``"10"``, not ``10.0``, ``true`` or ``" 10"``), or None when it is not one or lies
    outside [-maximum-1, maximum]."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if -maximum - 1 <= value <= maximum else None
    if isinstance(value, str):
        try:
            return parse_java_integer(value, -maximum - 1, maximum)
        except ValueError:
            return None
    return None


def _sink_partition(entry: ConnectorOffset, path: str) -> tuple[str, int]:
    partition = entry.partition
    if partition is None:
        raise InvalidArgumentError.for_field(
            f"{path}.partition",
            "The partition for a sink connector offset cannot be null or missing",
        )
    for key in (KAFKA_TOPIC, KAFKA_PARTITION):
        if key not in partition:
            raise InvalidArgumentError.for_field(
                f"{path}.partition.{key}", MISSING_PARTITION_KEYS
            )
    topic = partition[KAFKA_TOPIC]
    if topic is None:
        raise InvalidArgumentError.for_field(f"{path}.partition.{KAFKA_TOPIC}", NULL_TOPIC)
    if not isinstance(topic, str) or not topic:
        raise InvalidArgumentError.for_field(
            f"{path}.partition.{KAFKA_TOPIC}",
            f"The Kafka topic in a sink connector offset must be a non-empty string, got {topic!r}",
        )
    if partition[KAFKA_PARTITION] is None:
        raise InvalidArgumentError.for_field(f"{path}.partition.{KAFKA_PARTITION}", NULL_PARTITION)
    number = _integer(partition[KAFKA_PARTITION], INT_MAX)
    if number is None:
        raise InvalidArgumentError.for_field(
            f"{path}.partition.{KAFKA_PARTITION}",
            f"Failed to parse the following Kafka partition value in the provided offsets: "
            f"'{partition[KAFKA_PARTITION]}'. Partition values for sink connectors need to be "
            "integers (32-bit).",
        )
    if number < 0:
        raise InvalidArgumentError.for_field(
            f"{path}.partition.{KAFKA_PARTITION}",
            f"Kafka partitions must be non-negative, got {number}",
        )
    return topic, number


def _sink_offset(entry: ConnectorOffset, path: str) -> int | None:
    offset = entry.offset
    if offset is None:
        return None
    if KAFKA_OFFSET not in offset:
        raise InvalidArgumentError.for_field(
            f"{path}.offset",
            f"The offset for a sink connector should either be null or contain the key "
            f"'{KAFKA_OFFSET}'",
        )
    number = _integer(offset[KAFKA_OFFSET], LONG_MAX)
    if number is None:
        raise InvalidArgumentError.for_field(
            f"{path}.offset.{KAFKA_OFFSET}",
            f"Failed to parse the following Kafka offset value in the provided offsets: "
            f"'{offset[KAFKA_OFFSET]}'. Offset values for sink connectors need to be integers "
            "(64-bit).",
        )
    if number < 0:
        raise InvalidArgumentError.for_field(
            f"{path}.offset.{KAFKA_OFFSET}", f"Kafka offsets must be non-negative, got {number}"
        )
    return number


def parse_sink_offsets(offsets: Sequence[ConnectorOffset], field: str = "offsets") -> SinkOffsets:
    """Validates sink offsets as Kafka does (and rejects negatives up front)."""
    parsed: SinkOffsets = {}
    for index, entry in enumerate(offsets):
        path = f"{field}[{index}]"
        parsed[_sink_partition(entry, path)] = _sink_offset(entry, path)
    return parsed


def check_partitions_exist(
    offsets: Sequence[ConnectorOffset],
    partition_counts: Mapping[str, int],
    field: str = "offsets",
) -> None:
    """Rejects an offset for a topic or partition the Kafka cluster does not have (the
    request is already parsed). ``partition_counts`` maps each existing topic to its number of
    partitions. Resets (null offsets) are allowed anywhere: they only delete."""
    for index, entry in enumerate(offsets):
        if entry.offset is None:
            continue
        path = f"{field}[{index}]"
        topic, partition = _sink_partition(entry, path)
        count = partition_counts.get(topic)
        if count is None:
            raise InvalidArgumentError.for_field(
                f"{path}.partition.{KAFKA_TOPIC}",
                f"Topic {topic} does not exist on the Kafka cluster",
            )
        if partition >= count:
            raise InvalidArgumentError.for_field(
                f"{path}.partition.{KAFKA_PARTITION}",
                f"Partition {partition} of topic {topic} does not exist: the topic has {count} "
                f"partition(s), numbered from 0",
            )


def parse_source_offsets(
    offsets: Sequence[ConnectorOffset], field: str = "offsets"
) -> SourceOffsets:
    """Validates source offsets: a partition is required; keys are strings and values
    primitives (the wire format guarantees both)."""
    parsed: SourceOffsets = []
    for index, entry in enumerate(offsets):
        if entry.partition is None:
            raise InvalidArgumentError.for_field(
                f"{field}[{index}].partition",
                "The partition for a source connector offset cannot be null or missing",
            )
        parsed.append((dict(entry.partition), None if entry.offset is None else dict(entry.offset)))
    return parsed


def sink_offsets_to_connector_offsets(
    committed: dict[tuple[str, int], int],
) -> list[ConnectorOffset]:
    return [
        ConnectorOffset({KAFKA_TOPIC: topic, KAFKA_PARTITION: partition}, {KAFKA_OFFSET: offset})
        for (topic, partition), offset in sorted(committed.items())
    ]
