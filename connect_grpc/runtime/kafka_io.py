"""Kafka client settings, and the functions Spark runs on executors to produce and read.

``produce_slices`` and ``read_ranges`` are shipped to executors by reference (this module is
importable there because executors run the worker's own interpreter); they take only
plain dicts and tuples. They never raise for a Kafka error: they report it in their result
(a ``KafkaFailure``, picklable, saying whether it is retriable), so the driver can tell a
transient outage from a fatal error without parsing an executor's stack trace.

Their Kafka clients live as long as the executor's Python worker (Spark reuses it from one
task to the next, ``spark.python.worker.reuse``): a new idempotent producer costs ≈ 0.5 s
before its first record is acknowledged, a connected one ≈ 10 ms for a batch. One client
per configuration is kept in :data:`_CLIENTS`; a client that failed a batch is dropped (and
closed once), so the retry starts from a fresh one, and clients idle for longer than
:data:`CLIENT_IDLE_S` are dropped when the worker is next used.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import structlog
from confluent_kafka import KafkaError, Message

from connect_grpc.connectors.api import TIMESTAMP_TYPES, SinkRecord, SourceRecord
from connect_grpc.kafka_clients import is_retriable, kafka_error_of, with_client_log
from connect_grpc.runtime.batching import OffsetRange
from connect_grpc.runtime.gc_tuning import collector_paused, tune_for_batches
from connect_grpc.runtime.produce_refusal import delivery_context
from connect_grpc.runtime.records import ConsumedRow, ProduceRow, to_produce_row
from connect_grpc.worker_config import WorkerConfig

log = structlog.get_logger(__name__)

#: Seconds a producer may take to deliver a slice; undelivered records are then a retriable
#: failure (the batch is produced again).
FLUSH_TIMEOUT_S = 60.0
#: Seconds a batch written one record per request (see ONE_RECORD_PER_REQUEST) may take
#: per record beyond FLUSH_TIMEOUT_S: a request per record, five in flight at most.
REDO_FLUSH_S_PER_RECORD = 0.01
#: Seconds a reader may go without progress before the batch fails (retriable).
READ_STALL_TIMEOUT_S = 30.0
#: A read of several ranges keeps, of a partition's messages consumed past its range's
#: end, at most this many times the range's size, for the ranges of the next reads.
AHEAD_RANGES = 4
#: ... and, of all its partitions together, at most this many bytes: the messages' values,
#: and AHEAD_MESSAGE_BYTES more for each message's objects (a message, its key and value).
AHEAD_MAX_BYTES = 64 * 1024 * 1024
AHEAD_MESSAGE_BYTES = 256
#: How many delivery errors a slice reports in full (the count is always exact).
MAX_REPORTED_ERRORS = 5
#: Seconds an executor's cached client may go unused before it is dropped.
CLIENT_IDLE_S = 300.0
#: Clients an executor Python worker keeps at most (least recently used dropped first).
MAX_CACHED_CLIENTS = 16
#: Seconds of one wait for deliveries or records, between two looks at whether to stop.
FLUSH_SLICE_S = 0.1
#: Rows handed to a producer between two looks at whether the task is stopping.
STOP_CHECK_ROWS = 10_000
#: A reader's ``fetch.wait.max.ms`` unless the worker's or connector's consumer settings
#: say otherwise (see :func:`reader_conf`).
READER_FETCH_WAIT_MS = "10"
#: A reader's ``fetch.queue.backoff.ms``: librdkafka (2.1+) stops fetching for a second by
#: default once its local queue holds ``queued.min.messages`` (100 000), which a reader
#: that consumes a batch at a time reaches at once; a bare consume loop here read 155k
#: messages/s with the default and 676k/s with 10 ms.
READER_FETCH_QUEUE_BACKOFF_MS = "10"


class KafkaFailure(NamedTuple):
    """A Kafka error as an executor reports it to the driver."""

    code: int
    name: str
    retriable: bool
    message: str

    @classmethod
    def of(cls, error: KafkaError, context: str = "") -> KafkaFailure:
        prefix = f"{context}: " if context else ""
        return cls(error.code(), error.name(), is_retriable(error), f"{prefix}{error.str()}")


class KafkaIoError(Exception):
    """A batch's Kafka I/O failed; ``retriable`` says whether a retry may succeed."""

    def __init__(self, message: str, retriable: bool) -> None:
        super().__init__(message)
        self.retriable = retriable


