"""Reading what transactional producers committed to a partition, fast enough to be polled
while a topic grows to hundreds of thousands of records (the exactly-once tests).

The reads are ``helpers.read_committed``'s, with fetches of 16 MB rather than librdkafka's
1 MB (a test here reads a long topic again and again); a caller that waits for a count
looks at the last stable offset before it reads, and a reader given a last stable offset
stops there, so that a caller who watched that offset reads exactly what it watched.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from connect_grpc.testing.cluster import wait_until
from tests.integration.helpers import read_committed, stable_offset

__all__ = ["committed_values", "has_committed", "settled_values", "stable_offset"]

#: One fetch of the partition: the records are a few bytes each.
_FETCH_BYTES = 16 << 20


def committed_values(
    bootstrap: str,
    topic: str,
    partition: int = 0,
    until: int | None = None,
    timeout: float = 60.0,
) -> list[bytes]:
    """Every value of one partition a read_committed consumer sees below ``until`` (a last
    stable offset; None: the partition's when called)."""
    return read_committed(
        bootstrap, topic, partition, timeout, until=until, fetch_bytes=_FETCH_BYTES
    )


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
