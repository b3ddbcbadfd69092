"""Reading what transactional producers committed to a partition, fast enough to be polled
while a topic grows to hundreds of thousands of records (the exactly-once tests).

``helpers.read_committed`` polls one message at a time with librdkafka's default fetch size,
which is what costs when a test reads a long topic again and again; here the records come
in large fetches and batches (``consume``), a caller that waits for a count looks at the last
stable offset before it reads, and the reader stops at a given last stable offset, so that
a caller who watched that offset reads exactly what it watched.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from connect_grpc.testing.cluster import wait_until

__all__ = ["committed_values", "has_committed", "settled_values", "stable_offset"]

#: What listing offsets answers while a topic is being created (auto-created by its first
#: producer): no such partition, or no leader for it yet.
_NOT_THERE_YET = (KafkaError._NOENT, KafkaError.UNKNOWN_TOPIC_OR_PART)

#: Records a ``consume`` call hands over at most.
_BATCH = 10_000


def stable_offset(bootstrap: str, topic: str, partition: int = 0) -> int:
    """The partition's last stable offset (0 while the topic does not exist yet): every
    record below it is final, committed or aborted, so what a read_committed reader sees
    below it never changes."""
    tp = TopicPartition(topic, partition)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_offsets(
        {tp: OffsetSpec.latest()}, isolation_level=IsolationLevel.READ_COMMITTED
    )
    try:
        return int(listed[tp].result(30).offset)
    except KafkaException as exc:
        if exc.args[0].code() not in _NOT_THERE_YET:
            raise
        return 0


def committed_values(
    bootstrap: str,
    topic: str,
    partition: int = 0,
    until: int | None = None,
    timeout: float = 60.0,
) -> list[bytes]:
    """Every value of one partition a read_committed consumer sees below ``until`` (a last
    stable offset; None: the partition's when called), as ``helpers.read_committed``."""
    stable = stable_offset(bootstrap, topic, partition) if until is None else until
    if stable == 0:
        return []
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            # a fetch of up to 16 MB rather than librdkafka's 1 MB: the records are a few
            # bytes each, and one round trip per 1 MB made a 300 000-record read 2-3x slower
            "max.partition.fetch.bytes": 16 << 20,
            "fetch.max.bytes": 64 << 20,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while consumer.position([TopicPartition(topic, partition)])[0].offset < stable:
            assert time.monotonic() < deadline, f"{topic} not read up to {stable} in {timeout} s"
            for msg in consumer.consume(num_messages=_BATCH, timeout=0.5):
                offset, value = msg.offset(), msg.value()
                if not msg.error() and offset is not None and offset < stable:
                    values.append(value or b"")  # a null value fails int() like an empty one
        return values
    finally:
        consumer.close()


def has_committed(bootstrap: str, topic: str, count: int, partition: int = 0) -> bool:
    """Whether the partition holds at least ``count`` committed values. Each value sits
    at an offset below the last stable offset, so while that offset is below ``count``
    the answer is no without reading: a caller polling a long topic reads it only once it
    may be there."""
    if stable_offset(bootstrap, topic, partition) < count:
        return False
    return len(committed_values(bootstrap, topic, partition)) >= count


def settled_values(
    bootstrap: str, topic: str, parse: Callable[[bytes], int] = int, quiet_s: float = 1.0
) -> list[int]:
    """The partition's committed values once they stopped changing for ``quiet_s``.

    The values below the last stable offset are final, so they change only when that
    offset moves: watching the offset (one cheap call a look) is the same check as
    comparing every value read, and a move that adds no value (an aborted transaction's
    marker) only makes it wait longer. The values returned are those below the offset that
    stood still."""
    seen = [stable_offset(bootstrap, topic)]

    def unchanged() -> bool:
        time.sleep(quiet_s)
        seen.append(stable_offset(bootstrap, topic))
        return seen[-1] == seen[-2]

    wait_until(unchanged, timeout=60)
    return [parse(value) for value in committed_values(bootstrap, topic, until=seen[-1])]
