"""A delivery failure's context: the record's topic and partition, and for a keyless record
the broker refused as INVALID_RECORD, why (a compacted topic needs keys)."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaError

from connect_grpc.runtime.produce_refusal import delivery_context


@dataclass
class Delivered:
    """What a delivery report's message answers (topic, partition, key)."""

    topic_name: str
    partition_id: int
    key_bytes: bytes | None

    def topic(self) -> str:
        return self.topic_name

    def partition(self) -> int:
        return self.partition_id

    def key(self) -> bytes | None:
        return self.key_bytes


def test_a_keyless_invalid_record_says_the_topic_needs_keys() -> None:
    context = delivery_context(KafkaError(KafkaError.INVALID_RECORD), Delivered("state", 0, None))
    assert context.startswith("state[0]: the record has no key, and topic state refused it")
    assert "only when the topic is compacted (cleanup.policy=compact)" in context


def test_other_failures_keep_their_plain_context() -> None:
    keyed = Delivered("state", 1, b"k")
    assert delivery_context(KafkaError(KafkaError.INVALID_RECORD), keyed) == "state[1]"
    too_large = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)
    assert delivery_context(too_large, Delivered("t", 0, None)) == "t[0]"