class RecordRefusedError(Exception):
    """The broker (or the client, for the record's size) refused a record for good: what a
    skipped record's report says about it (KIP-779)."""

    def __init__(self, failure: KafkaFailure) -> None:
        super().__init__(f"{failure.name}: {failure.message}")
        self.failure = failure


class ProduceResult(NamedTuple):
    """What a produce slice reports: records handed to the producer, records not delivered
    (errors, or still queued at the flush timeout), the first error messages, whether
    every failure was retriable, and the records the broker (or the client, for their size)
    refused for good, by their index in the slice, when the slice was written one record
    per request (see :func:`_hand_one_by_one`)."""

    produced: int
    failed: int
    messages: list[str]
    retriable: bool = True
    refused: tuple[tuple[int, KafkaFailure], ...] = ()

    @property
    def only_refusals(self) -> bool:
        """Every record failed was refused for good, each named (a tolerable outcome)."""
        return self.failed == len(self.refused)


#: What a reader makes of each message: a row to pickle (executors) or a SinkRecord.
R = TypeVar("R")


class RangeResult(NamedTuple, Generic[R]):
    """What reading one range returns: the next offset to consume and the rows read, or the
    failure that stopped the read (then the rows are to be discarded)."""

    topic: str
    partition: int
    next_offset: int
    rows: list[R]
    failure: KafkaFailure | None = None


def raise_read_failure(results: Sequence[RangeResult[Any]]) -> None:
    """Raises KafkaIoError for the first failed range (retriable iff every failure is)."""
    failures = [r.failure for r in results if r.failure is not None]
    if failures:
        raise KafkaIoError(
            "; ".join(f"{f.name}: {f.message}" for f in failures[:MAX_REPORTED_ERRORS]),
            retriable=all(f.retriable for f in failures),
        )

PRODUCER_OVERRIDE_PREFIX = "producer.override."
#: What a producer that writes each record in a request of its own adds to the task's
#: settings: a batch the broker refuses whole (librdkafka does not split a batch refused
#: as too large, as Java's producer does) is written again with it, so that each record
#: gets its own verdict.
ONE_RECORD_PER_REQUEST = {"batch.num.messages": "1", "linger.ms": "0"}
#: A producer setting the Python client takes as a bool, not a string.
ONLY_ERROR_REPORTS = "delivery.report.only.error"
CONSUMER_OVERRIDE_PREFIX = "consumer.override."


def _overrides(config: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix)}


def producer_conf(
    worker: WorkerConfig, connector_config: Mapping[str, str], client_id: str
) -> dict[str, str]:
    """Worker ``producer.*`` props, then the connector's ``producer.override.*`` ones."""
    conf = {
        "bootstrap.servers": worker.bootstrap_servers,
        "client.id": client_id,
        "enable.idempotence": "true",
        "linger.ms": "5",
        # Only failures call back into Python: a callback per delivered record costs more
        # than producing it.
        ONLY_ERROR_REPORTS: "true",
    }
    conf.update(worker.prefixed("producer."))
    conf.update(_overrides(connector_config, PRODUCER_OVERRIDE_PREFIX))
    return conf


def sink_group_id(connector: str, connector_config: Mapping[str, str]) -> str:
    """The sink connector's consumer group: ``connect-<connector>`` unless overridden."""
    return connector_config.get(f"{CONSUMER_OVERRIDE_PREFIX}group.id") or f"connect-{connector}"


def _consumer_base(worker: WorkerConfig, connector_config: Mapping[str, str]) -> dict[str, str]:
    conf = {"bootstrap.servers": worker.bootstrap_servers, "auto.offset.reset": "earliest"}
    conf.update(worker.prefixed("consumer."))
    conf.update(_overrides(connector_config, CONSUMER_OVERRIDE_PREFIX))
    return conf


def member_conf(
    worker: WorkerConfig, connector_config: Mapping[str, str], connector: str, client_id: str
) -> dict[str, str]:
    """The sink task's group member: commits by hand, never reads records itself."""
    conf = _consumer_base(worker, connector_config)
    conf.update(
        {
            "group.id": sink_group_id(connector, connector_config),
            "client.id": client_id,
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
        }
    )
    return conf


def lookup_conf(
    worker: WorkerConfig, connector: str, connector_config: Mapping[str, str]
) -> dict[str, str]:
    """A consumer that only looks offsets up (rewind by time): the sink's settings; it
    joins no group (the id is only required by the client) and commits nothing."""
    conf = _consumer_base(worker, connector_config)
    conf.update(
        {
            "group.id": f"{sink_group_id(connector, connector_config)}-lookup",
            "client.id": f"connect-{connector}-lookup",
            "enable.auto.commit": "false",
        }
    )
    conf.pop("group.instance.id", None)
    return conf


