"""The topic under a KafkaBasedLog: created when missing, checked, described.

:func:`ensure_topic` creates a store's topic (compacted when it holds state) or checks that
an existing one is compacted; :func:`describe_topic_config` reads one of its configs and
:func:`_partition_count` waits for its partitions' leaders after a create. These are admin
calls, made once when a log starts (and by the cluster layer for its own topics), apart
from the log's reading and writing (:mod:`.kafka_log`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import structlog
from confluent_kafka import KafkaError, KafkaException

# Public, but re-exported without __all__ in confluent-kafka 2.16's typed package.
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from connect_grpc.kernel.errors import ConnectError, UnavailableError
from connect_grpc.kernel.kafka_clients import is_retriable, kafka_error_of
from connect_grpc.storage.log_settings import DEFAULT_TIMEOUT_S, METADATA_RETRY_S

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """How an internal topic is created when it is missing."""

    name: str
    partitions: int
    replication_factor: int
    compact: bool = True


def ensure_topic(admin: AdminClient, spec: TopicSpec, timeout: float = DEFAULT_TIMEOUT_S) -> bool:
    """Creates the topic unless it exists; returns whether it was created.

    An existing topic is used as it is, except that a topic expected to be compacted must
    have ``cleanup.policy=compact`` (a ``delete`` policy would lose state): ConnectError.
    """
    config = {"cleanup.policy": "compact"} if spec.compact else {}
    topic = NewTopic(
        spec.name,
        num_partitions=spec.partitions,
        replication_factor=spec.replication_factor,
        config=config,
    )
    future = admin.create_topics([topic], operation_timeout=timeout, request_timeout=timeout)
    try:
        future[spec.name].result(timeout=timeout)
    except TimeoutError as exc:
        raise UnavailableError(f"cannot create topic {spec.name}: no answer in {timeout}s") from exc
    except KafkaException as exc:
        if _error_code(exc) != KafkaError.TOPIC_ALREADY_EXISTS:
            raise UnavailableError(f"cannot create topic {spec.name}: {exc}") from exc
        if spec.compact:
            _verify_compacted(admin, spec.name, timeout)
        return False
    log.info("topic_created", topic=spec.name, partitions=spec.partitions, compact=spec.compact)
    return True


def _verify_compacted(admin: AdminClient, topic: str, timeout: float) -> None:
    """Raises ConnectError unless the topic is compacted. A topic another worker has just
    created may not be known to every broker yet (UNKNOWN_TOPIC_OR_PART): asked again."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            policy = describe_topic_config(admin, topic, "cleanup.policy", timeout)
            break
        except KafkaException as exc:
            if not _retriable(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(METADATA_RETRY_S)
    if policy is None or {p.strip() for p in policy.split(",")} != {"compact"}:
        raise ConnectError(
            f"topic {topic} must have cleanup.policy=compact to hold worker state, "
            f"but has cleanup.policy={policy}"
        )


def describe_topic_config(
    admin: AdminClient, topic: str, name: str, timeout: float = DEFAULT_TIMEOUT_S
) -> str | None:
    """The current value of one config of a topic (None when unset)."""
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource], request_timeout=timeout)[resource].result(
        timeout=timeout
    )
    entry = entries.get(name)
    if entry is None or entry.value is None:
        return None
    return str(entry.value)


def _error_code(exc: KafkaException) -> int | None:
    error = exc.args[0] if exc.args else None
    return error.code() if isinstance(error, KafkaError) else None


def _retriable(exc: KafkaException) -> bool:
    """Whether asking again shortly may succeed, e.g. leadership settling after a create or
    a move (librdkafka does not flag these as retriable in admin results): the worker-wide
    classification of ``kafka_clients``."""
    error = kafka_error_of(exc)
    return error is not None and is_retriable(error)


def _partition_count(admin: AdminClient, topic: str, timeout: float) -> int:
    """The topic's partition count, waiting for its metadata to appear after a create."""
    deadline = time.monotonic() + timeout
    while True:
        metadata = admin.list_topics(topic=topic, timeout=timeout).topics.get(topic)
        if metadata is not None and metadata.error is None and metadata.partitions:
            leaders = [p.leader for p in metadata.partitions.values()]
            if all(leader >= 0 for leader in leaders):
                return len(leaders)
        if time.monotonic() >= deadline:
            raise UnavailableError(f"topic {topic} has no leader for all partitions in {timeout}s")
        time.sleep(METADATA_RETRY_S)
