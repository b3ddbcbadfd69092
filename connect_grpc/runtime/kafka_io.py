"""Kafka client settings, and the functions Spark runs on executors to produce and read.

``produce_slices`` and ``read_ranges`` are shipped to executors by reference (this module is
importable there because executors run the worker's own interpreter); they take only
plain dicts and tuples. They never raise for a Kafka error: they report it in their result
(a ``KafkaFailure``, picklable, saying whether it is retriable), so the driver can tell a
transient outage from a fatal error without parsing an executor's stack trace.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from confluent_kafka import KafkaError

from connect_grpc.kafka_clients import is_retriable, kafka_error_of, with_client_log
from connect_grpc.runtime.batching import OffsetRange
from connect_grpc.runtime.records import ConsumedRow, ProduceRow
from connect_grpc.worker_config import WorkerConfig

#: Seconds a producer may take to deliver a slice; undelivered records are then a retriable
#: failure (the batch is produced again).
FLUSH_TIMEOUT_S = 60.0
#: Seconds a reader may go without progress before the batch fails (retriable).
READ_STALL_TIMEOUT_S = 30.0
#: How many delivery errors a slice reports in full (the count is always exact).
MAX_REPORTED_ERRORS = 5


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


class ProduceResult(NamedTuple):
    """What a produce slice reports: records handed to the producer, records not delivered
    (errors, or still queued at the flush timeout), the first error messages, and whether
    every failure was retriable."""

    produced: int
    failed: int
    messages: list[str]
    retriable: bool = True


class RangeResult(NamedTuple):
    """What reading one range returns: the next offset to consume and the rows read, or the
    failure that stopped the read (then the rows are to be discarded)."""

    topic: str
    partition: int
    next_offset: int
    rows: list[ConsumedRow]
    failure: KafkaFailure | None = None


def raise_read_failure(results: Sequence[RangeResult]) -> None:
    """Raises KafkaIoError for the first failed range (retriable iff every failure is)."""
    failures = [r.failure for r in results if r.failure is not None]
    if failures:
        raise KafkaIoError(
            "; ".join(f"{f.name}: {f.message}" for f in failures[:MAX_REPORTED_ERRORS]),
            retriable=all(f.retriable for f in failures),
        )

PRODUCER_OVERRIDE_PREFIX = "producer.override."
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


def reader_conf(
    worker: WorkerConfig, connector_config: Mapping[str, str], connector: str
) -> dict[str, str]:
    """An executor's plain assigned consumer: never joins the group, never commits."""
    conf = _consumer_base(worker, connector_config)
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


def _configure_executor_logging() -> None:
    """Executor Python workers log (rate-limited client lines) in the worker's format."""
    import os

    import structlog

    from connect_grpc.logs import configure_logging

    if not structlog.is_configured():
        configure_logging(os.environ.get("CONNECT_LOG_FORMAT", "console"))


class _ProduceErrors:
    """Delivery reports and client errors of one producer."""

    def __init__(self) -> None:
        self.count = 0
        self.messages: list[str] = []
        self.retriable = True
        self.fatal = False

    def add(self, failure: KafkaFailure) -> None:
        self.count += 1
        self.retriable = self.retriable and failure.retriable
        if len(self.messages) < MAX_REPORTED_ERRORS:
            self.messages.append(f"{failure.name}: {failure.message}")

    def on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.add(KafkaFailure.of(err, f"{msg.topic()}[{msg.partition()}]"))

    def on_fatal(self, err: KafkaError) -> None:
        if err.fatal():
            self.fatal = True
            self.add(KafkaFailure.of(err, "producer"))


def _produce_one(producer: Any, row: ProduceRow, errors: _ProduceErrors) -> None:
    topic, partition, key, value, headers = row
    kwargs: dict[str, Any] = {"key": key, "value": value, "on_delivery": errors.on_delivery}
    if partition >= 0:
        kwargs["partition"] = partition
    if headers:
        kwargs["headers"] = list(headers)
    while True:
        try:
            producer.produce(topic, **kwargs)
            return
        except BufferError:
            producer.poll(0.05)


def _producer(conf: Mapping[str, str], errors: _ProduceErrors) -> Any:
    from confluent_kafka import Producer

    settings = with_client_log(conf, conf.get("client.id", "producer"))
    client_error = settings["error_cb"]

    def on_error(err: KafkaError) -> None:
        errors.on_fatal(err)
        client_error(err)

    settings["error_cb"] = on_error
    return Producer(settings)