def reader_conf(
    worker: WorkerConfig, connector_config: Mapping[str, str], connector: str
) -> dict[str, str]:
    """An executor's plain assigned consumer: never joins the group, never commits.

    Its ranges end at a high watermark, so the records are there: a fetch never needs to
    wait for more, and a long-poll fetch left outstanding by one range would hold up the
    next range's first fetch by up to ``fetch.wait.max.ms`` (500 ms by default).
    """
    conf = {
        "fetch.wait.max.ms": READER_FETCH_WAIT_MS,
        "fetch.queue.backoff.ms": READER_FETCH_QUEUE_BACKOFF_MS,
        **_consumer_base(worker, connector_config),
    }
    conf.update(
        {
            "group.id": f"{sink_group_id(connector, connector_config)}-reader",
            "client.id": f"connect-{connector}-reader",
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
            "enable.partition.eof": "true",
        }
    )
    conf.pop("group.instance.id", None)
    return conf


# ---- executor side -------------------------------------------------------------------------


def prepare_executor() -> None:
    """Executor Python workers log (rate-limited client lines) in the worker's format and
    collect garbage in large steps, as the worker does (see ``gc_tuning``)."""
    import os

    from connect_grpc.logs import configure_logging

    tune_for_batches()
    if not structlog.is_configured():
        configure_logging(os.environ.get("CONNECT_LOG_FORMAT", "console"))


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
    arguments: the keyword form costs twice as much per record."""
    topic, partition, key, value, headers = row
    while True:
        try:
            if headers:
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
    timer, so a new source task's first batch waited half a second (1,000 records produced
    at once: 510-520 ms to delivery from a cold producer, 60-80 ms after this wait, on a
    local broker). A broker that does not answer in time is left to the first batch, as
    before."""
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


class _CachedConsumer:
    """A plain assigned consumer kept across batches (each range assigns its partition)."""

    def __init__(self, conf: Mapping[str, str]) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(with_client_log(conf, conf.get("client.id", "reader")))
        #: What its last read consumed past its ranges' ends, by partition (``_Ahead``).
        self.ahead: dict[tuple[str, int], _Ahead] = {}

    def release(self) -> bool:
        """Unassigns the last range's partition, so the idle consumer fetches nothing;
        False if the client failed (it is then to be dropped)."""
        from confluent_kafka import KafkaException

        try:
            self.consumer.unassign()
        except KafkaException:
            return False
        return True

    def close(self) -> None:
        self.consumer.close()


class ClientCache:
    """This process's long-lived clients, one per configuration, least recently used first.

    Not thread-safe: an executor Python worker runs one Spark task at a time.
    """

    def __init__(self, idle_s: float = CLIENT_IDLE_S, capacity: int = MAX_CACHED_CLIENTS) -> None:
        self._idle_s = idle_s
        self._capacity = capacity
        self._entries: OrderedDict[tuple[Any, ...], tuple[Any, float]] = OrderedDict()

    def get(self, kind: Callable[[Mapping[str, str]], Any], conf: Mapping[str, str]) -> Any:
        """The cached client of ``kind`` for ``conf``, created on first use."""
        now = time.monotonic()
        self._drop_idle(now)
        key = (kind, *sorted(conf.items()))
        entry = self._entries.pop(key, None)
        client = entry[0] if entry is not None else kind(conf)
        self._entries[key] = (client, now)
        while len(self._entries) > self._capacity:
            _, (oldest, _) = self._entries.popitem(last=False)
            oldest.close()
        return client

    def drop(self, client: Any) -> None:
        """Closes ``client`` and forgets it (after a failed batch)."""
        for key, (cached, _) in list(self._entries.items()):
            if cached is client:
                del self._entries[key]
        client.close()

    def __len__(self) -> int:
        return len(self._entries)

    def _drop_idle(self, now: float) -> None:
        for key, (client, used) in list(self._entries.items()):
            if now - used > self._idle_s:
                del self._entries[key]
                client.close()


#: The clients of this process (an executor Python worker, or the driver in local tests).
_CLIENTS = ClientCache()


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


