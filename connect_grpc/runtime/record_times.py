"""Rewind a sink by time: each partition's offset of its first record at or after a time
(the consumer's ``offsets_for_times``), or its end offset when it has none.

A plain consumer per request, with the sink's own consumer settings (worker ``consumer.*``,
then the connector's ``consumer.override.*``), so that it sees the cluster as the sink's
tasks do: same security settings, same isolation level (a read_committed end is the last
stable offset). It joins no group and commits nothing. Every wait is bounded by the
caller's deadline (``deadline.remaining()``); Kafka not answering in time is
UnavailableError with a retry hint.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog
from confluent_kafka import KafkaException, TopicPartition

from connect_grpc.kernel import deadline
from connect_grpc.kernel.errors import (
    ConnectError,
    FailedPreconditionError,
    PreconditionViolation,
    UnavailableError,
)
from connect_grpc.kernel.kafka_clients import is_retriable, kafka_error_of, with_client_log

log = structlog.get_logger(__name__)

#: (topic, partition).
TopicPartitionKey = tuple[str, int]
#: Retry hint when Kafka did not answer in time.
RETRY_AFTER_S = 2.0
#: Kafka's own topics, which a pattern subscription does not consume.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


@dataclass(frozen=True, slots=True)
class ResolvedOffset:
    """Where a partition was set for a time."""

    offset: int
    #: The partition has no record at or after the time: ``offset`` is its end offset.
    at_end: bool


class TimeLookupConsumer(Protocol):
    """What the lookups need of a confluent-kafka Consumer (a fake in unit tests)."""

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any: ...

    def offsets_for_times(self, partitions: list[Any], timeout: float = -1) -> list[Any]: ...

    def get_watermark_offsets(
        self, partition: Any, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int] | None: ...

    def close(self) -> None: ...


def _new_consumer(conf: Mapping[str, str]) -> TimeLookupConsumer:
    from confluent_kafka import Consumer

    consumer: TimeLookupConsumer = Consumer(with_client_log(conf, conf.get("client.id", "lookup")))
    return consumer


def topics_of(subscription: list[str], cluster_topics: Mapping[str, int]) -> dict[str, int]:
    """The sink's topics with their partition counts: the listed ones, or, for a pattern
    subscription (``^...``, as the sink's consumer subscribes), every non-internal cluster
    topic it matches from the start of the name (librdkafka's pattern match).

    Raises FailedPreconditionError for a listed topic the cluster does not have, or a
    pattern that matches no topic: there is no partition to rewind.
    """
    if len(subscription) == 1 and subscription[0].startswith("^"):
        pattern = re.compile(subscription[0])
        matched = {
            topic: count for topic, count in sorted(cluster_topics.items())
            if topic not in INTERNAL_TOPICS and pattern.match(topic)
        }
        if not matched:
            raise FailedPreconditionError(
                f"No topic of the Kafka cluster matches the connector's topics.regex "
                f"(subscribed as {subscription[0]}): there is no partition to rewind",
                [PreconditionViolation("TOPIC", subscription[0], "matches no topic")],
            )
        return matched
    missing = [topic for topic in subscription if topic not in cluster_topics]
    if missing:
        raise FailedPreconditionError(
            f"Topic(s) {', '.join(missing)} of the connector's topics do not exist on the Kafka "
            "cluster: their partitions cannot be rewound (create them, or give record times "
            "per partition for the others)",
            [PreconditionViolation("TOPIC", topic, "does not exist") for topic in missing],
        )
    return {topic: cluster_topics[topic] for topic in subscription}


def _unavailable(what: str, why: str) -> UnavailableError:
    return UnavailableError(f"Could not {what}: {why}", retry_after_seconds=RETRY_AFTER_S)


def _budget(what: str) -> float:
    budget = deadline.remaining()
    if budget <= 0:
        raise _unavailable(what, "the call's deadline leaves no time to ask Kafka")
    return budget


def _failure(what: str, exc: BaseException) -> ConnectError:
    error = kafka_error_of(exc)
    if error is None or is_retriable(error):
        return _unavailable(what, f"Kafka is unreachable or did not answer in time ({exc})")
    return ConnectError(f"Failed to {what}: {error.str()}")


class RecordTimes:
    """Looks up sink partitions' offsets by record time.

    Args:
        consumer_conf: the lookup consumer's settings for a connector, given its name and
            config (``client_settings.lookup_conf``).
        new_consumer: builds the consumer (a fake in unit tests).
    """

    def __init__(
        self,
        consumer_conf: Callable[[str, Mapping[str, str]], Mapping[str, str]],
        new_consumer: Callable[[Mapping[str, str]], TimeLookupConsumer] = _new_consumer,
    ) -> None:
        self._consumer_conf = consumer_conf
        self._new_consumer = new_consumer

    def partitions(
        self, name: str, config: Mapping[str, str], subscription: list[str]
    ) -> list[TopicPartitionKey]:
        """Every partition of the sink's topics (``subscription`` as the sink subscribes)."""
        with self._consumer(name, config) as consumer:
            counts = topics_of(subscription, self._cluster_topics(consumer))
        return [(topic, p) for topic, count in counts.items() for p in range(count)]

    def resolve(
        self, name: str, config: Mapping[str, str], times: Mapping[TopicPartitionKey, int]
    ) -> dict[TopicPartitionKey, ResolvedOffset]:
        """Each partition's offset of its first record whose timestamp is at or after the
        given time (milliseconds since the epoch), or its end offset when it has none."""
        if not times:
            return {}
        with self._consumer(name, config) as consumer:
            found = self._offsets_for_times(consumer, times)
            return {
                tp: ResolvedOffset(offset, False) if offset >= 0
                else ResolvedOffset(self._end_offset(consumer, tp), True)
                for tp, offset in sorted(found.items())
            }

    @contextlib.contextmanager
    def _consumer(self, name: str, config: Mapping[str, str]) -> Iterator[TimeLookupConsumer]:
        consumer = self._new_consumer(self._consumer_conf(name, config))
        try:
            yield consumer
        finally:
            consumer.close()

    @staticmethod
    def _cluster_topics(consumer: TimeLookupConsumer) -> dict[str, int]:
        what = "read the Kafka cluster's topics"
        try:
            metadata = consumer.list_topics(timeout=_budget(what))
        except KafkaException as exc:
            raise _failure(what, exc) from None
        return {
            topic: len(found.partitions)
            for topic, found in metadata.topics.items()
            if found.error is None
        }

    @staticmethod
    def _offsets_for_times(
        consumer: TimeLookupConsumer, times: Mapping[TopicPartitionKey, int]
    ) -> dict[TopicPartitionKey, int]:
        what = "look up the offsets for the record times"
        request = [TopicPartition(t, p, ms) for (t, p), ms in sorted(times.items())]
        try:
            answer = consumer.offsets_for_times(request, timeout=_budget(what))
        except KafkaException as exc:
            raise _failure(what, exc) from None
        found: dict[TopicPartitionKey, int] = {}
        for tp in answer:
            if tp.error is not None:
                raise _failure(f"{what} of {tp.topic}-{tp.partition}", KafkaException(tp.error))
            found[(tp.topic, tp.partition)] = tp.offset
        return found

    @staticmethod
    def _end_offset(consumer: TimeLookupConsumer, tp: TopicPartitionKey) -> int:
        what = f"read the end offset of {tp[0]}-{tp[1]}"
        try:
            marks = consumer.get_watermark_offsets(
                TopicPartition(*tp), timeout=_budget(what), cached=False
            )
        except KafkaException as exc:
            raise _failure(what, exc) from None
        if marks is None:
            raise _unavailable(what, "Kafka did not answer in time")
        return marks[1]
