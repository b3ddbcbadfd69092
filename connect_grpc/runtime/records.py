"""Record conversions between plugin records and the plain tuples Spark ships to executors.

Executors get tuples of primitives (cheap to pickle, no project classes needed to decode);
the driver turns them back into ``SinkRecord``s. Pure code: no Spark, no Kafka.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Sequence

from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.domain import OffsetMap
from connect_grpc.runtime.batching import OffsetRange
from connect_grpc.storage.base import OffsetEntry

#: What an executor produces: (topic, partition or -1, key, value, headers).
ProduceRow = tuple[str, int, bytes | None, bytes | None, tuple[tuple[str, bytes], ...]]
#: What an executor reads: (topic, partition, offset, key, value, timestamp ms or -1, headers).
ConsumedRow = tuple[
    str, int, int, bytes | None, bytes | None, int, tuple[tuple[str, bytes], ...]
]


def to_bytes(data: bytes | str | None) -> bytes | None:
    """``str`` → UTF-8 bytes; bytes and None pass through."""
    if data is None or isinstance(data, bytes):
        return data
    return data.encode("utf-8")


def to_produce_row(record: SourceRecord) -> ProduceRow:
    partition = -1 if record.kafka_partition is None else record.kafka_partition
    return (
        record.topic,
        partition,
        to_bytes(record.key),
        to_bytes(record.value),
        tuple(record.headers),
    )


def partition_key(partition: OffsetMap) -> str:
    """A canonical text form of a source partition (same partition, same text)."""
    return json.dumps(dict(partition), sort_keys=True, separators=(",", ":"))


def _hashable(partition: OffsetMap) -> tuple[tuple[str, object], ...]:
    """A cheap hashable form of a source partition (its values are JSON scalars)."""
    return tuple(sorted(partition.items()))


def group_for_slices(records: Sequence[SourceRecord], slices: int) -> list[list[ProduceRow]]:
    """Splits a batch into ``slices`` lists of rows, keeping each source partition's records
    together and in order (one producer writes them, so their order in Kafka is kept).

    Empty lists are dropped, so the result may be shorter than ``slices``.
    """
    if slices <= 1:
        return [[to_produce_row(r) for r in records]]
    groups: list[list[ProduceRow]] = [[] for _ in range(slices)]
    slot_of: dict[tuple[tuple[str, object], ...], int] = {}
    for record in records:
        key = _hashable(record.source_partition)
        slot = slot_of.get(key)
        if slot is None:
            slot = zlib.crc32(partition_key(record.source_partition).encode()) % slices
            slot_of[key] = slot
        groups[slot].append(to_produce_row(record))
    return [group for group in groups if group]


def latest_offsets(records: Iterable[SourceRecord]) -> list[OffsetEntry]:
    """The last offset of each source partition in the batch, in first-seen partition order."""
    latest: dict[tuple[tuple[str, object], ...], SourceRecord] = {}
    for record in records:
        latest[_hashable(record.source_partition)] = record
    return [(dict(r.source_partition), dict(r.source_offset)) for r in latest.values()]


def to_sink_record(row: ConsumedRow) -> SinkRecord:
    topic, partition, offset, key, value, timestamp, headers = row
    return SinkRecord(
        topic=topic,
        kafka_partition=partition,
        kafka_offset=offset,
        key=key,
        value=value,
        timestamp_ms=None if timestamp < 0 else timestamp,
        headers=headers,
    )


def to_sink_records(rows: Iterable[ConsumedRow]) -> list[SinkRecord]:
    """Rows from executors → SinkRecords sorted by (topic, partition, offset)."""
    return [to_sink_record(row) for row in sorted(rows, key=lambda r: (r[0], r[1], r[2]))]


def next_offsets(ranges: Iterable[OffsetRange]) -> dict[tuple[str, int], int]:
    """The offsets to commit after a batch read every range to its end."""
    return {(r.topic, r.partition): r.end for r in ranges}