def _never() -> bool:
    return False


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
    stopping: Callable[[], bool] = _never,
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
    to build for pickling; ≈ 40 % less time a record)."""
    from confluent_kafka import KafkaException

    produce, on_delivery = producer.produce, errors.on_delivery
    produced = 0
    try:
        for record in records:
            if errors.fatal or (produced % STOP_CHECK_ROWS == 0 and produced and stopping()):
                return produced
            key, value, partition = record.key, record.value, record.kafka_partition
            if isinstance(key, str):
                key = key.encode()
            if isinstance(value, str):
                value = value.encode()
            partition = -1 if partition is None else partition
            while True:
                try:
                    if record.headers:
                        headers = list(record.headers)
                        produce(record.topic, value, key, partition, on_delivery, headers=headers)
                    else:
                        produce(record.topic, value, key, partition, on_delivery)
                    break
                except BufferError:
                    producer.poll(0.05)
            produced += 1
        producer.poll(0)
    except KafkaException as exc:
        error = kafka_error_of(exc)
        if error is None:
            raise
        errors.add(KafkaFailure.of(error, "produce"))
    return produced


def produce_slices(
    conf: Mapping[str, str], slices: Iterable[list[ProduceRow]], tolerate: bool = False
) -> Iterator[ProduceResult]:
    """Produces every row of this Spark partition with this process's producer for ``conf``;
    yields one result. A producer that failed any record is dropped. With ``tolerate``
    (``errors.tolerance=all``), a failure that is not retriable has the partition's rows
    written again one record per request, and the result names the rows refused (by their
    index among the partition's rows)."""
    prepare_executor()
    cached: CachedProducer = _CLIENTS.get(CachedProducer, conf)
    redo = None
    if tolerate:
        slices = list(slices)  # the partition's lists of rows, not copied
        redo = functools.partial(_redo_on_executor, conf, slices)
    result = _produce_with(cached, functools.partial(_produce_rows, slices), redo=redo)
    if result.failed:
        _CLIENTS.drop(cached)
    yield result


def _one_by_one_timeout_s(records: int) -> float:
    return FLUSH_TIMEOUT_S + records * REDO_FLUSH_S_PER_RECORD


def _redo_on_executor(
    conf: Mapping[str, str], slices: Sequence[list[ProduceRow]]
) -> ProduceResult:
    rows = [row for rows in slices for row in rows]
    cached: CachedProducer = _CLIENTS.get(CachedProducer, {**conf, **ONE_RECORD_PER_REQUEST})
    hand = functools.partial(_hand_one_by_one, rows)
    result = _produce_with(cached, hand, flush_timeout_s=_one_by_one_timeout_s(len(rows)))
    if not result.only_refusals:
        _CLIENTS.drop(cached)
    return result


def _row(msg: Any) -> ConsumedRow:
    ts_type, ts = msg.timestamp()
    headers = msg.headers()
    return (
        msg.offset(),
        msg.key(),
        msg.value(),
        ts if ts_type else -1,
        tuple((k, b"" if v is None else v) for k, v in headers) if headers else (),
        ts_type,
    )


def _tuple_rows(topic: str, partition: int) -> Callable[[Any], ConsumedRow]:
    return _row


def sink_record_builder(topic: str, partition: int) -> Callable[[Any], SinkRecord]:
    """Builds each message's SinkRecord at once (in-process readers: nothing to pickle)."""

    def record(msg: Any) -> SinkRecord:
        ts_type, ts = msg.timestamp()
        headers = msg.headers()
        return SinkRecord(
            topic,
            partition,
            msg.offset(),
            msg.key(),
            msg.value(),
            ts if ts_type and ts >= 0 else None,
            tuple((k, b"" if v is None else v) for k, v in headers) if headers else (),
            None,
            None,
            TIMESTAMP_TYPES[ts_type],
        )

    return record


def partition_ends(
    consumer: Any, partitions: Sequence[tuple[str, int]], timeout: float
) -> dict[tuple[str, int], tuple[int, int]]:
    """Each partition's (earliest, latest) offset, as ``get_watermark_offsets`` gives them
    (the latest as the consumer's isolation level sees it: the last stable offset under
    read_committed); raises KafkaException as it does, within ``timeout`` in all.

    One partition: its two requests sent together. Several: two rounds of ListOffsets for
    all of them (each leader answers for its own), rather than a round trip a partition one
    after another (50 partitions on a local broker: 37-150 ms one by one, 2 ms so)."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition

    if not partitions:
        return {}
    if len(partitions) == 1:
        topic, partition = partitions[0]
        low, high = consumer.get_watermark_offsets(
            TopicPartition(topic, partition), timeout=timeout, cached=False
        )
        return {(topic, partition): (low, high)}
    give_up_at = time.monotonic() + timeout
    lows, highs = (
        _offsets_at(consumer, partitions, spec, max(0.0, give_up_at - time.monotonic()))
        for spec in (OFFSET_BEGINNING, OFFSET_END)
    )
    return {key: (lows[key], highs[key]) for key in partitions}


def _offsets_at(
    consumer: Any, partitions: Sequence[tuple[str, int]], spec: int, timeout: float
) -> dict[tuple[str, int], int]:
    """Each partition's offset for a special timestamp (``OFFSET_BEGINNING``/``OFFSET_END``)."""
    from confluent_kafka import KafkaException, TopicPartition

    request = [TopicPartition(topic, partition, spec) for topic, partition in partitions]
    found: dict[tuple[str, int], int] = {}
    for tp in consumer.offsets_for_times(request, timeout=timeout):
        if tp.error is not None:
            raise KafkaException(tp.error)
        found[(tp.topic, tp.partition)] = tp.offset
    return found


def _stalled(rng: OffsetRange, reached: int) -> KafkaFailure:
    return KafkaFailure(
        KafkaError._TIMED_OUT,
        "_TIMED_OUT",
        True,
        f"no progress reading {rng.topic}[{rng.partition}] at offset {reached} "
        f"(range end {rng.end}) for {READ_STALL_TIMEOUT_S}s",
    )


def _interrupted(rng: OffsetRange, reached: int) -> KafkaFailure:
    return KafkaFailure(
        KafkaError._INTR,
        "_INTR",
        True,
        f"stopped reading {rng.topic}[{rng.partition}] at offset {reached}: the task is stopping",
    )


def _read_range(
    consumer: Any,
    rng: OffsetRange,
    make_row: Callable[[str, int], Callable[[Any], R]],
    stopping: Callable[[], bool] = _never,
) -> RangeResult[R]:
    """Reads [start, end) of one partition; stops early at the partition's (stable) end.
    Each consumed batch is taken as ``_Reading.take`` takes a run of a read of several."""
    from confluent_kafka import TopicPartition

    consumer.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
    reading = _Reading(rng, make_row(rng.topic, rng.partition))
    last_progress = time.monotonic()
    while not reading.done:
        if stopping():
            reading.failure = _interrupted(rng, reading.reached)
            break
        messages = consumer.consume(
            num_messages=min(rng.end - reading.reached, 10_000), timeout=FLUSH_SLICE_S
        )
        if messages:
            reading.take(messages, consumer)
            last_progress = time.monotonic()
        elif time.monotonic() - last_progress > READ_STALL_TIMEOUT_S:
            reading.failure = _stalled(rng, reading.reached)
            break
    return reading.result()


def _has_event(messages: list[Any]) -> bool:
    """Whether any of the messages is an event (an error, a partition's end included); the
    errors are asked for and told from None by ``map`` rather than by a loop (a KafkaError
    cannot be compared with None: only ``is`` tells them apart)."""
    errors = map(_MESSAGE_ERROR, messages)
    return any(map(operator.is_not, errors, itertools.repeat(None)))


def _cut(run: list[Any], end: int, checked: bool = False) -> int | None:
    """Where a run of one partition's messages reaches ``end``: the index of its first
    message at or past it (the run's length when none is), found by bisection (a
    partition's offsets only grow); None when an event comes first, or is the first at or
    past ``end`` (the run is then taken a message at a time). ``checked``: the run is known
    to hold no event."""
    if _offset_of(run[-1]) < end:
        cut = len(run)
    else:
        # on any list, bisect_left ends between an offset below ``end`` and one at or past
        # it; with no event before it, that is the first message at or past ``end``
        cut = bisect.bisect_left(run, end, key=_offset_of)
        if cut < len(run) and run[cut].error() is not None:
            return None
    if not checked and _has_event(run[:cut] if cut < len(run) else run):
        return None
    return cut


def _offset_of(message: Any) -> int:
    """A message's offset; -1 for an event that has none (its ``offset()`` is None)."""
    offset: int | None = message.offset()
    return -1 if offset is None else offset


#: Per-message calls of a consumed batch, through Message's own method descriptors rather
#: than ``operator.methodcaller``, which looks the method up by name on every call: the
#: event check of 200k messages 86 → 28 ns a message, their split into runs 88 → 37.
_MESSAGE_ERROR = Message.error


def _read_or_fail(
    consumer: Any,
    rng: OffsetRange,
    make_row: Callable[[str, int], Callable[[Any], R]],
    stopping: Callable[[], bool] = _never,
) -> RangeResult[R]:
    from confluent_kafka import KafkaException

    try:
        return _read_range(consumer, rng, make_row, stopping)
    except KafkaException as exc:
        error = kafka_error_of(exc)
        if error is None:
            raise
        failure = KafkaFailure.of(error, f"{rng.topic}[{rng.partition}]")
        return RangeResult(rng.topic, rng.partition, rng.start, [], failure)


def _read_each(
    cached: _CachedConsumer,
    ranges: Iterable[OffsetRange],
    make_row: Callable[[str, int], Callable[[Any], R]],
    stopping: Callable[[], bool] = _never,
) -> tuple[list[RangeResult[R]], bool]:
    """Reads the ranges (several at once, ``_read_together``); returns the results and
    whether the consumer is fit for the next batch (nothing failed, and it let go of its
    partitions)."""
    ranges = list(ranges)
    if len(ranges) == 1 and not cached.ahead:
        results = [_read_or_fail(cached.consumer, ranges[0], make_row, stopping)]
    else:
        results = _read_together_or_fail(cached.consumer, ranges, make_row, stopping, cached.ahead)
    if any(result.failure is not None for result in results):
        return results, False
    return results, cached.release()


class _Ahead(NamedTuple):
    """A partition's messages a read consumed past its range's end, in order from ``start``
    (that end), for the next batch's range of the partition, which starts there."""

    start: int
    messages: list[Any]


class _AheadBudget:
    """The bytes a read may still keep past its ranges' ends, all partitions together."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = AHEAD_MAX_BYTES

    def fit(self, messages: list[Any]) -> list[Any]:
        """The longest head of ``messages`` that fits, taken from what is left."""
        size = sum(map(len, messages)) + AHEAD_MESSAGE_BYTES * len(messages)
        if size <= self.left:
            self.left -= size
            return messages
        fitting = []
        for msg in messages:
            size = len(msg) + AHEAD_MESSAGE_BYTES
            if size > self.left:
                break
            self.left -= size
            fitting.append(msg)
        self.left = 0
        return fitting


class _Reading(Generic[R]):
    """One range of a read of several at once: what it has read, and whether it is done."""

    __slots__ = (
        "budget", "done", "failure", "keeping", "past", "range", "reached", "row", "rows",
        "whole",
    )

    def __init__(
        self, rng: OffsetRange, row: Callable[[Any], R], budget: _AheadBudget | None = None
    ) -> None:
        self.range = rng
        self.row = row
        self.rows: list[R] = []
        self.reached = rng.start
        self.done = rng.end <= rng.start
        self.failure: KafkaFailure | None = None
        #: Whether the range was read to its end (not cut short by its partition's end).
        self.whole = self.done
        #: Its partition's messages consumed past the range's end, in order (``_Ahead``).
        self.past: list[Any] = []
        self.budget = budget if budget is not None else _AheadBudget()
        #: False once something was not kept: what comes after would not continue ``past``.
        self.keeping = True

    def keep_past(self, messages: list[Any]) -> None:
        """Keeps messages consumed after the range was read whole, up to the first error
        event, ``AHEAD_RANGES`` times the range's size and the read's byte budget."""
        if not self.whole or not self.keeping:
            return
        room = AHEAD_RANGES * max(1, self.range.size) - len(self.past)
        head = messages[: max(0, room)]
        if _has_event(head):
            head = list(itertools.takewhile(lambda m: m.error() is None, head))
        kept = self.budget.fit(head)
        self.past.extend(kept)
        self.keeping = len(kept) == len(messages)

    def take(self, run: list[Any], consumer: Any, checked: bool = False) -> None:
        """Takes a run of its partition's messages, as ``_read_range`` takes a batch
        (``checked``: the run is known to hold no event, as what a read kept)."""
        rng = self.range
        cut = _cut(run, rng.end, checked)
        if cut is None:
            self._take_one_by_one(run, consumer)
        elif cut == len(run):
            self.rows.extend(map(self.row, run))
            self.reached = run[-1].offset() + 1
            self.whole = self.reached >= rng.end
        else:
            self.rows.extend(map(self.row, run[:cut]))
            self.reached = rng.end
            self.whole = True
            self.keep_past(run[cut:])
        self.done = self.done or self.failure is not None or self.whole

    def _take_one_by_one(self, run: list[Any], consumer: Any) -> None:
        from confluent_kafka import TopicPartition

        rng = self.range
        for index, msg in enumerate(run):
            error = msg.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    self.failure = KafkaFailure.of(error, f"{rng.topic}[{rng.partition}]")
                    return
                tp = TopicPartition(rng.topic, rng.partition)
                position = consumer.position([tp])[0].offset
                self.reached = max(self.reached, min(position, rng.end))
                self.done = True
                return
            offset = msg.offset()
            if offset >= rng.end:
                self.reached = rng.end
                self.whole = True
                self.keep_past(run[index:])
                return
            self.rows.append(self.row(msg))
            self.reached = offset + 1
        self.whole = self.reached >= rng.end

    def result(self) -> RangeResult[R]:
        rng = self.range
        if self.failure is not None:
            return RangeResult(rng.topic, rng.partition, self.reached, [], self.failure)
        return RangeResult(rng.topic, rng.partition, self.reached, self.rows)


_PARTITION = Message.partition
_TOPIC = Message.topic


def _runs(messages: list[Any], one_topic: bool) -> Iterator[list[Any]]:
    """A consumed batch in runs of one partition's messages (a fetch answer's messages of
    one partition come together), in order. ``one_topic``: the consumer is assigned
    partitions of one topic only, so a partition's number tells it."""
    for _, same_number in itertools.groupby(messages, _PARTITION):
        run = list(same_number)
        if one_topic or len(set(map(_TOPIC, run))) == 1:
            yield run
        else:  # partitions of the same number of different topics, one after the other
            for _, same_topic in itertools.groupby(run, _TOPIC):
                yield list(same_topic)


