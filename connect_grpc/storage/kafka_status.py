"""Distributed mode's status store: the status topic (``status.storage.topic``).

The topic holds Kafka Connect's records (keys, values, tombstones and active topics, in
:mod:`.status_codec`), so Kafka tooling and Kafka Connect itself can read them; this module
is the store that mirrors the topic in memory and writes to it.

Status writes are asynchronous, as Kafka Connect's status store makes them: a put or delete
shows in this worker's view at once and is written by the store's writer thread, which
retries a failed write (Kafka away) until it is written or superseded by a newer write of
the same key. So a task that reports its state while Kafka is unreachable is never held or
failed by the report (see ``runtime.task``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from connect_grpc.kernel.domain import ActiveTopic, InstanceStatus, TaskId
from connect_grpc.kernel.errors import UnavailableError
from connect_grpc.storage.base import StatusRevisions
from connect_grpc.storage.kafka_log import KafkaBasedLog
from connect_grpc.storage.log_records import Freshness, LogRecord
from connect_grpc.storage.log_settings import DEFAULT_TIMEOUT_S, ClientConfig
from connect_grpc.storage.log_topic import TopicSpec
from connect_grpc.storage.status_codec import (
    EXTENSION_PREFIX,
    TOPIC_PREFIX,
    StatusKey,
    TopicKey,
    active_topic_key,
    connector_key,
    decode_active_topic,
    decode_status,
    encode_active_topic,
    encode_status,
    parse_key,
    parse_topic_key,
    task_key,
)

log = structlog.get_logger(__name__)

DEFAULT_TOPIC = "connect-status"
DEFAULT_PARTITIONS = 5
DEFAULT_REPLICATION_FACTOR = 1

#: Seconds before a failed status write is tried again; doubles up to WRITE_RETRY_MAX_S.
WRITE_RETRY_INITIAL_S = 0.2
WRITE_RETRY_MAX_S = 5.0
#: Seconds ``stop`` waits at most for the writes still pending.
STOP_FLUSH_S = 5.0

#: What a queued write is keyed by: a status key or an active topic.
WriteKey = StatusKey | TopicKey


@dataclass(frozen=True, slots=True)
class _Write:
    """A status write not yet acknowledged: the record, and what it says (None: deletes)."""

    raw_key: bytes
    value: bytes | None
    status: InstanceStatus | None
    generation: int
    #: An active-topic write: what it records (None for its tombstone).
    topic: ActiveTopic | None = None


class KafkaStatusStore:
    """Connector and task statuses in a compacted topic, mirrored in memory.

    ``start`` creates the topic if missing and reads it to its end; a background thread
    then keeps applying other workers' writes, and :meth:`refresh` waits until they are all
    seen. Puts and deletes are visible here at once and written in the background, in the
    order they were made, each carrying the store's current generation
    (:meth:`set_generation`); :meth:`flush` waits until they are acknowledged. A write that
    fails is tried again (back-off up to WRITE_RETRY_MAX_S) until it is written, replaced
    by a newer write of its key, or superseded by another worker's newer generation.

    A status from an older generation never replaces one from a newer generation written by
    another worker (as Kafka Connect's status store guards it): a worker that has not yet
    noticed its instance moved cannot hide the new owner's status. Tombstones always apply.
    Thread-safe.
    """

    def __init__(
        self,
        client_config: ClientConfig,
        topic: str = DEFAULT_TOPIC,
        partitions: int = DEFAULT_PARTITIONS,
        replication_factor: int = DEFAULT_REPLICATION_FACTOR,
        *,
        generation: int = 0,
        timeout: float = DEFAULT_TIMEOUT_S,
        on_change: Callable[[], None] | None = None,
        on_extension: Callable[[str], None] | None = None,
    ) -> None:
        """``on_change`` is called (on the tailing thread) after a record of another
        worker changed a status, so that watchers wake without polling; ``on_extension``
        with the key of each extension record applied (read back, or just written)."""
        self._on_change = on_change
        self._on_extension = on_extension
        self._lock = threading.Lock()
        self._generation = generation
        #: The statuses as the topic has them (records read back or acknowledged).
        self._connectors: dict[str, InstanceStatus] = {}
        self._tasks: dict[str, dict[int, InstanceStatus]] = {}
        #: connector → topic → its active-topic record.
        self._topics: dict[str, dict[str, ActiveTopic]] = {}
        #: The generation each current status was written in.
        self._generations: dict[StatusKey, int] = {}
        self._revisions = StatusRevisions()
        self._freshness = Freshness()
        #: key → decoded value of each live ``connect-grpc-`` record.
        self._extensions: dict[str, Any] = {}
        #: This worker's writes not yet handed to the producer, oldest first (one per key),
        #: and those being written now; both shadow the topic's statuses in reads.
        self._pending: dict[WriteKey, _Write] = {}
        self._in_flight: dict[WriteKey, _Write] = {}
        self._writes = threading.Condition(self._lock)
        self._closing = False
        self._writer: threading.Thread | None = None
        spec = TopicSpec(topic, partitions, replication_factor, compact=True)
        self._log = KafkaBasedLog(client_config, spec, self._apply, timeout=timeout)

    def start(self) -> None:
        """Creates the topic if needed, reads it to its end and starts the writer. Call once."""
        self._log.start()
        self._writer = threading.Thread(
            target=self._write_loop, name=f"status-writer-{self._log.topic}", daemon=True
        )
        self._writer.start()
        with self._lock:
            connectors, tasks = len(self._connectors), sum(map(len, self._tasks.values()))
        log.info("status_store_started", topic=self._log.topic, connectors=connectors, tasks=tasks)

    def stop(self) -> None:
        """Writes what is pending (for at most STOP_FLUSH_S in all: the writer's end and the
        producer's close included, so that a broker gone away costs the stop that much and
        no more), then stops. Idempotent."""
        deadline = time.monotonic() + STOP_FLUSH_S
        if self._writer is not None:
            try:
                self.flush(STOP_FLUSH_S)
            except UnavailableError as exc:
                log.warning("status_writes_abandoned", error=exc.message)
        with self._writes:
            self._closing = True
            self._writes.notify_all()
        if self._writer is not None:
            self._writer.join(max(0.0, deadline - time.monotonic()))
            self._writer = None
        self._log.stop(flush_timeout=max(0.0, deadline - time.monotonic()))

    def refresh(self, timeout: float | None = None) -> None:
        """Blocks until every status in the topic when called is visible here.

        Raises UnavailableError after ``timeout`` seconds (default: the store's timeout).
        """
        self._log.read_to_end(timeout)

    def flush(self, timeout: float) -> None:
        """Blocks until every put and delete made before the call is acknowledged (or
        dropped as superseded); UnavailableError after ``timeout`` seconds."""
        with self._writes:
            if not self._writes.wait_for(
                lambda: not (self._pending or self._in_flight) or self._closing, timeout
            ):
                count = len(self._pending) + len(self._in_flight)
                raise UnavailableError(
                    f"{count} status writes to topic {self._log.topic} not acknowledged "
                    f"in {timeout:g} s"
                )

    def set_generation(self, generation: int) -> None:
        """The group generation written with every later status (Kafka's ``generation``)."""
        with self._lock:
            self._generation = generation

    def put_connector(self, connector: str, status: InstanceStatus) -> None:
        """Records the connector's status (written in the background), unless another
        worker's status of a newer generation stands."""
        self._put(connector, connector_key(connector), status)

    def put_task(self, task: TaskId, status: InstanceStatus) -> None:
        """Records the task's status (written in the background), unless another worker's
        status of a newer generation stands."""
        self._put(task, task_key(task), status)

    def _put(self, key: StatusKey, raw_key: bytes, status: InstanceStatus) -> None:
        with self._lock:
            generation = self._generation
            if self._superseded(key, status, generation):
                log.info("status_not_written_superseded", key=str(key), generation=generation)
                return
            if self._unchanged(key, status, generation):
                return
            status = self._revisions.stamp(status, self._shown(key))
            self._enqueue(key, _Write(raw_key, encode_status(status, generation), status,
                                      generation))

    def get_connector(self, connector: str) -> InstanceStatus | None:
        with self._lock:
            return self._shown(connector)

    def get_task(self, task: TaskId) -> InstanceStatus | None:
        with self._lock:
            return self._shown(task)

    def tasks(self, connector: str) -> dict[int, InstanceStatus]:
        with self._lock:
            current = dict(self._tasks.get(connector, {}))
            for key, write in (*self._in_flight.items(), *self._pending.items()):
                if isinstance(key, TaskId) and key.connector == connector:
                    if write.status is None:
                        current.pop(key.task, None)
                    else:
                        current[key.task] = write.status
            return current

    def delete_connector(self, connector: str) -> None:
        """Forgets the connector's and all its tasks' statuses (tombstones for each)."""
        with self._lock:
            numbers = sorted(
                {*self._tasks.get(connector, {}), *self._outstanding_tasks(connector)}
            )
            for number in numbers:
                task = TaskId(connector, number)
                self._enqueue(task, _Write(task_key(task), None, None, self._generation))
            self._enqueue(
                connector, _Write(connector_key(connector), None, None, self._generation)
            )

    def delete_task(self, task: TaskId) -> None:
        """Forgets the task's status (a tombstone)."""
        with self._lock:
            self._enqueue(task, _Write(task_key(task), None, None, self._generation))

    def get_topic(self, connector: str, topic: str) -> ActiveTopic | None:
        with self._lock:
            write = self._outstanding(TopicKey(connector, topic))
            if write is not None:
                return write.topic
            return self._topics.get(connector, {}).get(topic)

    def put_topic(self, active: ActiveTopic) -> None:
        """Records the active topic (written in the background, retried until written)."""
        key = TopicKey(active.connector, active.topic)
        write = _Write(
            active_topic_key(active.connector, active.topic), encode_active_topic(active),
            None, 0, active,
        )
        with self._lock:
            self._enqueue(key, write)

    def topics(self, connector: str) -> list[ActiveTopic]:
        with self._lock:
            current = dict(self._topics.get(connector, {}))
            for key, write in (*self._in_flight.items(), *self._pending.items()):
                if isinstance(key, TopicKey) and key.connector == connector:
                    if write.topic is None:
                        current.pop(key.topic, None)
                    else:
                        current[key.topic] = write.topic
            return [current[topic] for topic in sorted(current)]

    def delete_topic(self, connector: str, topic: str) -> None:
        """Forgets the active topic (a tombstone, written in the background)."""
        write = _Write(active_topic_key(connector, topic), None, None, 0)
        with self._lock:
            self._enqueue(TopicKey(connector, topic), write)

    def put_extension(self, key: str, value: object | None) -> None:
        """Writes (None: deletes) one of the cluster layer's records; ``key`` starts with
        ``connect-grpc-``. Synchronous: raises ConnectError if it was not written."""
        if not key.startswith(EXTENSION_PREFIX):
            raise ValueError(f"extension keys start with {EXTENSION_PREFIX!r}: {key!r}")
        encoded = None if value is None else json.dumps(value, separators=(",", ":")).encode()
        for written in self._log.send_all([(key.encode(), encoded)]):
            self._apply(written)

    def extensions(self, prefix: str = EXTENSION_PREFIX) -> dict[str, Any]:
        """The live cluster-layer records whose key starts with ``prefix``."""
        with self._lock:
            return {k: v for k, v in self._extensions.items() if k.startswith(prefix)}

    # the writer

    def _enqueue(self, key: WriteKey, write: _Write) -> None:
        """Queues a write, replacing a pending one of the same key; it goes last, so that a
        status written after a connector's tombstone is not erased by it. Under the lock."""
        self._pending.pop(key, None)
        self._pending[key] = write
        self._writes.notify_all()

    def _outstanding(self, key: WriteKey) -> _Write | None:
        """This worker's latest write of the key not yet acknowledged. Under the lock."""
        return self._pending.get(key) or self._in_flight.get(key)

    def _outstanding_tasks(self, connector: str) -> set[int]:
        return {
            key.task
            for key in (*self._pending, *self._in_flight)
            if isinstance(key, TaskId) and key.connector == connector
        }

    def _write_loop(self) -> None:
        """The writer thread: writes what is pending, oldest first, until the store stops."""
        delay, failures = WRITE_RETRY_INITIAL_S, 0
        while True:
            batch = self._take_pending()
            if batch is None:
                return
            try:
                written = self._log.send_all([(w.raw_key, w.value) for w in batch.values()])
            except Exception as exc:
                failures += 1
                (log.warning if failures == 1 else log.debug)(
                    "status_write_failed", error=str(exc), records=len(batch),
                    attempt=failures, retry_in_s=delay,
                )
                self._requeue(batch)
                if self._wait_closing(delay):
                    return
                delay = min(delay * 2, WRITE_RETRY_MAX_S)
                continue
            for record in written:
                self._apply(record)
            self._acknowledge(batch)
            if failures:
                log.info("status_writes_recovered", attempts=failures + 1)
            delay, failures = WRITE_RETRY_INITIAL_S, 0

    def _take_pending(self) -> dict[WriteKey, _Write] | None:
        """Waits for pending writes and moves them in flight, less any superseded meanwhile
        by another worker's newer generation; None once the store is closing."""
        with self._writes:
            self._writes.wait_for(lambda: bool(self._pending) or self._closing)
            if self._closing:
                return None
            batch, self._pending = self._pending, {}
            for key, write in list(batch.items()):
                if (
                    write.status is not None
                    and not isinstance(key, TopicKey)
                    and self._superseded(key, write.status, write.generation)
                ):
                    log.info("status_not_written_superseded", key=str(key))
                    del batch[key]
            self._in_flight = dict(batch)
            self._writes.notify_all()
            return batch

    def _requeue(self, batch: dict[WriteKey, _Write]) -> None:
        """A failed batch goes back before what was queued since, except the keys that were
        written again meanwhile (the newer write replaces it)."""
        with self._writes:
            again = {k: w for k, w in batch.items() if k not in self._pending}
            self._pending = {**again, **self._pending}
            self._in_flight = {}
            self._writes.notify_all()

    def _acknowledge(self, batch: dict[WriteKey, _Write]) -> None:
        with self._writes:
            self._in_flight = {}
            self._writes.notify_all()
        log.debug("statuses_written", count=len(batch))

    def _wait_closing(self, seconds: float) -> bool:
        """Waits ``seconds`` unless the store closes first; returns whether it closes."""
        with self._writes:
            return self._writes.wait_for(lambda: self._closing, seconds)

    # the view

    def _apply(self, record: LogRecord) -> None:
        """Applies one record of the topic (read back, or just written) to the in-memory view."""
        if record.key is not None and record.key.startswith(EXTENSION_PREFIX.encode()):
            self._apply_extension(record)
            return
        if record.key is not None and record.key.startswith(TOPIC_PREFIX.encode()):
            self._apply_topic(record)
            return
        key = parse_key(record.key)
        if key is None:
            log.warning("status_record_skipped", partition=record.partition, offset=record.offset)
            return
        decoded: tuple[InstanceStatus, int] | None = None
        if record.value is not None:
            decoded = decode_status(record.value)
            if decoded is None:
                log.warning("status_record_skipped", key=str(key), offset=record.offset)
                return
        with self._lock:
            if not self._freshness.accept(key, record):
                return
            if decoded is None:
                self._set(key, None)
            elif self._superseded(key, *decoded):
                log.debug("status_record_superseded", key=str(key), generation=decoded[1])
                return
            else:
                self._set(key, self._revisions.stamp(decoded[0], self._shown(key)))
                self._generations[key] = decoded[1]
            self._drop_superseded_pending(key)
        if self._on_change is not None:
            self._on_change()

    def _drop_superseded_pending(self, key: StatusKey) -> None:
        """Another worker's newer generation now stands: this worker's pending status of
        the key would not be written, so it no longer shows either. Under the lock."""
        write = self._pending.get(key)
        if write is not None and write.status is not None and self._superseded(
            key, write.status, write.generation
        ):
            del self._pending[key]
            self._writes.notify_all()

    def _apply_topic(self, record: LogRecord) -> None:
        """Applies an active-topic record (a tombstone forgets it)."""
        key = parse_topic_key(bytes(record.key or b""))
        active = None if record.value is None else decode_active_topic(record.value)
        if key is None or (record.value is not None and active is None):
            log.warning("status_record_skipped", partition=record.partition, offset=record.offset)
            return
        with self._lock:
            if not self._freshness.accept(key, record):
                return
            known = self._topics.setdefault(key.connector, {})
            if active is None:
                known.pop(key.topic, None)
            else:
                known[key.topic] = active
            if not known:
                del self._topics[key.connector]

    def _apply_extension(self, record: LogRecord) -> None:
        key = bytes(record.key or b"").decode(errors="replace")
        try:
            value = None if record.value is None else json.loads(record.value)
        except ValueError:
            log.warning("status_record_skipped", key=key, offset=record.offset)
            return
        with self._lock:
            if not self._freshness.accept(key, record):
                return
            if value is None:
                self._extensions.pop(key, None)
            else:
                self._extensions[key] = value
        if self._on_extension is not None:
            self._on_extension(key)

    def _superseded(self, key: StatusKey, status: InstanceStatus, generation: int) -> bool:
        """Whether another worker's status of a newer generation stands. Under the lock."""
        current = self._current(key)
        if current is None or current.worker_id == status.worker_id:
            return False
        return generation < self._generations.get(key, generation)

    def _unchanged(self, key: StatusKey, status: InstanceStatus, generation: int) -> bool:
        """Whether the key's latest status, as this worker is writing it or the topic has
        it, is ``status`` already, in the same generation: its record would change nothing
        (a STOPPED connector's instance re-made for each new config, say), and every worker
        would still read it. Under the lock."""
        write = self._outstanding(key)
        if write is not None:
            return write.status == status and write.generation == generation
        return self._current(key) == status and self._generations.get(key) == generation

    def _shown(self, key: StatusKey) -> InstanceStatus | None:
        """The key's status as reads show it: this worker's write in progress, else the
        topic's. Under the lock."""
        write = self._outstanding(key)
        return write.status if write is not None else self._current(key)

    def _current(self, key: StatusKey) -> InstanceStatus | None:
        """The key's status as the topic has it. Under the lock."""
        if isinstance(key, TaskId):
            return self._tasks.get(key.connector, {}).get(key.task)
        return self._connectors.get(key)

    def _set(self, key: StatusKey, status: InstanceStatus | None) -> None:
        """Sets or (None) removes one status; called under the lock."""
        if status is None:
            self._forget_generations(key)
        if isinstance(key, TaskId):
            tasks = self._tasks.setdefault(key.connector, {})
            if status is None:
                tasks.pop(key.task, None)
            else:
                tasks[key.task] = status
            if not tasks:
                del self._tasks[key.connector]
        elif status is None:
            self._connectors.pop(key, None)
            self._tasks.pop(key, None)
        else:
            self._connectors[key] = status

    def _forget_generations(self, key: StatusKey) -> None:
        """A tombstone: the key's generation, and for a connector its tasks' too."""
        self._generations.pop(key, None)
        if not isinstance(key, TaskId):
            for task in [k for k in self._generations if isinstance(k, TaskId)]:
                if task.connector == key:
                    del self._generations[task]
