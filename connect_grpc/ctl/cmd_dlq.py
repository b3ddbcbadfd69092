"""``dlq NAME``: the records of a connector's dead-letter queue, with the
``__connect.errors.*`` headers that say where and why each failed.

The topic is the connector's ``errors.deadletterqueue.topic.name`` (read over gRPC). The
records are read straight from Kafka by a plain consumer: partitions assigned, no group
joined and no offset committed, so reading changes nothing. The worker's API does not say
which brokers it uses, so the brokers are ``--bootstrap-server``, else the connector's
``producer.override.bootstrap.servers`` (where its dead-letter producer writes, as in Kafka
Connect), else the local development broker's address.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import click

from connect_grpc.ctl.session import (
    OUTPUTS,
    Session,
    complete_connector_names,
    output_option,
    pass_session,
)
from connect_grpc.kafka.ports import DEFAULT_BROKER_PORT
from connect_grpc.kernel.errors import FailedPreconditionError, UnavailableError
from connect_grpc.pipeline.dead_letter_headers import HEADER_PREFIX

DLQ_TOPIC_KEY = "errors.deadletterqueue.topic.name"
PRODUCER_BOOTSTRAP_KEY = "producer.override.bootstrap.servers"
DEFAULT_BOOTSTRAP = f"localhost:{DEFAULT_BROKER_PORT}"
#: The longest wait for one record once every partition's end is known.
POLL_SLICE_S = 1.0


@click.command()
@click.argument("name", shell_complete=complete_connector_names)
@click.option("--max", "max_records", type=click.IntRange(min=1), default=20,
              show_default=True, help="Show at most the N most recent records.")
@click.option("--bootstrap-server", "bootstrap", metavar="HOST:PORT[,...]",
              help="The Kafka brokers of the dead-letter queue (default: the connector's "
                   f"{PRODUCER_BOOTSTRAP_KEY}, else {DEFAULT_BOOTSTRAP}).")
@output_option(OUTPUTS)
@pass_session
def dlq(session: Session, name: str, max_records: int, bootstrap: str | None,
        output: str) -> None:
    """Show the records of a connector's dead-letter queue (its
    errors.deadletterqueue.topic.name): topic, partition, offset, time, the
    __connect.errors.* headers and the other headers, key and value as text. Reads
    with a plain consumer that joins no group and commits nothing."""
    config = session.client.get_connector_config(name)
    topic = config.get(DLQ_TOPIC_KEY, "").strip()
    if not topic:
        raise FailedPreconditionError(
            f"connector {name} has no dead-letter queue: {DLQ_TOPIC_KEY} is not set"
        )
    servers = bootstrap or config.get(PRODUCER_BOOTSTRAP_KEY, "").strip() or DEFAULT_BOOTSTRAP
    records = read_last(servers, topic, max_records, session.request_timeout)
    if output in ("json", "yaml"):
        session.output.document({"topic": topic, "records": records}, output)
        return
    if not records:
        session.output.line(f"no records in {topic}")
    for record in records:
        session.output.line(
            f"{record['topic']}[{record['partition']}]@{record['offset']}  {record['time']}"
        )
        for key, value in record["headers"].items():
            session.output.line(f"  {key}: {value}")
        session.output.line(f"  key: {_shown(record['key'])}")
        session.output.line(f"  value: {_shown(record['value'])}")


def _shown(text: str | None) -> str:
    return "(null)" if text is None else text


def read_last(
    bootstrap: str, topic: str, count: int, timeout: float
) -> list[dict[str, Any]]:
    """The ``count`` most recent records of the topic (by partition end offsets, then time),
    oldest first, as documents.

    Raises:
        FailedPreconditionError: the topic does not exist.
        UnavailableError: the brokers did not answer within ``timeout``.
    """
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        # never joined (partitions are assigned) and never committed: librdkafka wants one
        "group.id": f"connect-grpc-ctl-dlq-{uuid.uuid4().hex}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
    })
    try:
        try:
            metadata = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
            if metadata is None or metadata.error is not None:
                raise FailedPreconditionError(
                    f"the dead-letter queue topic {topic} does not exist on {bootstrap} (no "
                    "record has failed yet, or the brokers are others: --bootstrap-server)"
                )
            starts: list[Any] = []
            for partition in sorted(metadata.partitions):
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=timeout
                )
                if high > low:
                    starts.append(TopicPartition(topic, partition, max(low, high - count)))
        except KafkaException as exc:
            raise UnavailableError(
                f"cannot read {topic} from {bootstrap}: {exc.args[0].str()}"
            ) from None
        if not starts:
            return []
        messages = _read_to_end(consumer, starts, timeout)
    finally:
        consumer.close()
    messages.sort(key=lambda m: (m.timestamp()[1], m.partition(), m.offset()))
    return [_document(m) for m in messages[-count:]]


def _read_to_end(consumer: Any, starts: list[Any], timeout: float) -> list[Any]:
    from confluent_kafka import KafkaError

    consumer.assign(starts)
    pending = {tp.partition for tp in starts}
    messages: list[Any] = []
    deadline = time.monotonic() + timeout
    while pending:
        if time.monotonic() > deadline:
            raise UnavailableError(
                f"the end of {starts[0].topic} was not reached within {timeout:g} s "
                "(--request-timeout)"
            )
        message = consumer.poll(POLL_SLICE_S)
        if message is None:
            continue
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                pending.discard(message.partition())
                continue
            raise UnavailableError(f"reading {message.topic()}: {error.str()}")
        messages.append(message)
    return messages


def _document(message: Any) -> dict[str, Any]:
    kind, stamp = message.timestamp()
    when = datetime.fromtimestamp(stamp / 1000, UTC).isoformat(timespec="milliseconds")
    headers = _headers(message.headers() or [])
    return {
        "topic": message.topic(),
        "partition": message.partition(),
        "offset": message.offset(),
        "time": when.replace("+00:00", "Z") if kind else "",
        "headers": headers,
        "key": _text(message.key()),
        "value": _text(message.value()),
    }


def _headers(pairs: list[tuple[str, bytes | None]]) -> Mapping[str, str | None]:
    """The error headers first (in their order), then the others."""
    ordered = sorted(pairs, key=lambda pair: not pair[0].startswith(HEADER_PREFIX))
    return {key: _text(value) for key, value in ordered}


def _text(raw: bytes | None) -> str | None:
    return None if raw is None else raw.decode("utf-8", errors="replace")