def _read_together(
    consumer: Any,
    ranges: list[OffsetRange],
    make_row: Callable[[str, int], Callable[[Any], R]],
    stopping: Callable[[], bool] = _never,
    ahead: dict[tuple[str, int], _Ahead] | None = None,
) -> list[RangeResult[R]]:
    """Reads several ranges at once: all their partitions assigned together, so that one
    fetch asks for all of them, rather than a range at a time, each paying a fetch's start
    (a FileStreamSink of a 50-partition topic, steady: 163k records/s a range at a time,
    326k together). A partition whose range is done is paused (and resumed before this returns:
    a paused partition would stay so in the next batch's assignment). Each range ends as
    ``_read_range`` ends it; a failure ends the read.

    ``ahead`` carries from one read to the next what a read consumed past a range's end
    (a fetch brings up to ``max.partition.fetch.bytes`` of each partition, and one
    partition's messages come in a run: reaching the last partitions' records goes through
    the first ones' surplus). A range that starts where such messages start takes them
    first, and its partition is read from after them, or not at all."""
    from confluent_kafka import TopicPartition

    carried = dict(ahead or {})
    if ahead is not None:
        ahead.clear()
    budget = _AheadBudget()
    readings = [_Reading(rng, make_row(rng.topic, rng.partition), budget) for rng in ranges]
    reading_of = {(r.range.topic, r.range.partition): r for r in readings}
    one_topic = len({rng.topic for rng in ranges}) == 1
    for key, reading in reading_of.items():
        kept = carried.get(key)
        if kept is not None and kept.start == reading.range.start and not reading.done:
            reading.take(kept.messages, consumer, checked=True)  # no event: consumer not asked
    unread = [r for r in readings if not r.done]
    if unread:
        consumer.assign(
            [TopicPartition(r.range.topic, r.range.partition, r.reached) for r in unread]
        )
    paused: list[Any] = []
    try:
        last_progress = time.monotonic()
        while True:
            open_ = [r for r in readings if not r.done]
            if not open_:
                break
            if stopping():
                for reading in open_:
                    reading.failure = _interrupted(reading.range, reading.reached)
                break
            left = sum(r.range.end - r.reached for r in open_)
            messages = consumer.consume(num_messages=min(left, 10_000), timeout=FLUSH_SLICE_S)
            if messages:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > READ_STALL_TIMEOUT_S:
                for reading in open_:
                    reading.failure = _stalled(reading.range, reading.reached)
                break
            if _take_runs(consumer, messages, reading_of, open_[0], paused, one_topic):
                break
    finally:
        if paused:
            consumer.resume(paused)
    if ahead is not None and all(r.failure is None for r in readings):
        for key, reading in reading_of.items():
            if reading.past:
                ahead[key] = _Ahead(reading.reached, reading.past)
    return [reading.result() for reading in readings]


