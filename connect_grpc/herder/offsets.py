"""Validation and messages of offset requests (KIP-875 alter/reset, KIP-995 initial offsets).

Pure functions: every bad offset becomes an InvalidArgumentError naming its field, before
anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from connect_grpc.kernel.configdef import INT_MAX, LONG_MAX, parse_java_integer
from connect_grpc.kernel.domain import ConnectorOffset, OffsetMap, OffsetPrimitive
from connect_grpc.kernel.errors import InvalidArgumentError

KAFKA_TOPIC = "kafka_topic"
KAFKA_PARTITION = "kafka_partition"
KAFKA_OFFSET = "kafka_offset"

#: (topic, partition) → next offset to consume; None resets the partition.
SinkOffsets = dict[tuple[str, int], int | None]
#: (partition, offset) pairs; offset None resets the partition.
SourceOffsets = list[tuple[OffsetMap, OffsetMap | None]]
#: (topic, partition) → record time (milliseconds since the epoch) to rewind it to.
SinkTimes = dict[tuple[str, int], int]

#: The request fields of a rewind by time.
RECORD_TIME = "record_time"
ALL_PARTITIONS_RECORD_TIME = "all_partitions_record_time"

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
    """Validates sink offsets as Kafka does (and rejects negatives up front); an entry with
    a record time is left to :func:`parse_sink_times`."""
    parsed: SinkOffsets = {}
    for index, entry in enumerate(offsets):
        path = f"{field}[{index}]"
        if entry.record_time_ms is None:
            parsed[_sink_partition(entry, path)] = _sink_offset(entry, path)
    return parsed


def check_record_time(time_ms: int, field: str) -> int:
    """A record time as Kafka can look it up: not before the epoch (Kafka's negative
    timestamps are the special "latest"/"earliest" of its ListOffsets request)."""
    if time_ms < 0:
        raise InvalidArgumentError.for_field(
            field,
            f"A record time must not be before 1970-01-01T00:00:00Z (Kafka record timestamps "
            f"are milliseconds since the epoch), got {time_ms} ms",
        )
    return time_ms


def parse_sink_times(offsets: Sequence[ConnectorOffset], field: str = "offsets") -> SinkTimes:
    """The partitions given a record time, validated like any sink partition. A partition
    is given either an offset or a record time."""
    times: SinkTimes = {}
    for index, entry in enumerate(offsets):
        if entry.record_time_ms is None:
            continue
        path = f"{field}[{index}]"
        if entry.offset is not None:
            raise InvalidArgumentError.for_field(
                f"{path}.{RECORD_TIME}",
                "A partition is given either an offset or a record time, not both",
            )
        partition = _sink_partition(entry, path)
        times[partition] = check_record_time(entry.record_time_ms, f"{path}.{RECORD_TIME}")
    return times


def refuse_times_for_source(
    offsets: Sequence[ConnectorOffset], all_partitions_time_ms: int | None, field: str,
    all_partitions_field: str, name: str,
) -> None:
    """A record time names a position in a Kafka topic: only a sink's offsets are that."""
    why = (
        f"Record times apply only to a sink connector's offsets (positions in Kafka topics); "
        f"connector {name} is a source connector"
    )
    if all_partitions_time_ms is not None:
        raise InvalidArgumentError.for_field(all_partitions_field, why)
    for index, entry in enumerate(offsets):
        if entry.record_time_ms is not None:
            raise InvalidArgumentError.for_field(f"{field}[{index}].{RECORD_TIME}", why)


def require_offsets_or_time(
    offsets: Sequence[ConnectorOffset], all_partitions_time_ms: int | None, field: str,
    all_partitions_field: str,
) -> None:
    """Either offsets (per partition) or one record time for all partitions, not both."""
    if all_partitions_time_ms is None:
        require_offsets(offsets, field)
        return
    if offsets:
        raise InvalidArgumentError.for_field(
            all_partitions_field,
            f"Give either {field} or {all_partitions_field}, not both",
        )
    check_record_time(all_partitions_time_ms, all_partitions_field)


def resolved_message(resolved: Mapping[tuple[str, int], tuple[int, int, bool]]) -> str:
    """Says where each record time put its partition: (time, offset, at the end)."""
    parts = [
        f"{topic}-{partition} at {time_ms} ms -> offset {offset}"
        + (" (its end: no record at or after that time)" if at_end else "")
        for (topic, partition), (time_ms, offset, at_end) in sorted(resolved.items())
    ]
    return "Offsets resolved from record times: " + "; ".join(parts) + "."


def check_partitions_exist(
    offsets: Sequence[ConnectorOffset],
    partition_counts: Mapping[str, int],
    field: str = "offsets",
) -> None:
    """Rejects an offset for a topic or partition the Kafka cluster does not have (the
    request is already parsed), whether given an offset or a record time.
    ``partition_counts`` maps each existing topic to its number of partitions. Resets (null
    offsets) are allowed anywhere: they only delete."""
    for index, entry in enumerate(offsets):
        if entry.offset is None and entry.record_time_ms is None:
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
