"""Sink tasks: a driver-side group member owns partitions and commits; executors read the
ranges [position, end) with plain assigned consumers; the task puts and flushes them.

The member never hands records to the task: its partitions are paused as soon as they are
assigned, and it is polled only to keep its membership and run rebalance callbacks. It is
created once per task and closed once, when the task stops.

A batch whose read fails (Kafka unreachable, a leader moving) is read again from the same
position; once put and flushed, its records are never read again by this member, even if
the commit fails (the commit is retried before the next batch), so an outage causes no
duplicates short of a rebalance.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Unpack

from connect_grpc.connectors.api import SinkTask
from connect_grpc.domain import TaskId
from connect_grpc.kafka_clients import with_client_log
from connect_grpc.runtime.batching import BatchSizer, OffsetRange, clip_ranges
from connect_grpc.runtime.connector import StatusListener
from connect_grpc.runtime.kafka_io import (
    DriverReader,
    RangeResult,
    member_conf,
    raise_read_failure,
    read_ranges,
    reader_conf,
)
from connect_grpc.runtime.records import to_sink_records
from connect_grpc.runtime.spark import SparkRuntime
from connect_grpc.runtime.task import RunnerOptions, TaskRunner, for_cluster
from connect_grpc.worker_config import WorkerConfig

#: Seconds the driver waits for a broker answer (committed offsets, watermarks).
BROKER_TIMEOUT_S = 5.0

TopicPartitionKey = tuple[str, int]


def subscription(config: Mapping[str, str]) -> list[str]:
    """The topics to subscribe to: ``topics`` (comma list) or ``topics.regex``."""
    topics = [t.strip() for t in config.get("topics", "").split(",") if t.strip()]
    pattern = config.get("topics.regex", "").strip()
    if topics and pattern:
        raise ValueError("set only one of topics and topics.regex")
    if pattern:
        re.compile(pattern)
        return [pattern if pattern.startswith("^") else f"^{pattern}"]
    if not topics:
        raise ValueError("a sink connector needs topics or topics.regex")
    return topics


def incremental_rebalancing(conf: Mapping[str, str]) -> bool:
    """Whether rebalance callbacks get only the changed partitions (cooperative, KIP-848)."""
    strategy = conf.get("partition.assignment.strategy", "")
    return "cooperative" in strategy or conf.get("group.protocol", "classic") == "consumer"


class _SinkTaskContext:
    def __init__(self, task_id: TaskId) -> None:
        self._id = task_id

    @property
    def task_id(self) -> int:
        return self._id.task

    @property
    def connector_name(self) -> str:
        return self._id.connector


class _Member:
    """The group member: tracks its assignment and each partition's position (the next offset
    to read: the committed offset when assigned, then the end of each batch put)."""

    def __init__(self, conf: Mapping[str, str], topics: list[str]) -> None:
        from confluent_kafka import Consumer

        self._incremental = incremental_rebalancing(conf)
        self.consumer: Any = Consumer(with_client_log(conf, conf.get("client.id", "member")))
        self.assigned: set[TopicPartitionKey] = set()
        self.positions: dict[TopicPartitionKey, int] = {}
        #: Positions put and flushed but not committed yet (the commit failed).
        self.uncommitted: dict[TopicPartitionKey, int] = {}
        self.consumer.subscribe(
            topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke
        )

    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
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
        for tp in partitions:
            self.assigned.discard((tp.topic, tp.partition))
            self._forget((tp.topic, tp.partition))

    def _forget(self, key: TopicPartitionKey) -> None:
        self.positions.pop(key, None)
        self.uncommitted.pop(key, None)

    def poll(self) -> None:
        """Serves callbacks and heartbeats; any record (fetched before the pause) is dropped."""
        from confluent_kafka import KafkaException

        msg = self.consumer.poll(0)
        if msg is not None and msg.error() is not None and msg.error().fatal():
            raise KafkaException(msg.error())

    def pending_ranges(self) -> list[OffsetRange]:
        """[position (or earliest), high watermark) of each assigned partition."""
        from confluent_kafka import TopicPartition

        owned = sorted(self.assigned)
        self._load_committed([p for p in owned if p not in self.positions])
        ranges: list[OffsetRange] = []
        for topic, partition in owned:
            low, high = self.consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=BROKER_TIMEOUT_S, cached=False
            )
            start = max(self.positions.get((topic, partition), low), low)
            ranges.append(OffsetRange(topic, partition, start, high))
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

    def commit(self) -> None:
        """Commits the uncommitted positions synchronously; raises (keeping them) on failure."""
        from confluent_kafka import TopicPartition

        pending = {k: o for k, o in self.uncommitted.items() if k in self.assigned}
        if not pending:
            self.uncommitted.clear()
            return
        tps = [TopicPartition(t, p, o) for (t, p), o in sorted(pending.items())]
        self.consumer.commit(offsets=tps, asynchronous=False)
        for key, offset in pending.items():
            if self.uncommitted.get(key) == offset:
                del self.uncommitted[key]

    def close(self) -> None:
        self.consumer.close()


class SinkTaskRunner(TaskRunner):
    """Runs a SinkTask as a loop of plan ranges → read job → put, flush → commit."""

    plugin: SinkTask

    def __init__(
        self,
        task_id: TaskId,
        plugin: SinkTask,
        worker_id: str,
        listener: StatusListener,
        spark: SparkRuntime,
        *,
        worker_config: WorkerConfig,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        **options: Unpack[RunnerOptions],
    ) -> None:
        client_id = f"connect-{task_id.connector}-{task_id.task}"
        self._member_conf = member_conf(
            worker_config, connector_config, task_id.connector, client_id
        )
        options = for_cluster(options, self._member_conf, worker_config)
        super().__init__(task_id, plugin, worker_id, listener, spark, **options)
        self._subscription_config = {**task_config, **connector_config}
        self._sizer = BatchSizer.from_config(connector_config)
        self._reader_conf = reader_conf(worker_config, connector_config, task_id.connector)
        self._local_max = worker_config.local_batch_max_records
        self._driver_reader = DriverReader(self._reader_conf)
        self._member: _Member | None = None

    def prepare(self) -> None:
        self.plugin.initialize(_SinkTaskContext(self.id))
        self._member = _Member(self._member_conf, subscription(self._subscription_config))

    def keep_alive(self) -> None:
        if self._member is not None:
            self._member.poll()

    def run_batch(self) -> bool:
        member = self._member
        if member is None or not member.assigned:
            return False
        member.commit()
        ranges = clip_ranges(member.pending_ranges(), self._sizer.size)
        self.kafka_ok()
        if not ranges:
            self._sizer.observe(0)
            return False
        results = self._read(ranges)
        raise_read_failure(results)
        records = to_sink_records((r.topic, r.partition, r.rows) for r in results)
        offsets = {(r.topic, r.partition): r.next_offset for r in results}
        progressed = any(offsets[(r.topic, r.partition)] > r.start for r in ranges)
        self.plugin.put(records)
        self.plugin.flush(offsets)
        member.advance(offsets)
        self._sizer.observe(len(records))
        self.log.debug("batch_consumed", records=len(records), partitions=len(ranges))
        member.commit()
        return progressed

    def _read(self, ranges: list[OffsetRange]) -> list[RangeResult]:
        """Reads the ranges: on the driver when they are too small to pay for a Spark job,
        else as a Spark job over up to ``parallelism`` slices."""
        if sum(r.size for r in ranges) <= self._local_max:
            return self._driver_reader.read(ranges, self._stopping.is_set)
        read = functools.partial(read_ranges, self._reader_conf)
        context = self._spark.context
        slices = min(len(ranges), self._spark.parallelism())
        results: list[RangeResult] = (
            context.parallelize(ranges, slices).mapPartitions(read).collect()
        )
        return results

    def close(self) -> None:
        self._driver_reader.close()
        member, self._member = self._member, None
        if member is not None:
            member.close()
