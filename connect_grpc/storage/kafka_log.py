"""A compacted Kafka topic read as a log: the machinery shared by the Kafka-topic stores.

:class:`KafkaBasedLog` (after Kafka Connect's class of that name) makes sure the topic
exists, reads it from the beginning with a plain assigned consumer (no group membership,
``read_committed``), keeps a background thread tailing it and hands every record to a
callback, in offset order per partition. :meth:`KafkaBasedLog.read_to_end` blocks until
the callback has seen everything that was in the topic when it was called, which is how a
store catches up with other workers' writes. Writes go through one idempotent producer and
are synchronous: :meth:`KafkaBasedLog.send_all` returns once every record is acknowledged
by all in-sync replicas, with the offset each one was written at.

This module is the log itself: its tail thread (the reading) and its synchronous writes.
Below it, each in a module of its own: the records it hands over (:mod:`.log_records`), its
topic's creation and checks (:mod:`.log_topic`) and its clients' settings
(:mod:`.log_settings`).

Every store keeps its own in-memory view and applies both the records read back and its
own writes to it; :class:`~.log_records.Freshness` lets it ignore a record read late that is
older than one it applied already.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import structlog
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

# Public, but re-exported without __all__ in confluent-kafka 2.16's typed package.
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    OffsetSpec,
)

from connect_grpc.kernel.errors import ConnectError, UnavailableError
from connect_grpc.kernel.kafka_clients import with_client_log
from connect_grpc.storage.log_records import (
    LogRecord,
    _as_bytes,
    _Deliveries,
    _headers,
    _timestamp_ms,
)
from connect_grpc.storage.log_settings import (
    DEFAULT_TIMEOUT_S,
    METADATA_RETRY_S,
    ClientConfig,
    log_consumer_config,
    log_producer_config,
)
from connect_grpc.storage.log_topic import TopicSpec, _partition_count, _retriable, ensure_topic

log = structlog.get_logger(__name__)

#: What the log calls for every record it reads, in offset order per partition.
RecordCallback = Callable[["LogRecord"], None]
#: What the log calls after each batch of records it read and applied (``on_record``).
BatchCallback = Callable[[], None]

POLL_TIMEOUT_S = 0.1
POLL_BATCH = 500


@dataclass(slots=True)
class _Waiter:
    """A read_to_end call: the end offsets it waits for and the event the tail thread sets;
    ``before_batch_end``: released once the records are applied, before ``after_batch``."""

    targets: dict[int, int]
    done: threading.Event
    before_batch_end: bool = False


class KafkaBasedLog:
    """One topic: created if missing, read from the beginning, tailed, written synchronously.

    ``on_record`` runs on the log's thread for every record, in offset order per partition;
    an exception it raises is logged and the record skipped. ``after_batch``, when given,
    runs on that thread after each batch of records, once the waiters that asked to be
    released before it were (a store tells its listeners there, so that a writer waiting
    for its own record is woken before the threads those listeners wake). ``start``/``stop``
    are called once each, from one thread; ``read_to_end`` and ``send_all`` are thread-safe.
    """

    def __init__(
        self,
        client_config: ClientConfig,
        spec: TopicSpec,
        on_record: RecordCallback,
        *,
        after_batch: BatchCallback | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self._config: dict[str, str | int | float | bool] = dict(client_config)
        self._spec = spec
        self._on_record = on_record
        self._after_batch = after_batch
        self._timeout = timeout
        self._log = log.bind(topic=spec.name)
        self._admin: AdminClient | None = None
        self._producer: Producer | None = None
        self._partitions: list[TopicPartition] = []
        #: Per partition, the position up to which ``after_batch`` has run too.
        self._positions: dict[int, int] = {}
        #: Per partition, the position up to which ``on_record`` has run.
        self._applied: dict[int, int] = {}
        self._waiters: list[_Waiter] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    @property
    def topic(self) -> str:
        return self._spec.name

    def start(self) -> None:
        """Creates the topic if needed, starts tailing it and reads it to its current end.

        Raises UnavailableError when the broker does not answer within the timeout.
        """
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        self._log.info("kafka_log_started", partitions=len(self._partitions))

    def _start(self) -> None:
        self._admin = AdminClient(dict(self._config))
        ensure_topic(self._admin, self._spec, self._timeout)
        count = _partition_count(self._admin, self._spec.name, self._timeout)
        self._partitions = [TopicPartition(self._spec.name, p) for p in range(count)]
        self._producer = Producer(
            with_client_log(log_producer_config(self._config, self._timeout), self._spec.name)
        )
        consumer = Consumer(log_consumer_config(self._config, self._spec.name))
        consumer.assign(
            [TopicPartition(self._spec.name, p, OFFSET_BEGINNING) for p in range(count)]
        )
        self._thread = threading.Thread(
            target=self._run, args=(consumer,), name=f"kafka-log-{self._spec.name}", daemon=True
        )
        self._thread.start()
        self.read_to_end(self._timeout)

    def stop(self, flush_timeout: float | None = None) -> None:
        """Stops tailing and closes the clients, waiting at most ``flush_timeout`` seconds
        (default: the log's timeout) for what the producer still holds. Idempotent."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=self._timeout)
            self._thread = None
        if self._producer is not None:
            self._producer.flush(self._timeout if flush_timeout is None else flush_timeout)
            self._producer = None
        self._admin = None
        self._log.info("kafka_log_stopped")

    def read_to_end(self, timeout: float | None = None) -> None:
        """Blocks until every record in the topic when called has been passed to ``on_record``.

        Raises UnavailableError if that takes longer than ``timeout`` seconds (default: the
        log's timeout) and ConnectError if the log is not running.
        """
        limit = self._timeout if timeout is None else timeout
        self._wait_for(self._end_offsets(limit), limit)

    def read_past(
        self,
        records: Sequence[LogRecord],
        timeout: float | None = None,
        *,
        before_batch_end: bool = False,
    ) -> None:
        """Blocks until ``records`` (written to this topic by any writer) have been passed
        to ``on_record``, or skipped as aborted, and, unless ``before_batch_end``, until
        ``after_batch`` has run after them.

        Why not :meth:`read_to_end` after a transactional write: a commit returns before
        the commit markers reach the partition, and until they do, the end a
        ``read_committed`` reader is told of (the last stable offset) lies before the
        records, so ``read_to_end`` may return without them. Raises as ``read_to_end``.
        """
        targets: dict[int, int] = {}
        for record in records:
            targets[record.partition] = max(targets.get(record.partition, 0), record.offset + 1)
        limit = self._timeout if timeout is None else timeout
        self._wait_for(targets, limit, before_batch_end=before_batch_end)

    def read_until(
        self,
        positions: Mapping[int, int],
        timeout: float | None = None,
        *,
        before_batch_end: bool = False,
    ) -> None:
        """Blocks until every record before ``positions`` (partition → offset) has been
        passed to ``on_record`` (or skipped as aborted) and, unless ``before_batch_end``,
        ``after_batch`` has run after them. Raises as ``read_to_end``."""
        self._wait_for(
            dict(positions),
            self._timeout if timeout is None else timeout,
            before_batch_end=before_batch_end,
        )

    def on_tail_thread(self) -> bool:
        """Whether the caller is the tail thread (which must never wait for itself)."""
        return threading.current_thread() is self._thread

    def _wait_for(
        self, targets: dict[int, int], limit: float, *, before_batch_end: bool = False
    ) -> None:
        """Blocks until the tail's position reaches ``targets`` on every partition listed
        (and has run ``after_batch`` after them, unless ``before_batch_end``)."""
        waiter = _Waiter(targets, threading.Event(), before_batch_end)
        with self._lock:
            self._check_running()
            if self._reached(waiter.targets, before_batch_end):
                return
            self._waiters.append(waiter)
        if not waiter.done.wait(limit):
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
            self._check_running()
            raise UnavailableError(f"topic {self._spec.name} not read to its end in {limit}s")
        self._check_running()

    def send_all(
        self,
        records: Sequence[tuple[bytes, bytes | None]],
        *,
        headers: Sequence[tuple[str, bytes]] = (),
        carrier_headers: Sequence[tuple[str, bytes]] = (),
        carrier_index: int = -1,
        timeout: float | None = None,
    ) -> list[LogRecord]:
        """Writes the (key, value) records, in order, each with ``headers`` (the one at
        ``carrier_index``, the last by default, with ``carrier_headers`` too); a None value
        is a tombstone.

        Returns once all are acknowledged (acks=all), with the offset each was written at.
        Raises UnavailableError if that takes longer than ``timeout`` seconds (default: the
        log's timeout; the records may still be written later) and ConnectError if any
        record was not written.
        """
        producer = self._producer
        if producer is None:
            raise ConnectError(f"the log of topic {self._spec.name} is not started")
        limit = self._timeout if timeout is None else timeout
        with self._write_lock:
            deliveries = _Deliveries(len(records), self._write_error)
            carrier = range(len(records))[carrier_index] if records else None
            for index, (key, value) in enumerate(records):
                record_headers = [*headers, *carrier_headers] if index == carrier else headers
                try:
                    producer.produce(
                        self._spec.name,
                        value=value,
                        key=key,
                        headers=list(record_headers) or None,
                        on_delivery=deliveries.reporter(index),
                    )
                except (BufferError, KafkaException) as exc:
                    producer.flush(limit)
                    raise ConnectError(f"write to {self._spec.name} failed: {exc}") from exc
            remaining = producer.flush(limit)
        if remaining:
            raise UnavailableError(
                f"{remaining} records to topic {self._spec.name} not acknowledged in {limit}s"
            )
        return deliveries.written(self._spec.name)

    def _write_error(self, error: KafkaError) -> Exception:
        return ConnectError(f"write to {self._spec.name} failed: {error}")

    def _end_offsets(self, timeout: float) -> dict[int, int]:
        """Per partition, the offset reading must reach; partitions with nothing are left out.

        Retriable errors (a leader just elected or moving) are retried until ``timeout``.
        """
        admin = self._admin
        if admin is None:
            raise ConnectError(f"the log of topic {self._spec.name} is not started")
        deadline = time.monotonic() + timeout
        while True:
            try:
                # both asked before either answer is awaited: one round trip to the broker,
                # not two, for every read to the end (OffsetSpec's factory methods are
                # unannotated in confluent-kafka 2.16)
                asked = [
                    self._ask_offsets(admin, spec, timeout)
                    for spec in (OffsetSpec.latest(), OffsetSpec.earliest())  # type: ignore[no-untyped-call]
                ]
                latest, earliest = (_offsets(futures, timeout) for futures in asked)
                return {p: end for p, end in latest.items() if end > earliest.get(p, 0)}
            except KafkaException as exc:
                if not _retriable(exc) or time.monotonic() >= deadline:
                    raise UnavailableError(
                        f"cannot read the end offsets of topic {self._spec.name}: {exc}"
                    ) from exc
            except TimeoutError as exc:
                raise UnavailableError(
                    f"no end offsets of topic {self._spec.name} in {timeout}s"
                ) from exc
            time.sleep(METADATA_RETRY_S)

    def _ask_offsets(
        self, admin: AdminClient, spec: OffsetSpec, timeout: float
    ) -> dict[TopicPartition, Future[Any]]:
        """Asks the broker for the partitions' ``spec`` offsets; the answers are futures."""
        request = {TopicPartition(tp.topic, tp.partition): spec for tp in self._partitions}
        futures: dict[TopicPartition, Future[Any]] = admin.list_offsets(
            request, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=timeout
        )
        return futures

    def _check_running(self) -> None:
        if self._failure is not None:
            raise ConnectError(f"reading topic {self._spec.name} failed: {self._failure!r}")
        if self._thread is None or self._stopping.is_set():
            raise ConnectError(f"the log of topic {self._spec.name} is not running")

    def _reached(self, targets: Mapping[int, int], before_batch_end: bool = False) -> bool:
        positions = self._applied if before_batch_end else self._positions
        return all(positions.get(p, -1) >= end for p, end in targets.items())

    def _run(self, consumer: Consumer) -> None:
        """The tail thread: polls, hands records to the callback, wakes satisfied waiters."""
        try:
            while not self._stopping.is_set():
                self._poll_once(consumer)
        except BaseException as exc:
            self._failure = exc
            self._log.exception("kafka_log_failed")
        finally:
            self._wake_all()
            consumer.close()

    def _poll_once(self, consumer: Consumer) -> None:
        messages = _next_messages(consumer)
        for message in messages:
            self._handle(message)
        positions = {
            tp.partition: tp.offset for tp in consumer.position(self._partitions) if tp.offset >= 0
        }
        if messages and self._after_batch is not None:
            with self._lock:
                self._applied.update(positions)
            self._release(before_batch_end=True)
            try:
                self._after_batch()
            except Exception:
                self._log.exception("kafka_log_after_batch_failed")
        with self._lock:
            self._applied.update(positions)
            self._positions.update(positions)
        self._release(before_batch_end=False)

    def _release(self, *, before_batch_end: bool) -> None:
        """Wakes the waiters whose targets are reached: with ``before_batch_end``, only
        those that asked to be released before ``after_batch``."""
        with self._lock:
            satisfied = [
                w for w in self._waiters
                if (w.before_batch_end or not before_batch_end)
                and self._reached(w.targets, w.before_batch_end)
            ]
            for waiter in satisfied:
                self._waiters.remove(waiter)
        for waiter in satisfied:
            waiter.done.set()

    def _handle(self, message: Message) -> None:
        error = message.error()
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                self._log.warning("kafka_log_consume_error", error=str(error))
            return
        partition = message.partition()
        offset = message.offset()
        if partition is None or offset is None:
            return
        record = LogRecord(
            _as_bytes(message.key()),
            _as_bytes(message.value()),
            partition,
            offset,
            _timestamp_ms(message),
            _headers(message),
        )
        try:
            self._on_record(record)
        except Exception:
            self._log.exception("kafka_log_record_skipped", partition=partition, offset=offset)

    def _wake_all(self) -> None:
        with self._lock:
            waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.done.set()


def _next_messages(consumer: Consumer) -> list[Message]:
    """What has arrived, as soon as anything has (at most POLL_TIMEOUT_S of waiting).

    ``consume(n, timeout)`` alone would wait for ``n`` messages or the whole timeout, so
    every write would be seen up to POLL_TIMEOUT_S late: ``poll`` returns on the first
    message, and a non-blocking ``consume`` takes what came with it.
    """
    first = consumer.poll(POLL_TIMEOUT_S)
    if first is None:
        return []
    return [first, *consumer.consume(num_messages=POLL_BATCH - 1, timeout=0)]


def _offsets(futures: Mapping[TopicPartition, Future[Any]], timeout: float) -> dict[int, int]:
    """Each partition's offset, from the answers of an offsets request."""
    return {tp.partition: f.result(timeout=timeout).offset for tp, f in futures.items()}