def _take_runs(
    consumer: Any,
    messages: list[Any],
    reading_of: Mapping[tuple[str, int], _Reading[R]],
    first_open: _Reading[R],
    paused: list[Any],
    one_topic: bool,
) -> bool:
    """Hands each run of a batch to its range; a range done is paused. True when a range
    failed (an error that names no range of the read fails the first open one)."""
    from confluent_kafka import TopicPartition

    for run in _runs(messages, one_topic):
        first = run[0]
        reading = reading_of.get((first.topic(), first.partition()))
        if reading is None:
            error = next((m.error() for m in run if m.error() is not None), None)
            if error is None or error.code() == KafkaError._PARTITION_EOF:
                continue
            first_open.failure = KafkaFailure.of(error, "the consumer")
            return True
        if reading.done:
            reading.keep_past(run)  # fetched before its partition was paused
            continue
        reading.take(run, consumer)
        if reading.failure is not None:
            return True
        if reading.done:
            paused.append(TopicPartition(reading.range.topic, reading.range.partition))
            consumer.pause(paused[-1:])
    return False


def _read_together_or_fail(
    consumer: Any, ranges: list[OffsetRange], *args: Any
) -> list[RangeResult[Any]]:
    """``_read_together``, a client error (raised) a failure of every range."""
    from confluent_kafka import KafkaException

    try:
        return _read_together(consumer, ranges, *args)
    except KafkaException as exc:
        error = kafka_error_of(exc)
        if error is None:
            raise
        failure = KafkaFailure.of(error, ", ".join(f"{r.topic}[{r.partition}]" for r in ranges))
        return [RangeResult(r.topic, r.partition, r.start, [], failure) for r in ranges]


