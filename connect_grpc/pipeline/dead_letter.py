"""The dead-letter queue (``errors.deadletterqueue.*``): failed records go, as they were
before the pipeline touched them, to a topic of their own, with ``__connect.errors.*``
headers saying where and why they failed.

Sinks as Kafka Connect: the consumed record's original key, value and headers. Sources,
beyond Kafka Connect: the record the task polled, its key and value serialised with the
task's converters where they can, else as UTF-8 text (a str itself, anything else its
``repr``), and
``__connect.errors.topic`` the topic the record was meant for.

The reporter's producer is not transactional: with exactly-once sources the queue is
written outside the batch's transaction, as Kafka Connect writes a sink's queue outside its
consumer's commits; every write is awaited (bounded) before the offsets of the batch it
came from are committed.
"""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, InvalidStateError
from typing import Any

import structlog

from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.data.plugins import Converter, HeaderConverter
from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.errors import ConnectError
from connect_grpc.kernel.kafka_clients import KafkaIoError, with_client_log
from connect_grpc.metrics.worker_metrics import ErrorCounts
from connect_grpc.pipeline.dead_letter_headers import (
    ERROR_HEADER_CONNECTOR_NAME,
    ERROR_HEADER_EXCEPTION,
    ERROR_HEADER_EXCEPTION_MESSAGE,
    ERROR_HEADER_EXCEPTION_STACK_TRACE,
    ERROR_HEADER_EXECUTING_CLASS,
    ERROR_HEADER_ORIG_OFFSET,
    ERROR_HEADER_ORIG_PARTITION,
    ERROR_HEADER_ORIG_TOPIC,
    ERROR_HEADER_STAGE,
    ERROR_HEADER_TASK_ID,
)
from connect_grpc.pipeline.tolerance import ProcessingContext, exception_class_name

log = structlog.get_logger(__name__)

#: Seconds the admin client may take to list or create the queue's topic.
ADMIN_TIMEOUT_S = 30.0
#: Seconds the queue's writes are awaited before a batch's offsets are committed; longer
#: fails the commit (retried by the task), never skips the wait.
AWAIT_TIMEOUT_S = 30.0
#: Seconds a closing reporter waits for its writes still in flight before it drops them
#: (their batches' offsets were not committed: the records are processed again).
CLOSE_FLUSH_S = 5.0
#: Seconds of one wait for the queue's writes, between two looks at whether to stop.
AWAIT_SLICE_S = 0.1

#: The partition a failed record was read from, (topic, partition), for a sink; None for a
#: source (its writes are awaited all together).
PartitionKey = tuple[str, int] | None

Headers = list[tuple[str, bytes | None]]


def dlq_producer_conf(base: Mapping[str, str], task: TaskId) -> dict[str, str]:
    """Kafka Connect's DLQ producer settings over the task's producer config (worker
    ``producer.*`` and the connector's ``producer.override.*``): every record acknowledged
    by all replicas, in order, without idempotence; every delivery reported."""
    conf = dict(base)
    conf.pop("delivery.report.only.error", None)
    conf.pop("transactional.id", None)
    conf.update(
        {
            "client.id": f"connector-dlq-producer-{task.connector}-{task.task}",
            "enable.idempotence": "false",
            "acks": "all",
            "max.in.flight.requests.per.connection": "1",
            "delivery.timeout.ms": str(2**31 - 1),
        }
    )
    return conf


def dlq_admin_conf(
    producer: Mapping[str, str], connector_config: Mapping[str, str], task: TaskId
) -> dict[str, str]:
    """The admin client that creates the queue's topic: the producer's connection settings
    and the connector's ``admin.override.*``."""
    keep = ("bootstrap.servers", "security.protocol")
    conf = {k: v for k, v in producer.items() if k in keep or k.startswith(("ssl.", "sasl."))}
    conf.update(
        {
            k[len("admin.override.") :]: v
            for k, v in connector_config.items()
            if k.startswith("admin.override.")
        }
    )
    conf["client.id"] = f"connector-dlq-adminclient-{task.connector}-{task.task}"
    return conf


