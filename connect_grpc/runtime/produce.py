"""Producing a batch's records to Kafka: the function Spark runs on executors
(``produce_slices``), a source task's own producer on the driver (``DriverProducer``), the
producer both keep across batches (``CachedProducer``) and a batch's delivery reports
(``ProduceErrors``).

``produce_slices`` is shipped to executors by reference (this module is importable there
because executors run the worker's own interpreter); it takes only plain dicts and tuples,
and reports a Kafka error in its result rather than raising it (``kafka_results``). A batch
a failure that is not retriable hit is, when the task tolerates refused records, written
again one record per request, so that each record gets its own verdict.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import structlog
from confluent_kafka import KafkaError

from connect_grpc.connectors.api import SourceRecord
from connect_grpc.kernel.kafka_clients import kafka_error_of, with_client_log
from connect_grpc.runtime.client_cache import CLIENTS, DriverClient, prepare_executor
from connect_grpc.runtime.client_settings import ONE_RECORD_PER_REQUEST, ONLY_ERROR_REPORTS
from connect_grpc.runtime.kafka_results import (
    FLUSH_SLICE_S,
    MAX_REPORTED_ERRORS,
    KafkaFailure,
    ProduceResult,
    never,
)
from connect_grpc.runtime.produce_refusal import delivery_context
from connect_grpc.runtime.spark_rows import ProduceRow, client_timestamp, to_produce_row

log = structlog.get_logger(__name__)

#: Seconds a producer may take to deliver a slice; undelivered records are then a retriable
#: failure (the batch is produced again).
FLUSH_TIMEOUT_S = 60.0
#: Seconds a batch written one record per request (see ONE_RECORD_PER_REQUEST) may take
#: per record beyond FLUSH_TIMEOUT_S: a request per record, five in flight at most.
REDO_FLUSH_S_PER_RECORD = 0.01
#: Rows handed to a producer between two looks at whether the task is stopping.
STOP_CHECK_ROWS = 10_000


class ProduceErrors:
    """Delivery reports and client errors of one producer."""

    def __init__(self) -> None:
        self.count = 0
        self.messages: list[str] = []
        self.retriable = True
        self.fatal = False
        self.fatal_error: KafkaError | None = None
        #: Records refused for good, by index (only when each record names itself).
        self.refused: list[tuple[int, KafkaFailure]] = []

    def add(self, failure: KafkaFailure) -> None:
        self.count += 1
        self.retriable = self.retriable and failure.retriable
        if len(self.messages) < MAX_REPORTED_ERRORS:
            self.messages.append(f"{failure.name}: {failure.message}")

    def on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.add(KafkaFailure.of(err, delivery_context(err, msg)))

    def on_delivery_of(self, index: int, err: Any, msg: Any) -> None:
        """The delivery report of the record at ``index`` (a failure that is not retriable
        is that record's refusal)."""
        if err is not None:
            self.refuse(index, KafkaFailure.of(err, delivery_context(err, msg)))

    def refuse(self, index: int, failure: KafkaFailure) -> None:
        self.add(failure)
        if not failure.retriable:
            self.refused.append((index, failure))

    def result(self, produced: int) -> ProduceResult:
        return ProduceResult(
            produced, self.count, list(self.messages), self.retriable, tuple(self.refused)
        )

    def on_fatal(self, err: KafkaError) -> None:
        if err.fatal():
            self.fatal = True
            self.fatal_error = err
            self.add(KafkaFailure.of(err, "producer"))


def _produce_one(producer: Any, row: ProduceRow, on_delivery: Callable[..., None]) -> None:
    """Hands one row to the producer, waiting while its queue is full. Positional
    arguments: the keyword form costs twice as much per record. The row's timestamp is
    already as the client takes it (0: the producer's time)."""
    topic, partition, key, value, headers, timestamp = row
    while True:
        try:
            if timestamp:
                producer.produce(
                    topic, value, key, partition, on_delivery,
                    timestamp=timestamp, headers=list(headers) if headers else None,
                )
            elif headers:
                producer.produce(topic, value, key, partition, on_delivery, headers=list(headers))
            else:
                producer.produce(topic, value, key, partition, on_delivery)
            return
        except BufferError:
            producer.poll(0.05)


#: The longest a new idempotent producer waits for its first broker (``await_a_broker``):
#: what its first record would otherwise wait at worst.
FIRST_BROKER_WAIT_S = 0.5


def _idempotent_only(settings: Mapping[str, Any]) -> bool:
    """Idempotent and not transactional (a transactional producer gets its producer id
    from ``init_transactions``, which asks for it at once)."""
    idempotent = str(settings.get("enable.idempotence", "false")).strip().lower() == "true"
    return idempotent and not settings.get("transactional.id")


def await_a_broker(producer: Any) -> None:
    """Waits (at most FIRST_BROKER_WAIT_S) until a new idempotent producer has metadata from
    a broker it learned of (not the bootstrap connection, which librdkafka retires once it
    knows the brokers). librdkafka asks for the producer id on such an answer; a record
    produced before that finds no broker to ask and puts the request off by its 500 ms retry
    timer, so a new source task's first batch would wait half a second (1,000 records
    produced at once: 510-520 ms to delivery from a cold producer, 60-80 ms after this wait,
    on a local broker). A broker that does not answer in time is left to the first batch,
    which then waits for it as it would without this wait."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + FIRST_BROKER_WAIT_S
    while (left := deadline - time.monotonic()) > 0:
        try:
            metadata = producer.list_topics(timeout=left)  # no topic: none is auto-created
        except KafkaException as exc:
            log.debug("producer_no_broker_yet", error=str(exc))
            return
        if metadata.orig_broker_id >= 0:  # a bootstrap connection's answer says -1
            return


class CachedProducer:
    """A producer kept across batches; its fatal-error callback reports to the errors of
    the batch being produced (``current``)."""

    def __init__(self, conf: Mapping[str, str]) -> None:
        from confluent_kafka import Producer

        self.current = ProduceErrors()
        settings = with_client_log(conf, conf.get("client.id", "producer"))
        only_errors = str(settings.get(ONLY_ERROR_REPORTS, "false")).strip().lower()
        settings[ONLY_ERROR_REPORTS] = only_errors == "true"  # the Python client wants a bool
        client_error = settings["error_cb"]

        def on_error(err: KafkaError) -> None:
            self.current.on_fatal(err)
            client_error(err)

        settings["error_cb"] = on_error
        self.producer = Producer(settings)
        if _idempotent_only(settings):
            await_a_broker(self.producer)

    def close(self) -> None:
        """Drops whatever is still queued (its batch is failed and will be produced again).
        A producer in a fatal state (fenced) has nothing left to deliver: its error is the
        batch's, already reported, so closing it raises nothing."""
        from confluent_kafka import KafkaException

        try:
            self.producer.purge()
            self.producer.flush(0)
        except KafkaException as exc:
            log.debug("producer_closed_after_error", error=str(exc))


def _produce_rows(
    slices: Iterable[list[ProduceRow]],
    producer: Any,
    errors: ProduceErrors,
    stopping: Callable[[], bool],
) -> int:
    """Hands every row to the producer (stops at a fatal error, or when ``stopping``, which
    is asked every STOP_CHECK_ROWS rows); returns how many it took."""
    from confluent_kafka import KafkaException

    produced = 0
    try:
        for rows in slices:
            for row in rows:
                if errors.fatal:
                    return produced
                if produced % STOP_CHECK_ROWS == 0 and produced and stopping():
                    return produced
                _produce_one(producer, row, errors.on_delivery)
                produced += 1
            producer.poll(0)
    except KafkaException as exc:
        error = kafka_error_of(exc)
        if error is None:
            raise
        errors.add(KafkaFailure.of(error, "produce"))
    return produced


def _hand_one_by_one(
    rows: Sequence[ProduceRow],
    producer: Any,
    errors: ProduceErrors,
    stopping: Callable[[], bool],
) -> int:
    """Hands every row with a delivery callback of its own (with a producer of
    ONE_RECORD_PER_REQUEST: each record's verdict is its own). A row the client refuses
    at once for its size is that row's refusal (Java's producer reports a record too large
    through its callback, never by throwing); any other client error stops the slice."""
    from confluent_kafka import KafkaException

    produced = 0
    for index, row in enumerate(rows):
        if errors.fatal or stopping():
            return produced
        try:
            _produce_one(producer, row, functools.partial(errors.on_delivery_of, index))
        except KafkaException as exc:
            error = kafka_error_of(exc)
            if error is None:
                raise
            failure = KafkaFailure.of(error, f"produce to {row[0]}")
            if error.code() != KafkaError.MSG_SIZE_TOO_LARGE:
                errors.add(failure)
                return produced
            errors.refuse(index, failure)
        produced += 1
        producer.poll(0)
    return produced


def _worth_redoing(result: ProduceResult, errors: ProduceErrors, stopping: bool) -> bool:
    """Whether a batch is to be written again one record per request for each record's
    verdict: some failure was not retriable, yet the producer is sound and every record
    was answered."""
    return bool(result.failed) and not result.retriable and not errors.fatal and not stopping


#: Hands a batch to a producer: (producer, errors, stopping) → how many records it took.
_Hand = Callable[[Any, ProduceErrors, Callable[[], bool]], int]


def _produce_with(
    cached: CachedProducer,
    hand: _Hand,
    stopping: Callable[[], bool] = never,
    redo: Callable[[], ProduceResult] | None = None,
    flush_timeout_s: float = FLUSH_TIMEOUT_S,
) -> ProduceResult:
    """Hands the batch to the producer and waits for every delivery, at most
    ``flush_timeout_s`` (and no longer than ``stopping`` stays False). With ``redo`` (the
    task tolerates refused records), a batch a failure that is not retriable hit is
    written again by ``redo``, one record per request, whose result is the batch's: its
    records that went through the first time are written twice (as by any retried batch),
    and in order."""
    errors = cached.current = ProduceErrors()
    producer = cached.producer
    produced = hand(producer, errors, stopping)
    give_up_at = time.monotonic() + flush_timeout_s
    remaining = producer.flush(FLUSH_SLICE_S)
    while remaining and not stopping() and time.monotonic() < give_up_at:
        remaining = producer.flush(FLUSH_SLICE_S)
    if remaining:
        errors.count += remaining
        why = "the task is stopping" if stopping() else f"within {flush_timeout_s:g}s"
        errors.messages.append(f"{remaining} records not delivered ({why})")
    result = errors.result(produced)
    if redo is not None and _worth_redoing(result, errors, stopping()):
        log.info("batch_written_again_one_record_per_request", failed=result.failed)
        return redo()
    return result


def hand_records(
    records: Sequence[SourceRecord],
    producer: Any,
    errors: ProduceErrors,
    stopping: Callable[[], bool],
) -> int:
    """As :func:`_produce_rows`, straight from the records (an in-process producer: no row
    to build for pickling; ≈ 40 % less time a record).

    A ``str`` key or value goes to the client as it is: the client encodes it as UTF-8, as
    ``str.encode()`` would (a lone surrogate raises the same ``UnicodeEncodeError``), with no
    bytes object made a record (≈ 15 % less CPU a record handed over). A fatal error is
    known only from the client's callbacks, which run while it is polled, so it is looked at
    before each run of STOP_CHECK_ROWS records (with whether the task is stopping) and after
    a poll that waited for room in the client's queue.

    A record's ``timestamp_ms`` goes to the client only when it has one (a branch of its
    own, as headers: records without one cost nothing more), checked as Kafka Connect
    checks it (:func:`~connect_grpc.runtime.spark_rows.client_timestamp`): a timestamp
    Kafka cannot be given raises InvalidRecordTimestampError before its record is handed
    over (the records before it are, as Kafka Connect sends record by record)."""
    from confluent_kafka import KafkaException

    produce, on_delivery = producer.produce, errors.on_delivery
    produced = 0
    total = len(records)
    try:
        while produced < total:
            if errors.fatal or (produced and stopping()):
                return produced
            run = records[produced : produced + STOP_CHECK_ROWS]
            for record in run:
                partition, timestamp = record.kafka_partition, record.timestamp_ms
                try:
                    if timestamp is not None:  # _produce_stamped, inlined
                        produce(
                            record.topic, record.value, record.key,
                            -1 if partition is None else partition, on_delivery,
                            timestamp=timestamp if timestamp > 0 else client_timestamp(timestamp),
                            headers=list(record.headers) if record.headers else None,
                        )
                    elif record.headers:
                        produce(
                            record.topic, record.value, record.key,
                            -1 if partition is None else partition, on_delivery,
                            headers=list(record.headers),
                        )
                    else:
                        produce(
                            record.topic, record.value, record.key,
                            -1 if partition is None else partition, on_delivery,
                        )
                except BufferError:
                    _produce_when_room(producer, record, on_delivery)
                    if errors.fatal and produced + 1 < total:
                        return produced + 1  # as if looked at before the next record
                produced += 1
        producer.poll(0)
    except KafkaException as exc:
        error = kafka_error_of(exc)
        if error is None:
            raise
        errors.add(KafkaFailure.of(error, "produce"))
    return produced


#: How long the client is polled, between two tries, while its queue is full.
QUEUE_FULL_WAIT_S = 0.05


def produce_when_room(producer: Any, hand: Callable[[], None]) -> None:
    """Calls ``hand`` (one ``produce`` call of ``producer``) until the client's queue has
    room for it: while it raises BufferError, the client is polled for QUEUE_FULL_WAIT_S
    (records leave the queue delivered or failed within ``message.timeout.ms``). Any
    other error reaches the caller. A call through a closure costs more than an inline
    ``produce``: :func:`hand_records` comes here only for a record that met a full queue,
    a transaction's few offset records come here each."""
    while True:
        try:
            hand()
            return
        except BufferError:
            producer.poll(QUEUE_FULL_WAIT_S)


def _produce_when_room(producer: Any, record: SourceRecord, on_delivery: Any) -> None:
    """Hands ``record`` to the producer once its full queue has room (polled meanwhile)."""
    partition = -1 if record.kafka_partition is None else record.kafka_partition

    def hand() -> None:
        if record.timestamp_ms is not None:
            _produce_stamped(producer.produce, record, record.timestamp_ms, on_delivery)
        elif record.headers:
            producer.produce(
                record.topic, record.value, record.key, partition, on_delivery,
                headers=list(record.headers),
            )
        else:
            producer.produce(record.topic, record.value, record.key, partition, on_delivery)

    producer.poll(QUEUE_FULL_WAIT_S)  # the queue was full a moment ago
    produce_when_room(producer, hand)


def _produce_stamped(produce: Any, record: SourceRecord, timestamp: int, on_delivery: Any) -> None:
    """Hands a record whose timestamp is ``timestamp`` to the client's ``produce`` (raises
    BufferError while its queue is full, InvalidRecordTimestampError for a timestamp Kafka
    cannot be given, before the client is called). A positive timestamp, what a source
    that sets one gives, is passed without a further call."""
    partition, headers = record.kafka_partition, record.headers
    produce(
        record.topic, record.value, record.key,
        -1 if partition is None else partition, on_delivery,
        timestamp=timestamp if timestamp > 0 else client_timestamp(timestamp),
        headers=list(headers) if headers else None,
    )


def produce_slices(
    conf: Mapping[str, str], slices: Iterable[list[ProduceRow]], tolerate: bool = False
) -> Iterator[ProduceResult]:
    """Produces every row of this Spark partition with this process's producer for ``conf``;
    yields one result. A producer that failed any record is dropped. With ``tolerate``
    (``errors.tolerance=all``), a failure that is not retriable has the partition's rows
    written again one record per request, and the result names the rows refused (by their
    index among the partition's rows)."""
    prepare_executor()
    cached: CachedProducer = CLIENTS.get(CachedProducer, conf)
    redo = None
    if tolerate:
        slices = list(slices)  # the partition's lists of rows, not copied
        redo = functools.partial(_redo_on_executor, conf, slices)
    result = _produce_with(cached, functools.partial(_produce_rows, slices), redo=redo)
    if result.failed:
        CLIENTS.drop(cached)
    yield result


def _one_by_one_timeout_s(records: int) -> float:
    return FLUSH_TIMEOUT_S + records * REDO_FLUSH_S_PER_RECORD


def _redo_on_executor(
    conf: Mapping[str, str], slices: Sequence[list[ProduceRow]]
) -> ProduceResult:
    rows = [row for rows in slices for row in rows]
    cached: CachedProducer = CLIENTS.get(CachedProducer, {**conf, **ONE_RECORD_PER_REQUEST})
    hand = functools.partial(_hand_one_by_one, rows)
    result = _produce_with(cached, hand, flush_timeout_s=_one_by_one_timeout_s(len(rows)))
    if not result.only_refusals:
        CLIENTS.drop(cached)
    return result


class DriverProducer(DriverClient[CachedProducer]):
    """A source task's own producer on the driver (and, created when first needed, one
    that writes a record per request: see :func:`_produce_with`)."""

    def __init__(self, conf: Mapping[str, str]) -> None:
        super().__init__(CachedProducer, conf)
        self._one_by_one = DriverClient(CachedProducer, {**conf, **ONE_RECORD_PER_REQUEST})

    def produce(
        self, records: Sequence[SourceRecord], stopping: Callable[[], bool], tolerate: bool = False
    ) -> ProduceResult:
        """Produces ``records`` and waits for their delivery (see :func:`_produce_with`);
        with ``tolerate``, the result names the records refused (by their index)."""
        cached = self._client()
        redo = functools.partial(self._redo, records, stopping) if tolerate else None
        result = _produce_with(cached, functools.partial(hand_records, records), stopping, redo)
        if result.failed:
            super().close()
        return result

    def _redo(self, records: Sequence[SourceRecord], stopping: Callable[[], bool]) -> ProduceResult:
        rows = [to_produce_row(record) for record in records]
        cached = self._one_by_one._client()
        hand = functools.partial(_hand_one_by_one, rows)
        timeout_s = _one_by_one_timeout_s(len(rows))
        result = _produce_with(cached, hand, stopping, flush_timeout_s=timeout_s)
        if not result.only_refusals:
            self._one_by_one.close()
        return result

    def close(self) -> None:
        super().close()
        self._one_by_one.close()
