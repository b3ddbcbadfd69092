"""Source offsets of connectors with their own offsets topic (``offsets.storage.topic``,
KIP-618), next to the worker's: Kafka Connect's ConnectorOffsetBackingStore semantics.

A connector whose config names its own topic reads its offsets from that topic first and,
for a partition that topic does not have, from the worker's topic (so a connector moved
to its own topic resumes where it was). Its writes go to its own topic, then to the
worker's (best effort: a failure there is logged, since the connector's topic is the
authority), so that the worker's topic stays a fallback. A connector without its own
topic, or whose topic is the worker's, uses the worker's store alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

import structlog

from connect_grpc.kernel import deadline
from connect_grpc.kernel.domain import OffsetMap, OffsetPrimitive
from connect_grpc.kernel.errors import UnavailableError
from connect_grpc.storage.base import OffsetEntry, OffsetStore, StoredOffset
from connect_grpc.storage.kafka_offsets import KafkaOffsetStore

log = structlog.get_logger(__name__)

OFFSETS_STORAGE_TOPIC = "offsets.storage.topic"
#: Seconds a caller is told to wait before retrying while a topic's store is opened.
OPENING_RETRY_S = 1.0


def own_offsets_topic(connector_config: Mapping[str, str]) -> str | None:
    """The connector's ``offsets.storage.topic`` (trimmed), or None when unset."""
    topic = (connector_config.get(OFFSETS_STORAGE_TOPIC) or "").strip()
    return topic or None


def put_fallback(store: OffsetStore, connector: str, entries: Sequence[OffsetEntry]) -> None:
    """Writes offsets to the worker's topic after the connector's own; a failure is logged,
    not raised (the connector's topic is the authority)."""
    try:
        store.put(connector, entries)
    except Exception:
        log.warning("fallback_offsets_write_failed", connector=connector, exc_info=True)


class LayeredOffsets:
    """One connector's offsets: its own topic's store first, the worker's as the fallback."""

    def __init__(self, primary: OffsetStore, fallback: OffsetStore) -> None:
        self._primary = primary
        self._fallback = fallback

    def start(self) -> None:
        """Nothing: both stores are started by their owners."""

    def stop(self) -> None:
        """Nothing: both stores are stopped by their owners."""

    def get(self, connector: str, partition: OffsetMap) -> dict[str, OffsetPrimitive] | None:
        found = self._primary.get(connector, partition)
        return found if found is not None else self._fallback.get(connector, partition)

    def get_all(self, connector: str) -> list[StoredOffset]:
        primary = self._primary.get_all(connector)
        seen = [partition for partition, _ in primary]
        extra = [(p, o) for p, o in self._fallback.get_all(connector) if p not in seen]
        return [*primary, *extra]

    def put(self, connector: str, entries: Sequence[OffsetEntry]) -> None:
        self._primary.put(connector, entries)
        put_fallback(self._fallback, connector, entries)

    def refresh(self, timeout: float | None = None) -> None:
        self._primary.refresh(timeout)
        self._fallback.refresh(timeout)


class ConnectorOffsetStores:
    """The worker's offset store and a store per connector-specific offsets topic, opened
    the first time a connector with that topic needs it and kept until :meth:`stop`.

    Opening a topic's store (creating the topic, reading it to its end) runs on a thread of
    its own: a caller waits for it no longer than its deadline (``deadline.remaining()``),
    then gets UnavailableError while the opening goes on, and a later call finds the store.

    Args:
        worker_store: the worker's offsets topic (started and stopped by its owner).
        open_store: builds and starts the store of a topic (creating the topic if needed);
            may raise (Kafka unreachable): the callers waiting get the error, and the next
            request tries again.
    """

    def __init__(
        self, worker_store: KafkaOffsetStore, open_store: Callable[[str], KafkaOffsetStore]
    ) -> None:
        self._worker_store = worker_store
        self._open_store = open_store
        self._lock = threading.Lock()
        self._openings: dict[str, Future[KafkaOffsetStore]] = {}
        self._stopped = False

    def for_config(self, connector_config: Mapping[str, str]) -> OffsetStore:
        """The offsets of the connector with this config."""
        primary = self.primary(connector_config)
        if primary is self._worker_store:
            return primary
        return LayeredOffsets(primary, self._worker_store)

    def primary(self, connector_config: Mapping[str, str]) -> KafkaOffsetStore:
        """The store the connector's offsets are written to first: its own topic's, or the
        worker's."""
        topic = own_offsets_topic(connector_config)
        if topic is None or topic == self._worker_store.topic:
            return self._worker_store
        return self._store_of(topic)

    def _store_of(self, topic: str) -> KafkaOffsetStore:
        with self._lock:
            if self._stopped:
                raise UnavailableError("the worker is stopping")
            opening = self._openings.get(topic)
            if opening is None or (opening.done() and opening.exception() is not None):
                opening = self._openings[topic] = Future()
                threading.Thread(
                    target=self._open, args=(topic, opening), name=f"open-offsets-{topic}",
                    daemon=True,
                ).start()
        try:
            return opening.result(deadline.remaining())
        except FutureTimeout:
            raise UnavailableError(
                f"the offsets topic {topic} (offsets.storage.topic) is still being read: "
                "retry shortly",
                retry_after_seconds=OPENING_RETRY_S,
            ) from None

    def _open(self, topic: str, opening: Future[KafkaOffsetStore]) -> None:
        try:
            store = self._open_store(topic)
        except BaseException as exc:
            opening.set_exception(exc)
            return
        with self._lock:  # published under the lock, so stop() either sees it or ran first
            stopped = self._stopped
            if not stopped:
                opening.set_result(store)
        if stopped:
            store.stop()
            opening.set_exception(UnavailableError("the worker is stopping"))
            return
        log.info("connector_offsets_topic_opened", topic=topic)

    def stop(self) -> None:
        """Stops the connector-specific stores (not the worker's). Idempotent; a store still
        being opened is stopped when its opening ends."""
        with self._lock:
            self._stopped = True
            openings, self._openings = list(self._openings.values()), {}
        for opening in openings:
            if opening.done() and opening.exception() is None:
                opening.result().stop()
