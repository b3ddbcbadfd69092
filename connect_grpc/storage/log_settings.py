"""How a KafkaBasedLog's clients are configured: the settings every store's log shares.

The producer writes with ``acks=all``, idempotence and Kafka Connect's (Java) partitioner,
so a key lands on the partition a Java worker would write it to; the consumer is assigned,
never subscribed, and reads ``read_committed`` from the beginning. Kept apart from the log
(:mod:`.kafka_log`) because these are the compatibility decisions of the stored format,
and from the topic's setup (:mod:`.log_topic`), which shares the timeouts.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

#: A librdkafka client configuration (``bootstrap.servers`` and security settings).
ClientConfig = Mapping[str, str | int | float | bool]

DEFAULT_TIMEOUT_S = 30.0
METADATA_RETRY_S = 0.1


def log_producer_config(
    client_config: ClientConfig, timeout: float
) -> dict[str, str | int | float | bool]:
    """The log's producer: synchronous, idempotent writes acknowledged by every in-sync
    replica, given up after ``timeout`` seconds."""
    delivery_ms = int(timeout * 1000)
    return {
        **client_config,
        "acks": "all",
        "enable.idempotence": True,
        # Kafka Connect's (Java) default partitioner: murmur2 of the key bytes, so our
        # records land on the same partition as a Java worker's for the same key.
        "partitioner": "murmur2_random",
        "linger.ms": 0,
        "delivery.timeout.ms": delivery_ms,
        "request.timeout.ms": min(delivery_ms, 30_000),
    }


def log_consumer_config(
    client_config: ClientConfig, topic: str
) -> dict[str, str | int | float | bool]:
    """The log's consumer of ``topic``: committed records only, from the beginning."""
    # Assigned, never subscribed: the group id is required by the client but no group
    # is joined and nothing is committed.
    return {
        **client_config,
        "group.id": f"connect-grpc-log-{topic}-{uuid.uuid4().hex}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
    }