def read_ranges(
    conf: Mapping[str, str], ranges: Iterable[OffsetRange]
) -> Iterator[RangeResult[ConsumedRow]]:
    """Reads each range of this Spark partition with this process's plain assigned
    consumer for ``conf``; stops at the first failed range (and drops the consumer)."""
    prepare_executor()
    cached: _CachedConsumer = _CLIENTS.get(_CachedConsumer, conf)
    try:
        results, fit = _read_each(cached, ranges, _tuple_rows)
    except BaseException:
        _CLIENTS.drop(cached)
        raise
    if not fit:
        _CLIENTS.drop(cached)
    yield from results


# ---- driver side: batches too small to pay for a Spark job --------------------------------


class _Closeable(Protocol):
    def close(self) -> None: ...


_C = TypeVar("_C", bound=_Closeable)


class _DriverClient(Generic[_C]):
    """One task's own client on the driver, for its small batches.

    Created on first use, kept across batches, dropped (and closed once) after a batch it
    failed, closed by :meth:`close` when the task stops. Used by the task's loop thread only.
    """

    def __init__(self, kind: Callable[[Mapping[str, str]], _C], conf: Mapping[str, str]) -> None:
        self._kind = kind
        self._conf = conf
        self._cached: _C | None = None

    def _client(self) -> _C:
        if self._cached is None:
            self._cached = self._kind(self._conf)
        return self._cached

    def close(self) -> None:
        cached, self._cached = self._cached, None
        if cached is not None:
            cached.close()


class DriverProducer(_DriverClient[CachedProducer]):
    """A source task's own producer on the driver (and, created when first needed, one
    that writes a record per request: see :func:`_produce_with`)."""

    def __init__(self, conf: Mapping[str, str]) -> None:
        super().__init__(CachedProducer, conf)
        self._one_by_one = _DriverClient(CachedProducer, {**conf, **ONE_RECORD_PER_REQUEST})

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


class DriverReader(_DriverClient[_CachedConsumer]):
    """A sink task's own plain assigned consumer on the driver."""

    def __init__(self, conf: Mapping[str, str]) -> None:
        super().__init__(_CachedConsumer, conf)

    def read(
        self, ranges: Iterable[OffsetRange], stopping: Callable[[], bool]
    ) -> list[RangeResult[SinkRecord]]:
        """Reads each range as SinkRecords; stops at the first failed one (and drops the
        consumer). The cyclic collector is paused meanwhile (``gc_tuning``)."""
        with collector_paused():
            results, fit = _read_each(self._client(), ranges, sink_record_builder, stopping)
        if not fit:
            self.close()
        return results
