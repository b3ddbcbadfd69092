"""What a source task says about a record the broker refused, in Connect's terms.

librdkafka reports the broker's refusal of a record with no key in a compacted topic as
``INVALID_RECORD`` "Broker failed to validate record", without the broker's own reason
("Compacted topic cannot accept message without key"). FileStreamSource writes keyless
records, so a user who points it at a compacted topic (``topic.creation.*.cleanup.policy=
compact``, as the topic creation example of docs/connectors.md does) saw only that text in
the task's failure or skip. Of the broker's checks, only compaction refuses a record for
having no key with INVALID_RECORD, so the context of such a failure says so, and what to do.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError

__all__ = ["delivery_context"]


def delivery_context(error: KafkaError, message: Any) -> str:
    """The context a failed delivery's message starts with: ``topic[partition]``, then, for
    a record without a key refused as INVALID_RECORD, why (the topic is compacted)."""
    topic = message.topic()
    where = f"{topic}[{message.partition()}]"
    if error.code() != KafkaError.INVALID_RECORD or message.key() is not None:
        return where
    return (
        f"{where}: the record has no key, and topic {topic} refused it: Kafka refuses a "
        "record without a key only when the topic is compacted (cleanup.policy=compact), "
        "and a compacted topic needs a key in every record. Give the records keys (a "
        "connector that sets them, or the ValueToKey transformation), or write to a topic "
        "with cleanup.policy=delete"
    )