def ensure_topic(admin_conf: Mapping[str, str], topic: str, replication_factor: int) -> None:
    """Creates the queue's topic (1 partition, the configured replication factor, no other
    config) if it does not exist. Raises ConnectError if it cannot tell or create it."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient(with_client_log(admin_conf, "dlq-admin"))
    try:
        if topic in admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics:
            return
        log.error(
            "dlq_topic_missing",
            message=(f"Topic {topic} doesn't exist. Will attempt to create topic."),
        )
        future = admin.create_topics(
            [NewTopic(topic, num_partitions=1, replication_factor=replication_factor)],
            request_timeout=ADMIN_TIMEOUT_S,
        )[topic]
        try:
            future.result(timeout=ADMIN_TIMEOUT_S)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    except Exception as exc:
        raise ConnectError(f"Could not initialize dead letter queue with topic={topic}") from exc


def _text(value: object) -> bytes:
    return str(value).encode("utf-8")


def _fallback(value: object) -> bytes:
    """A value no converter took: a str as UTF-8, anything else its ``repr``."""
    return value.encode("utf-8") if isinstance(value, str) else _text(repr(value))


def context_headers(context: ProcessingContext, task: TaskId) -> Headers:
    """The ``__connect.errors.*`` headers of a failed record, each value a UTF-8 string
    (the exception's message None when it has none, as Kafka Connect's null message)."""
    original = context.original
    headers: Headers = []
    if isinstance(original, SinkRecord):
        headers += [
            (ERROR_HEADER_ORIG_TOPIC, _text(original.topic)),
            (ERROR_HEADER_ORIG_PARTITION, _text(original.kafka_partition)),
            (ERROR_HEADER_ORIG_OFFSET, _text(original.kafka_offset)),
        ]
    else:
        headers.append((ERROR_HEADER_ORIG_TOPIC, _text(context.target_topic or original.topic)))
        if original.kafka_partition is not None:
            headers.append((ERROR_HEADER_ORIG_PARTITION, _text(original.kafka_partition)))
    headers += [
        (ERROR_HEADER_CONNECTOR_NAME, _text(task.connector)),
        (ERROR_HEADER_TASK_ID, _text(task.task)),
        (ERROR_HEADER_STAGE, _text(context.stage.name if context.stage else "")),
        (ERROR_HEADER_EXECUTING_CLASS, _text(context.executing_class)),
    ]
    error = context.error
    if error is not None:
        message = str(error) if error.args else None
        trace = "".join(traceback.format_exception(error))
        headers += [
            (ERROR_HEADER_EXCEPTION, _text(exception_class_name(error))),
            (ERROR_HEADER_EXCEPTION_MESSAGE, None if message is None else _text(message)),
            (ERROR_HEADER_EXCEPTION_STACK_TRACE, _text(trace)),
        ]
    return headers


class SourceRecordSerializer:
    """A polled source record as bytes for the queue: through the task's converters where
    they take it, else its text (never failing)."""

    def __init__(
        self,
        key_converter: Converter | None,
        value_converter: Converter | None,
        header_converter: HeaderConverter | None,
    ) -> None:
        self._key = key_converter
        self._value = value_converter
        self._header = header_converter

    def key_value_headers(self, record: SourceRecord) -> tuple[bytes | None, bytes | None, Headers]:
        return (
            self._convert(self._key, record, record.key_schema, record.key),
            self._convert(self._value, record, record.value_schema, record.value),
            self._headers(record),
        )

    @staticmethod
    def _convert(
        converter: Converter | None, record: SourceRecord, schema: Any, value: Any
    ) -> bytes | None:
        if value is None or isinstance(value, bytes):
            return value
        if converter is None:
            return _fallback(value)
        try:
            headers = None if isinstance(record.headers, tuple) else record.headers
            return converter.from_connect_data(record.topic, headers, schema, value)
        except Exception:
            return _fallback(value)

    def _headers(self, record: SourceRecord) -> Headers:
        headers: Headers = []
        for header in record.headers:
            key, value = header
            if value is None or isinstance(value, bytes):
                headers.append((key, value))
                continue
            schema = getattr(header, "schema", None)
            try:
                if self._header is None:
                    raise TypeError("no header converter")
                headers.append(
                    (key, self._header.from_connect_header(record.topic, key, schema, value))
                )
            except Exception:
                headers.append((key, _fallback(value)))
        return headers


class DeadLetterQueueReporter:
    """Writes failed records to the queue (Kafka Connect's DeadLetterQueueReporter), with a
    producer of its own created at the first report and closed once.

    ``report`` returns the write's Future (also kept as ``last_future``); ``await_writes``
    waits for the writes of a batch's partitions (a sink's) or for every write so far (a
    source's), before the batch's offsets are committed, and gives up when the task is
    stopping (``stopping``): the offsets are then not committed. ``forget`` lets go of the
    writes of partitions the task lost, ``close`` of every write still in flight: their
    Futures end with an error, so that nothing waits on them for ever.
    """

    def __init__(
        self,
        task: TaskId,
        topic: str,
        producer_conf: Mapping[str, str],
        counts: ErrorCounts,
        *,
        context_headers_enabled: bool,
        serializer: SourceRecordSerializer | None = None,
        producer_factory: Callable[[Mapping[str, Any]], Any] | None = None,
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        self._task = task
        self._stopping = stopping
        self.topic = topic
        self._conf = producer_conf
        self._counts = counts
        self._context_headers = context_headers_enabled
        self._serializer = serializer or SourceRecordSerializer(None, None, None)
        self._factory = producer_factory
        self._producer: Any = None
        self._lock = threading.Lock()
        #: Writes not known to be acknowledged yet, by the partition of their record.
        self._pending: dict[PartitionKey, list[Future[None]]] = {}
        self.last_future: Future[None] | None = None

    def report(self, context: ProcessingContext) -> Future[None] | None:
        self._counts.dlq_requests += 1
        original = context.original
        if original is None:
            self._counts.dlq_failures += 1
            return None
        if isinstance(original, SinkRecord):
            key, value = original.key, original.value
            headers: Headers = [(key, value) for key, value in original.headers]
        else:
            key, value, headers = self._serializer.key_value_headers(original)
        if self._context_headers:
            headers += context_headers(context, self._task)
        future: Future[None] = Future()
        future.set_running_or_notify_cancel()
        try:
            self._send(key, value, headers, original.timestamp_ms, future)
        except Exception as exc:
            self._failed(exc)
            _settle(future, exc)
        partition = (
            (original.topic, original.kafka_partition) if isinstance(original, SinkRecord) else None
        )
        with self._lock:
            self._pending.setdefault(partition, []).append(future)
        self.last_future = future
        return future

    def _send(
        self,
        key: Any,
        value: Any,
        headers: Headers,
        timestamp_ms: int | None,
        future: Future[None],
    ) -> None:
        producer = self._client()

        def delivered(err: Any, msg: Any) -> None:
            if err is None:
                _settle(future)
            elif not future.done():  # not let go of (``forget``, ``close``): a real failure
                self._failed(err)
                _settle(future, KafkaIoError(str(err), retriable=False))

        extra: dict[str, Any] = {"headers": headers} if headers else {}
        if timestamp_ms is not None and timestamp_ms >= 0:
            extra["timestamp"] = timestamp_ms
        give_up_at = time.monotonic() + AWAIT_TIMEOUT_S
        while True:
            try:
                producer.produce(self.topic, value, key, on_delivery=delivered, **extra)
                break
            except BufferError:  # the queue is full: wait for room, not for ever
                if time.monotonic() > give_up_at:
                    raise
                producer.poll(0.05)
        producer.poll(0)

    def _failed(self, error: object) -> None:
        self._counts.dlq_failures += 1
        log.error(
            "dlq_write_failed",
            message=f"Could not produce message to dead letter queue. topic={self.topic}",
            error=str(error),
        )

    def _client(self) -> Any:
        if self._producer is None:
            if self._factory is not None:
                self._producer = self._factory(self._conf)
            else:
                from confluent_kafka import Producer

                self._producer = Producer(with_client_log(self._conf, "dlq-producer"))
        return self._producer

    def await_writes(
        self,
        partitions: Iterable[PartitionKey] | None = None,
        timeout_s: float = AWAIT_TIMEOUT_S,
    ) -> None:
        """Waits until every write reported so far for records of ``partitions`` (every
        write: None) is acknowledged or failed (a failed write is counted and logged, not
        retried: Kafka Connect's rule). Raises a retriable KafkaIoError, keeping the writes
        still unanswered, if some are after ``timeout_s`` or once the task is stopping:
        their batch's offsets are then not committed."""
        pending = self._take(partitions)
        if not pending:
            return
        give_up_at = time.monotonic() + timeout_s
        producer = self._producer
        while any(not future.done() for _, future in pending):
            left = give_up_at - time.monotonic()
            stopping = self._stopping()
            if left <= 0 or stopping or producer is None:
                self._keep([(key, future) for key, future in pending if not future.done()])
                why = "the task is stopping" if stopping else f"after {timeout_s}s"
                raise KafkaIoError(
                    f"dead letter queue {self.topic}: writes unacknowledged ({why})",
                    retriable=True,
                )
            producer.flush(min(left, AWAIT_SLICE_S))

    def forget(self, partitions: Iterable[PartitionKey]) -> None:
        """Lets go of the writes of records of ``partitions`` (the task lost them): their
        Futures end with an error, nothing waits on them, and their offsets are not the
        task's to commit any more. A write may still reach the queue."""
        for _, future in self._take(partitions):
            _settle(future, _let_go("its partition was revoked"))

    def close(self) -> None:
        """Waits CLOSE_FLUSH_S at most for the writes in flight, then drops those left
        (no batch of theirs had its offsets committed); their Futures end with an error."""
        producer, self._producer = self._producer, None
        left = 0 if producer is None else producer.flush(CLOSE_FLUSH_S)
        for _, future in self._take(None):
            _settle(future, _let_go("the task stopped"))
        if left:  # their Futures ended above: the purge's reports are not failures
            producer.purge()
            producer.flush(0)

    def _take(self, partitions: Iterable[PartitionKey] | None) -> list[_Write]:
        """The writes of ``partitions`` (all: None), no longer pending."""
        with self._lock:
            keys = list(self._pending) if partitions is None else partitions
            return [(key, f) for key in keys for f in self._pending.pop(key, [])]

    def _keep(self, writes: list[_Write]) -> None:
        """Writes taken and still unanswered: pending again."""
        with self._lock:
            for key, future in writes:
                self._pending.setdefault(key, []).append(future)


#: A write: the partition of its record, and its Future.
_Write = tuple[PartitionKey, "Future[None]"]


def _settle(future: Future[None], error: BaseException | None = None) -> None:
    """Ends a write's Future, unless something ended it first (a write let go of by
    ``forget`` or ``close`` can still be reported on by the producer)."""
    with contextlib.suppress(InvalidStateError):
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


def _let_go(why: str) -> KafkaIoError:
    return KafkaIoError(f"dead letter queue write not awaited: {why}", retriable=True)
