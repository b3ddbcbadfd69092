"""Distributed mode's offset store: the offsets topic (``offset.storage.topic``).

Records have Kafka Connect's format, so Kafka tooling and Kafka Connect itself can read
them: the key is the JSON ``["<connector>", {partition}]``, the value the JSON offset map,
and a tombstone (null value) resets the partition. We write keys canonically (sorted
fields, no spaces, see :mod:`~connect_grpc.storage.offsets_codec`) so one partition always
has the same key bytes and so the same topic partition; keys written by other writers are
read in whatever field order they have and normalised.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from connect_grpc.kernel.domain import OffsetMap, OffsetPrimitive
from connect_grpc.storage import offsets_codec
from connect_grpc.storage.base import OffsetEntry, StoredOffset
from connect_grpc.storage.kafka_log import KafkaBasedLog
from connect_grpc.storage.log_records import Freshness, LogRecord
from connect_grpc.storage.log_settings import DEFAULT_TIMEOUT_S, ClientConfig
from connect_grpc.storage.log_topic import TopicSpec

log = structlog.get_logger(__name__)

DEFAULT_TOPIC = "connect-offsets"
DEFAULT_PARTITIONS = 25
DEFAULT_REPLICATION_FACTOR = 1


class KafkaOffsetStore:
    """Source offsets in a compacted topic, mirrored in memory.

    ``start`` creates the topic if missing (compacted, ``partitions`` partitions,
    ``replication_factor`` replicas) and reads it to its end; a background thread then keeps
    applying other workers' writes, and :meth:`refresh` waits until they are all seen.
    ``put`` returns once the records are acknowledged by all in-sync replicas (idempotent
    producer) and is visible to ``get`` at once. Reads are answered from memory. Thread-safe.
    """

    def __init__(
        self,
        client_config: ClientConfig,
        topic: str = DEFAULT_TOPIC,
        partitions: int = DEFAULT_PARTITIONS,
        replication_factor: int = DEFAULT_REPLICATION_FACTOR,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self._lock = threading.Lock()
        #: connector → canonical key → (partition, offset); only live offsets.
        self._offsets: dict[str, dict[bytes, StoredOffset]] = {}
        self._freshness = Freshness()
        #: canonical key → what a ``put`` is writing under it now
        self._writing: dict[bytes, _Writing] = {}
        spec = TopicSpec(topic, partitions, replication_factor, compact=True)
        self._log = KafkaBasedLog(client_config, spec, self._apply, timeout=timeout)

    @property
    def topic(self) -> str:
        """The offsets topic."""
        return self._log.topic

    def start(self) -> None:
        """Creates the topic if needed and reads it to its end. Call once."""
        self._log.start()
        with self._lock:
            entries = sum(len(partitions) for partitions in self._offsets.values())
        log.info("offset_store_started", topic=self._log.topic, entries=entries)

    def stop(self) -> None:
        """Stops following the topic. Idempotent."""
        self._log.stop()

    def refresh(self, timeout: float | None = None) -> None:
        """Blocks until every offset in the topic when called is visible here.

        Raises UnavailableError after ``timeout`` seconds (default: the store's timeout).
        """
        self._log.read_to_end(timeout)

    def wait_for(self, written: Sequence[LogRecord], timeout: float | None = None) -> None:
        """Blocks until records another writer wrote (a transaction) are applied here.

        Raises UnavailableError after ``timeout`` seconds (default: the store's timeout).
        """
        self._log.read_past(written, timeout)

    def get(self, connector: str, partition: OffsetMap) -> dict[str, OffsetPrimitive] | None:
        """The latest offset of one partition, or None (never written, or reset)."""
        key = offsets_codec.encode_key(connector, partition)
        with self._lock:
            stored = self._offsets.get(connector, {}).get(key)
        return None if stored is None else dict(stored[1])

    def get_all(self, connector: str) -> list[StoredOffset]:
        """Every partition of the connector with a live (non-tombstone) offset."""
        with self._lock:
            stored = list(self._offsets.get(connector, {}).values())
        return [(dict(partition), dict(offset)) for partition, offset in stored]

    def put(self, connector: str, entries: Sequence[OffsetEntry]) -> None:
        """Writes offsets; an entry whose offset is None resets that partition (tombstone).

        Durable and visible to ``get`` when it returns; raises ConnectError if any record
        was not written (the others may have been).
        """
        records = encode_records(connector, entries)
        if not records:
            return
        # What is written is known as it was given: applied without decoding each record
        # again (tens of thousands in one alter), here once acknowledged, or by the tailing
        # thread if it reads the record back first (it often does).
        writing = [
            (key, _Writing(connector, value, None if offset is None else (dict(p), dict(offset))))
            for (key, value), (p, offset) in zip(records, entries, strict=True)
        ]
        with self._lock:
            self._writing.update(writing)
        try:
            written = self._log.send_all(records)
            with self._lock:
                for (key, mine), record in zip(writing, written, strict=True):
                    self._store(mine.connector, key, record, mine.stored)
        finally:
            with self._lock:
                for key, mine in writing:
                    if self._writing.get(key) is mine:
                        del self._writing[key]
        log.debug("offsets_written", connector=connector, count=len(records))

    def _apply(self, record: LogRecord) -> None:
        """Applies one record of the topic (read back, or just written) to the in-memory view."""
        with self._lock:
            if record.key is not None and self._applied_as_written(record.key, record):
                return
        decoded = decode_record(record)
        if decoded is None:
            log.warning("offset_record_skipped", partition=record.partition, offset=record.offset)
            return
        connector, key, stored = decoded
        with self._lock:
            self._store(connector, key, record, stored)

    def _applied_as_written(self, key: bytes, record: LogRecord) -> bool:
        """(Under the lock) Whether ``record`` is one of this store's own writes, applied
        now or before without decoding it: our keys are canonical, so one lookup tells."""
        if self._freshness.covers(key, record):
            return True
        mine = self._writing.get(key)
        if mine is None or mine.value != record.value:
            return False
        self._store(mine.connector, key, record, mine.stored)
        return True

    def _store(
        self, connector: str, key: bytes, record: LogRecord, stored: StoredOffset | None
    ) -> None:
        """Applies ``record`` of the canonical ``key`` (under the lock): a record older than
        the last one applied for its key changes nothing."""
        if not self._freshness.accept(key, record):
            return
        partitions = self._offsets.setdefault(connector, {})
        if stored is None:
            partitions.pop(key, None)
        else:
            partitions[key] = stored
        if not partitions:
            del self._offsets[connector]


@dataclass(frozen=True, slots=True)
class _Writing:
    """A record a ``put`` is writing: its connector, value bytes and what it stores."""

    connector: str
    value: bytes | None
    stored: StoredOffset | None


def encode_records(
    connector: str, entries: Sequence[OffsetEntry]
) -> list[tuple[bytes, bytes | None]]:
    """The offsets topic's records of ``entries`` (a None offset: a tombstone)."""
    return [
        (offsets_codec.encode_key(connector, partition), offsets_codec.encode_value(offset))
        for partition, offset in entries
    ]


def decode_record(record: LogRecord) -> tuple[str, bytes, StoredOffset | None] | None:
    """(connector, canonical key, (partition, offset) or None for a reset) of one record.

    None when the record is not an offset record (bad key or value).
    """
    if record.key is None:
        return None
    decoded_key = offsets_codec.decode_key(record.key)
    if decoded_key is None:
        return None
    connector, partition = decoded_key
    try:
        offset = offsets_codec.decode_value(record.value)
    except ValueError:
        return None
    canonical = offsets_codec.encode_key(connector, partition)
    return connector, canonical, None if offset is None else (partition, offset)
