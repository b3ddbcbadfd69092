"""Record conversions between plugin records and the plain tuples Spark ships to executors.

Executors get tuples of primitives (cheap to pickle, no project classes needed to decode);
the driver turns them back into ``SinkRecord``s. Pure code: no Spark, no Kafka.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from connect_grpc.connectors.api import TIMESTAMP_TYPES, SinkRecord, SourceRecord
from connect_grpc.data.record import RawHeaders
from connect_grpc.kernel.domain import OffsetMap
from connect_grpc.runtime.batching import OffsetRange
from connect_grpc.storage.base import OffsetEntry

#: What an executor produces: (topic, partition or -1, key, value, headers, timestamp as
#: the client takes it: see :func:`client_timestamp`, 0 for the producer's time).
ProduceRow = tuple[str, int, bytes | None, bytes | None, RawHeaders, int]
#: What an executor reads from one partition: (offset, key, value, timestamp ms or -1,
#: headers, timestamp type as librdkafka numbers it); the partition is said once, by the
#: range the rows belong to.
ConsumedRow = tuple[int, bytes | None, bytes | None, int, RawHeaders, int]
#: The rows read from one partition, in offset order: (topic, partition, rows).
PartitionRows = tuple[str, int, Sequence[ConsumedRow]]


class InvalidRecordTimestampError(ValueError):
    """A source record's timestamp Kafka cannot be given; it fails the task, as Kafka
    Connect's check of a record's timestamp does (outside ``errors.tolerance``)."""

    def __init__(self, timestamp_ms: int, why: str) -> None:
        super().__init__(f"Invalid record timestamp {timestamp_ms}: {why}")
        self.timestamp_ms = timestamp_ms


def client_timestamp(timestamp_ms: int) -> int:
    """A source record's ``timestamp_ms`` (not None) as confluent_kafka's ``timestamp``
    takes it, as Kafka Connect checks a record's timestamp: a positive one is written, -1
    (Kafka's "no timestamp") means the producer's time, which the client writes for 0, and
    any other negative one is refused. 0 is refused too: librdkafka reads it as "no
    timestamp" and writes its own time, so the epoch cannot be written
    (docs/decisions/0115-source-record-timestamps-reach-kafka.md)."""
    if timestamp_ms > 0:
        return timestamp_ms
    if timestamp_ms == -1:
        return 0
    if timestamp_ms == 0:
        raise InvalidRecordTimestampError(
            0,
            "the Kafka client writes a timestamp of 0 as the producer's time, so the epoch "
            "cannot be written; give None (or -1) for the producer's time, or 1 or more",
        )
    raise InvalidRecordTimestampError(
        timestamp_ms,
        "a source record's timestamp_ms is None or -1 (the producer's time), or "
        "milliseconds since the epoch",
    )


def to_produce_row(record: SourceRecord) -> ProduceRow:
    """The row an executor produces, for a connector without converters or transformations
    (bytes or str key and value, raw headers). Inlined conversions: it runs once per record
    on the driver, whose one interpreter every task of the worker shares. A timestamp
    Kafka cannot be given raises InvalidRecordTimestampError, before anything is produced."""
    key, value, partition, headers, timestamp = (
        record.key, record.value, record.kafka_partition, record.headers, record.timestamp_ms
    )
    return (
        record.topic,
        -1 if partition is None else partition,
        key.encode("utf-8") if isinstance(key, str) else key,
        value.encode("utf-8") if isinstance(value, str) else value,
        headers if headers.__class__ is tuple else _raw_pairs(headers),
        0 if timestamp is None else client_timestamp(timestamp),
    )


def _raw_pairs(headers: Iterable[Any]) -> RawHeaders:
    """(key, bytes) pairs of headers given as a list or as ConnectHeaders of bytes values
    (each Header iterates as its key and value)."""
    return tuple((key, value) for key, value in headers)


def partition_key(partition: OffsetMap) -> str:
    """A canonical text form of a source partition (same partition, same text)."""
    return json.dumps(dict(partition), sort_keys=True, separators=(",", ":"))


def _hashable(partition: OffsetMap) -> tuple[tuple[str, object], ...]:
    """A cheap hashable form of a source partition (its values are JSON scalars)."""
    return tuple(sorted(partition.items()))


def _partition_keys(records: Iterable[SourceRecord]) -> Iterator[tuple[object, SourceRecord]]:
    """Each record with the hashable form of its source partition, computed once per run of
    records sharing one partition object (what most tasks return)."""
    last: OffsetMap | None = None
    key: tuple[tuple[str, object], ...] = ()
    for record in records:
        partition = record.source_partition
        if partition is not last:
            last, key = partition, _hashable(partition)
        yield key, record


def group_for_slices(records: Sequence[SourceRecord], slices: int) -> list[list[ProduceRow]]:
    """Splits a batch into ``slices`` lists of rows, keeping each source partition's records
    together and in order (one producer writes them, so their order in Kafka is kept).

    Empty lists are dropped, so the result may be shorter than ``slices``.
    """
    if slices <= 1:
        return [[to_produce_row(r) for r in records]]
    groups: list[list[ProduceRow]] = [[] for _ in range(slices)]
    slot_of: dict[object, int] = {}
    for key, record in _partition_keys(records):
        slot = slot_of.get(key)
        if slot is None:
            slot = zlib.crc32(partition_key(record.source_partition).encode()) % slices
            slot_of[key] = slot
        groups[slot].append(to_produce_row(record))
    return [group for group in groups if group]


def slice_indexes(records: Sequence[SourceRecord], slices: int) -> list[list[int]]:
    """Which record (its index in ``records``) each row of ``group_for_slices(records,
    slices)`` is, slice by slice: worked out again only when a slice names a row (a record
    refused), so that the hot path builds no index."""
    if slices <= 1:
        return [list(range(len(records)))]
    groups: list[list[int]] = [[] for _ in range(slices)]
    slot_of: dict[object, int] = {}
    for index, (key, record) in enumerate(_partition_keys(records)):
        slot = slot_of.get(key)
        if slot is None:
            slot = zlib.crc32(partition_key(record.source_partition).encode()) % slices
            slot_of[key] = slot
        groups[slot].append(index)
    return [group for group in groups if group]


def latest_offsets(records: Iterable[SourceRecord]) -> list[OffsetEntry]:
    """The last offset of each source partition in the batch, in first-seen partition order."""
    latest: dict[object, SourceRecord] = {}
    for key, record in _partition_keys(records):
        latest[key] = record
    return [(dict(r.source_partition), dict(r.source_offset)) for r in latest.values()]


def to_sink_records(partitions: Iterable[PartitionRows]) -> list[SinkRecord]:
    """Rows from executors → SinkRecords, partition after partition, each in offset order
    (positional construction: it runs once per record on the driver)."""
    types = TIMESTAMP_TYPES
    return [
        SinkRecord(
            topic, partition, offset, key, value, None if ts < 0 else ts, headers, None, None,
            types[ts_type],
        )
        for topic, partition, rows in partitions
        for offset, key, value, ts, headers, ts_type in rows
    ]


def next_offsets(ranges: Iterable[OffsetRange]) -> dict[tuple[str, int], int]:
    """The offsets to commit after a batch read every range to its end."""
    return {(r.topic, r.partition): r.end for r in ranges}
