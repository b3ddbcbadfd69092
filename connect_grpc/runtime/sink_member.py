"""A sink task's group member, on the driver: it owns the task's partitions, tracks each
one's position and commits what the task put and flushed; it never hands records to the
task (readers on the driver or in an executor read each batch's ranges).

Its partitions are paused as soon as they are assigned, and it is polled to keep its
membership and run rebalance callbacks. An idle task waits in its fetch: the partitions read
to their end are resumed from there, and the first record that arrives wakes the task, as
Kafka Connect's sink task waits in its consumer's poll (decision 0127). A woken task's next
batch moves what that fetch reached without asking the partitions' ends (decision 0132).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from connect_grpc.kernel.kafka_clients import leave_group_and_close, with_client_log
from connect_grpc.runtime.batching import OffsetRange
from connect_grpc.runtime.partition_ends import partition_ends
from connect_grpc.runtime.sink_loop import TopicPartitionKey

__all__ = ["BROKER_TIMEOUT_S", "SinkMember", "incremental_rebalancing"]

log = structlog.get_logger(__name__)

#: Seconds the driver waits for a broker answer (committed offsets, watermarks).
BROKER_TIMEOUT_S = 5.0
#: The most records a wake takes off the member's queue to learn how far its fetch reached
#: (one fetch response's worth at most, ``queued.min.messages`` 1); any left are read by a
#: later batch all the same.
WAKE_TAKE_MAX = 100_000


def incremental_rebalancing(conf: Mapping[str, str]) -> bool:
    """Whether rebalance callbacks get only the changed partitions (cooperative, KIP-848)."""
    strategy = conf.get("partition.assignment.strategy", "")
    return "cooperative" in strategy or conf.get("group.protocol", "classic") == "consumer"


class SinkMember:
    """The group member: tracks its assignment and each partition's position (the next offset
    to read: the committed offset when assigned, then the end of each batch put)."""

    def __init__(
        self,
        conf: Mapping[str, str],
        topics: list[str],
        on_revoked: Callable[[list[TopicPartitionKey]], None] = lambda partitions: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``on_revoked`` is told of the partitions the member lost (revoked or lost)."""
        from confluent_kafka import Consumer

        self._on_revoked = on_revoked
        self._clock = clock
        #: Since when the member has been seen without a member id, counted from its last
        #: rebalance event (None: it has one, or no turn has looked since that event).
        self._outside_since: float | None = None
        self._incremental = incremental_rebalancing(conf)
        self.consumer: Any = Consumer(with_client_log(conf, conf.get("client.id", "member")))
        self.assigned: set[TopicPartitionKey] = set()
        self.positions: dict[TopicPartitionKey, int] = {}
        #: Positions put and flushed but not committed yet (the commit failed).
        self.uncommitted: dict[TopicPartitionKey, int] = {}
        #: The partitions the last ``pending_ranges`` found read to their end, and from where
        #: an idle wait fetches them (``wait_for_records``).
        self._watch_from: dict[TopicPartitionKey, int] = {}
        #: The partitions resumed for an idle wait (the others stay paused).
        self._watched: set[TopicPartitionKey] = set()
        #: How far the records a wake fetched reach, by partition: the next batch moves
        #: them without asking the ends (``_woken_by``).
        self._woken_ends: dict[TopicPartitionKey, int] = {}
        self.consumer.subscribe(
            topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke
        )

    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        self._outside_since = None
        if self._incremental:
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)
        if partitions:
            consumer.pause(partitions)
        for tp in partitions:
            self.assigned.add((tp.topic, tp.partition))
            self._forget((tp.topic, tp.partition))

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self._outside_since = None
        revoked = [(tp.topic, tp.partition) for tp in partitions]
        for key in revoked:
            self.assigned.discard(key)
            self._forget(key)
        if revoked:
            self._on_revoked(revoked)

    def _forget(self, key: TopicPartitionKey) -> None:
        self.positions.pop(key, None)
        self.uncommitted.pop(key, None)
        self._watch_from.pop(key, None)
        self._woken_ends.pop(key, None)
        # assigned again (paused) or gone: no longer fetched for a wait
        self._watched.discard(key)

    def poll(self) -> None:
        """Serves callbacks and heartbeats; any record (fetched before the pause, or for an
        idle wait) is dropped: a batch reads it."""
        self._took(self.consumer.poll(0))

    def _took(self, msg: Any) -> bool:
        """What a poll answered: True for a record (the wait is over: the partitions are
        paused again), False for nothing or an error; a fatal error is raised."""
        from confluent_kafka import KafkaException

        if msg is None:
            return False
        error = msg.error()
        if error is None:
            self._woken_by(msg)
            return True
        if error.fatal():
            raise KafkaException(error)
        return False

    def _woken_by(self, msg: Any) -> None:
        """A record arrived: notes how far the records fetched past the watched ends reach
        (this one and those its fetch brought along, taken before the pause, after which
        librdkafka drops them), then pauses the partitions again.

        The next batch moves them without a ListOffsets: the member's next fetch, a long
        poll, may have left before the pause (the record was taken off the queue before
        librdkafka's fetcher looked at it, so ``queued.min.messages`` did not hold that
        fetch back), and the broker would answer the ListOffsets only after it, up to
        ``fetch.wait.max.ms`` (500 ms) later."""
        watched = self._watched
        for record in [msg, *self.consumer.consume(WAKE_TAKE_MAX, 0)]:
            if record.error() is not None:
                continue
            key = (record.topic(), record.partition())
            start = self._watch_from.get(key)
            if key in watched and start is not None and record.offset() >= start:
                self._woken_ends[key] = max(self._woken_ends.get(key, start), record.offset() + 1)
        self.unwatch()

    def wait_for_records(self, timeout: float) -> bool:
        """Waits up to ``timeout`` in the consumer's fetch (a broker's long poll, no CPU
        spent meanwhile) for a record past the end of any partition the last
        ``pending_ranges`` found read to its end, serving the callbacks as ``poll`` does.
        True when one arrived (it is dropped: the next batch reads it); False at once when
        there is no such partition, else after the timeout or an error."""
        if not self._watch():
            return False
        return self._took(self.consumer.poll(timeout))

    def _watch(self) -> bool:
        """Has the partitions read to their end fetched from their end: sought there and
        resumed, unless they already are (a fetch in flight is not restarted)."""
        from confluent_kafka import TopicPartition

        wanted = {k: o for k, o in self._watch_from.items() if k in self.assigned}
        if not wanted:
            return False
        if self._watched == wanted.keys():
            return True
        self.unwatch()
        partitions = [TopicPartition(t, p, o) for (t, p), o in sorted(wanted.items())]
        # resumed, then sought: sought while paused, librdkafka 2.16 started the fetch
        # only about a second later once a ListOffsets had been asked meanwhile
        self.consumer.resume(partitions)
        for tp in partitions:
            self.consumer.seek(tp)
        self._watched = set(wanted)
        return True

    def unwatch(self) -> None:
        """Pauses the partitions resumed for a wait: only batches read records."""
        from confluent_kafka import TopicPartition

        watched, self._watched = self._watched & self.assigned, set()
        if watched:
            self.consumer.pause([TopicPartition(t, p) for t, p in sorted(watched)])

    def pending_ranges(self) -> list[OffsetRange]:
        """[position (or earliest), high watermark) of each assigned partition; right after
        a wake, only the woken partitions' ranges, up to the records the wake fetched,
        without asking the ends (``_woken_by``)."""
        owned = sorted(self.assigned)
        if not owned:
            return []
        woken = self._woken_ranges()
        if woken:
            return woken
        self._load_committed([p for p in owned if p not in self.positions])
        ends = partition_ends(self.consumer, owned, BROKER_TIMEOUT_S)
        ranges: list[OffsetRange] = []
        self._watch_from = {}
        for key in owned:
            low, high = ends[key]
            start = max(self.positions.get(key, low), low)
            ranges.append(OffsetRange(key[0], key[1], start, high))
            if start == high:
                self._watch_from[key] = high
        return ranges

    def _woken_ranges(self) -> list[OffsetRange]:
        """[where it was watched from, past the last record a wake fetched) of each woken
        partition still assigned; each wake's ranges are taken once."""
        ends, self._woken_ends = self._woken_ends, {}
        ranges = [
            OffsetRange(key[0], key[1], self._watch_from[key], end)
            for key, end in sorted(ends.items())
            if key in self.assigned and key in self._watch_from
        ]
        if ranges:
            self._watch_from = {}
        return ranges

    def _load_committed(self, partitions: list[TopicPartitionKey]) -> None:
        from confluent_kafka import TopicPartition

        if not partitions:
            return
        answer = self.consumer.committed(
            [TopicPartition(t, p) for t, p in partitions], timeout=BROKER_TIMEOUT_S
        )
        for tp in answer:
            if tp.offset >= 0:
                self.positions[(tp.topic, tp.partition)] = tp.offset

    def advance(self, offsets: Mapping[TopicPartitionKey, int]) -> None:
        """Moves past a batch that was put and flushed; its offsets are to be committed."""
        owned = {key: offset for key, offset in offsets.items() if key in self.assigned}
        self.positions.update(owned)
        self.uncommitted.update(owned)

    def commit(self) -> bool:
        """Commits the uncommitted positions synchronously; raises (keeping them) on failure.
        Returns whether there was anything to commit."""
        from confluent_kafka import TopicPartition

        pending = {k: o for k, o in self.uncommitted.items() if k in self.assigned}
        if not pending:
            self.uncommitted.clear()
            return False
        tps = [TopicPartition(t, p, o) for (t, p), o in sorted(pending.items())]
        self.consumer.commit(offsets=tps, asynchronous=False)
        for key, offset in pending.items():
            if self.uncommitted.get(key) == offset:
                del self.uncommitted[key]
        return True

    def outside_group_for(self) -> float:
        """Seconds since the member was first seen without a member id, i.e. not joined to
        its group, after its last rebalance event (0 while it has one; a member with no
        partitions may still have one). A look before an earlier join does not count."""
        if self.consumer.memberid():
            self._outside_since = None
            return 0.0
        now = self._clock()
        if self._outside_since is None:
            self._outside_since = now
        return now - self._outside_since

    def close(self) -> None:
        leave_group_and_close(self.consumer)

    def retire(self) -> None:
        """Lets go of a member that is replaced: its callbacks tell nobody any more, and it
        is closed on a thread of its own, as a client stuck in its group may take long to
        close and the task's loop must not wait for it."""
        self._on_revoked = lambda partitions: None
        self.assigned.clear()
        closer = threading.Thread(target=self._close_quietly, name="sink-member-close", daemon=True)
        closer.start()

    def _close_quietly(self) -> None:
        try:
            leave_group_and_close(self.consumer)
        except Exception as exc:
            log.warning("retired_sink_member_not_closed", error=repr(exc))
