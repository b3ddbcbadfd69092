"""Kafka client settings, and the functions Spark runs on executors to produce and read.

``produce_slices`` and ``read_ranges`` are shipped to executors by reference (this module is
importable there because executors run the worker's own interpreter); they take only
plain dicts and tuples.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from connect_grpc.runtime.batching import OffsetRange
from connect_grpc.runtime.records import ConsumedRow, ProduceRow
from connect_grpc.worker_config import WorkerConfig

#: Seconds a producer may take to deliver a slice.
FLUSH_TIMEOUT_S = 120.0
#: Seconds a reader may go without progress before the batch fails.
READ_STALL_TIMEOUT_S = 60.0
#: How many delivery errors a slice reports in full (the count is always exact).
MAX_REPORTED_ERRORS = 5

#: What a produce slice reports: (records produced, delivery errors, first error messages).
ProduceResult = tuple[int, int, list[str]]
#: What reading one range returns: (topic, partition, next offset to consume, rows).
RangeResult = tuple[str, int, int, list[ConsumedRow]]

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


class _DeliveryErrors:
    def __init__(self) -> None:
        self.count = 0
        self.messages: list[str] = []

    def on_delivery(self, err: Any, msg: Any) -> None:
        if err is None:
            return
        self.count += 1
        if len(self.messages) < MAX_REPORTED_ERRORS:
            self.messages.append(f"{msg.topic()}[{msg.partition()}]: {err}")


def _produce_one(producer: Any, row: ProduceRow, errors: _DeliveryErrors) -> None:
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


def produce_slices(
    conf: Mapping[str, str], slices: Iterable[list[ProduceRow]]
) -> Iterator[ProduceResult]:
    """Produces every row of this Spark partition with one producer; yields one result."""
    from confluent_kafka import Producer

    producer = Producer(dict(conf))
    errors = _DeliveryErrors()
    produced = 0
    for rows in slices:
        for row in rows:
            _produce_one(producer, row, errors)
            produced += 1
        producer.poll(0)
    remaining = producer.flush(FLUSH_TIMEOUT_S)
    if remaining:
        errors.count += remaining
        errors.messages.append(f"{remaining} records not delivered within {FLUSH_TIMEOUT_S}s")
    yield produced, errors.count, errors.messages


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


def _read_range(consumer: Any, rng: OffsetRange) -> RangeResult:
    """Reads [start, end) of one partition; stops early at the partition's (stable) end."""
    from confluent_kafka import KafkaError, KafkaException, TopicPartition

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
                    raise KafkaException(error)
                position = consumer.position([tp])[0].offset
                return rng.topic, rng.partition, max(reached, min(position, rng.end)), rows
            if msg.offset() >= rng.end:
                reached = rng.end
                break
            rows.append(_row(msg))
            reached = msg.offset() + 1
            last_progress = time.monotonic()
        if time.monotonic() - last_progress > READ_STALL_TIMEOUT_S:
            raise TimeoutError(
                f"no progress reading {rng.topic}[{rng.partition}] at offset {reached} "
                f"(range end {rng.end}) for {READ_STALL_TIMEOUT_S}s"
            )
    return rng.topic, rng.partition, reached, rows


def read_ranges(conf: Mapping[str, str], ranges: Iterable[OffsetRange]) -> Iterator[RangeResult]:
    """Reads each range of this Spark partition with one plain assigned consumer."""
    from confluent_kafka import Consumer

    consumer = Consumer(dict(conf))
    try:
        for rng in ranges:
            yield _read_range(consumer, rng)
    finally:
        consumer.close()