def _produce_rows(producer: Any, slices: Iterable[list[ProduceRow]], errors: _ProduceErrors) -> int:
    """Hands every row to the producer (stops at a fatal error); returns how many it took."""
    from confluent_kafka import KafkaException

    produced = 0
    try:
        for rows in slices:
            for row in rows:
                if errors.fatal:
                    return produced
                _produce_one(producer, row, errors)
                produced += 1
            producer.poll(0)
    except KafkaException as exc:
        error = kafka_error_of(exc)
        if error is None:
            raise
        errors.add(KafkaFailure.of(error, "produce"))
    return produced


def produce_slices(
    conf: Mapping[str, str], slices: Iterable[list[ProduceRow]]
) -> Iterator[ProduceResult]:
    """Produces every row of this Spark partition with one producer; yields one result."""
    _configure_executor_logging()
    errors = _ProduceErrors()
    producer = _producer(conf, errors)
    produced = _produce_rows(producer, slices, errors)
    remaining = producer.flush(FLUSH_TIMEOUT_S)
    if remaining:
        errors.count += remaining
        errors.messages.append(f"{remaining} records not delivered within {FLUSH_TIMEOUT_S}s")
    yield ProduceResult(produced, errors.count, errors.messages, errors.retriable)


def _row(msg: Any) -> ConsumedRow:
    ts_type, ts = msg.timestamp()
    headers = tuple((k, v if v is not None else b"") for k, v in (msg.headers() or ()))
    return (
        msg.topic(),
        msg.partition(),
        msg.offset(),
        msg.key(),
        msg.value(),
        ts if ts_type else -1,
        headers,
    )


def _stalled(rng: OffsetRange, reached: int) -> KafkaFailure:
    return KafkaFailure(
        KafkaError._TIMED_OUT,
        "_TIMED_OUT",
        True,
        f"no progress reading {rng.topic}[{rng.partition}] at offset {reached} "
        f"(range end {rng.end}) for {READ_STALL_TIMEOUT_S}s",
    )


def _read_range(consumer: Any, rng: OffsetRange) -> RangeResult:
    """Reads [start, end) of one partition; stops early at the partition's (stable) end."""
    from confluent_kafka import TopicPartition

    tp = TopicPartition(rng.topic, rng.partition, rng.start)
    consumer.assign([tp])
    rows: list[ConsumedRow] = []
    reached = rng.start
    last_progress = time.monotonic()
    while reached < rng.end:
        for msg in consumer.consume(num_messages=min(rng.end - reached, 10_000), timeout=0.5):
            error = msg.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    failure = KafkaFailure.of(error, f"{rng.topic}[{rng.partition}]")
                    return RangeResult(rng.topic, rng.partition, reached, [], failure)
                position = consumer.position([tp])[0].offset
                return RangeResult(
                    rng.topic, rng.partition, max(reached, min(position, rng.end)), rows
                )
            if msg.offset() >= rng.end:
                reached = rng.end
                break
            rows.append(_row(msg))
            reached = msg.offset() + 1
            last_progress = time.monotonic()
        if time.monotonic() - last_progress > READ_STALL_TIMEOUT_S:
            return RangeResult(rng.topic, rng.partition, reached, [], _stalled(rng, reached))
    return RangeResult(rng.topic, rng.partition, reached, rows)


def _read_or_fail(consumer: Any, rng: OffsetRange) -> RangeResult:
    from confluent_kafka import KafkaException

    try:
        return _read_range(consumer, rng)
    except KafkaException as exc:
        error = kafka_error_of(exc)
        if error is None:
            raise
        failure = KafkaFailure.of(error, f"{rng.topic}[{rng.partition}]")
        return RangeResult(rng.topic, rng.partition, rng.start, [], failure)


def read_ranges(conf: Mapping[str, str], ranges: Iterable[OffsetRange]) -> Iterator[RangeResult]:
    """Reads each range of this Spark partition with one plain assigned consumer; stops at
    the first failed range."""
    from confluent_kafka import Consumer

    _configure_executor_logging()
    consumer = Consumer(with_client_log(conf, conf.get("client.id", "reader")))
    try:
        for rng in ranges:
            result = _read_or_fail(consumer, rng)
            yield result
            if result.failure is not None:
                return
    finally:
        consumer.close()
