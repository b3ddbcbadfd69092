"""The last records of a topic, for a pipeline preview: read by a plain assigned consumer of
the connector's own settings (the worker's ``consumer.*``, the connector's
``consumer.override.*``) that joins no group and commits nothing, within the caller's
deadline (``connect_grpc.kernel.deadline``)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.api import SinkRecord
from connect_grpc.kernel import deadline
from connect_grpc.kernel.errors import NotFoundError, UnavailableError
from connect_grpc.kernel.kafka_clients import with_client_log
from connect_grpc.runtime.client_settings import reader_conf
from connect_grpc.runtime.partition_ends import partition_ends
from connect_grpc.runtime.range_reader import sink_record_builder

#: Seconds a caller is told to wait before it asks again when Kafka did not answer.
RETRY_AFTER_S = 1.0
#: The most records one fetch returns.
BATCH = 500


def read_topic_tail(
    worker: WorkerConfig, connector_config: Mapping[str, str], topic: str, last: int
) -> list[SinkRecord]:
    """The ``last`` most recent records of ``topic`` over all its partitions (by timestamp,
    then partition and offset), oldest first.

    Raises:
        NotFoundError: the topic does not exist.
        UnavailableError: Kafka did not answer before the caller's deadline (nothing read
            is answered: retry, with a longer deadline).
    """
    name = connector_config.get("name", "")
    conf = {**reader_conf(worker, connector_config, name), "client.id": f"connect-{name}-preview"}
    until = time.monotonic() + deadline.remaining()
    consumer = Consumer(with_client_log(conf, "preview-reader"))
    try:
        ranges = _partition_ranges(consumer, topic, last, until)
        records = _read(consumer, topic, ranges, until)
    except KafkaException as exc:
        raise _unavailable(topic, str(exc)) from None
    finally:
        consumer.close()
    records.sort(key=lambda r: (r.timestamp_ms or -1, r.kafka_partition, r.kafka_offset))
    return records[-last:]


def _partition_ranges(
    consumer: Consumer, topic: str, last: int, until: float
) -> dict[int, tuple[int, int]]:
    """Each non-empty partition's range of its last ``last`` records: [start, end)."""
    metadata = consumer.list_topics(topic, timeout=_left(topic, until))
    found = metadata.topics.get(topic)
    if found is None or found.error is not None:
        code = None if found is None or found.error is None else found.error.code()
        if code in (None, KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
            raise NotFoundError(f"from_topic.topic: topic {topic} does not exist")
        raise _unavailable(topic, str(found.error))
    ends = partition_ends(
        consumer, [(topic, partition) for partition in sorted(found.partitions)],
        _left(topic, until),
    )
    return {
        partition: (max(low, high - last), high)
        for (_, partition), (low, high) in ends.items()
        if high > low
    }


def _read(
    consumer: Consumer, topic: str, ranges: dict[int, tuple[int, int]], until: float
) -> list[SinkRecord]:
    consumer.assign([TopicPartition(topic, p, start) for p, (start, _) in ranges.items()])
    builders = {partition: sink_record_builder(topic, partition) for partition in ranges}
    pending = set(ranges)
    records: list[SinkRecord] = []
    while pending:
        for message in consumer.consume(BATCH, timeout=min(_left(topic, until), 0.5)):
            error = message.error()
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                raise _unavailable(topic, error.str())
            partition, offset = message.partition(), message.offset()
            if partition not in pending or partition is None or offset is None:
                continue
            end = ranges[partition][1]
            if error is None:
                records.append(builders[partition](message))
                offset += 1
            # the end reached; an end of partition event counts only from the range's end
            # on (its last offsets may be gone: compaction, transaction markers)
            if offset >= end:
                pending.discard(partition)
    return records


def _left(topic: str, until: float) -> float:
    """The seconds still allowed; UnavailableError once they ran out (the caller's deadline
    less a margin to answer in, when it gave one)."""
    left = until - time.monotonic()
    if left <= 0:
        raise _unavailable(topic, "no answer before the call's deadline")
    return left


def _unavailable(topic: str, why: str) -> UnavailableError:
    return UnavailableError(
        f"from_topic: could not read the last records of {topic} from Kafka ({why}); "
        "retry, with a longer deadline if this persists",
        RETRY_AFTER_S,
    )
