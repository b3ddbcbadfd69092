"""Sink tasks: a driver-side group member owns partitions and commits; executors read the
ranges [committed, end) with plain assigned consumers; the task puts and flushes them.

The member never hands records to the task: its partitions are paused as soon as they are
assigned, and it is polled only to keep its membership and run rebalance callbacks.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from connect_grpc.connectors.api import SinkTask
from connect_grpc.domain import TaskId
from connect_grpc.runtime.batching import BatchSizer, OffsetRange, clip_ranges
from connect_grpc.runtime.connector import StatusListener
from connect_grpc.runtime.kafka_io import RangeResult, member_conf, read_ranges, reader_conf
from connect_grpc.runtime.records import ConsumedRow, to_sink_records
from connect_grpc.runtime.spark import SparkRuntime
from connect_grpc.runtime.task import TaskRunner
from connect_grpc.worker_config import WorkerConfig

#: Seconds the driver waits for a broker answer (committed offsets, watermarks, commit).
BROKER_TIMEOUT_S = 10.0


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
    """The group member: tracks its assignment and the committed offset of each partition."""

    def __init__(self, conf: Mapping[str, str], topics: list[str]) -> None:
        from confluent_kafka import Consumer

        self._incremental = incremental_rebalancing(conf)
        self.consumer: Any = Consumer(dict(conf))
        self.assigned: set[tuple[str, int]] = set()
        self.committed: dict[tuple[str, int], int] = {}
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
            self.committed.pop((tp.topic, tp.partition), None)

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        for tp in partitions:
            self.assigned.discard((tp.topic, tp.partition))
            self.committed.pop((tp.topic, tp.partition), None)

    def poll(self) -> None:
        """Serves callbacks and heartbeats; any record (fetched before the pause) is dropped."""
        from confluent_kafka import KafkaException

        msg = self.consumer.poll(0)
        if msg is not None and msg.error() is not None and msg.error().fatal():
            raise KafkaException(msg.error())

    def pending_ranges(self) -> list[OffsetRange]:
        """[committed (or earliest), high watermark) of each assigned partition."""
        from confluent_kafka import TopicPartition

        owned = sorted(self.assigned)
        self._load_committed([p for p in owned if p not in self.committed])
        ranges: list[OffsetRange] = []
        for topic, partition in owned:
            low, high = self.consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=BROKER_TIMEOUT_S, cached=False
            )
            start = max(self.committed.get((topic, partition), low), low)
            ranges.append(OffsetRange(topic, partition, start, high))
        return ranges

    def _load_committed(self, partitions: list[tuple[str, int]]) -> None:
        from confluent_kafka import TopicPartition

        if not partitions:
            return
        answer = self.consumer.committed(
            [TopicPartition(t, p) for t, p in partitions], timeout=BROKER_TIMEOUT_S
        )
        for tp in answer:
            if tp.offset >= 0:
                self.committed[(tp.topic, tp.partition)] = tp.offset

    def commit(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Commits synchronously; on failure forgets the cached offsets (they are re-read)."""
        from confluent_kafka import TopicPartition

        tps = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        try:
            self.consumer.commit(offsets=tps, asynchronous=False)
        except Exception:
            for key in offsets:
                self.committed.pop(key, None)
            raise
        self.committed.update(offsets)

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
    ) -> None:
        super().__init__(task_id, plugin, worker_id, listener, spark)
        self._subscription_config = {**task_config, **connector_config}
        self._sizer = BatchSizer.from_config(connector_config)
        client_id = f"connect-{task_id.connector}-{task_id.task}"
        self._member_conf = member_conf(
            worker_config, connector_config, task_id.connector, client_id
        )
        self._reader_conf = reader_conf(worker_config, connector_config, task_id.connector)
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
        ranges = clip_ranges(member.pending_ranges(), self._sizer.size)
        if not ranges:
            self._sizer.observe(0)
            return False
        results = self._read(ranges)
        rows: list[ConsumedRow] = [row for result in results for row in result[3]]
        offsets = {(topic, partition): end for topic, partition, end, _ in results}
        progressed = any(offsets[(r.topic, r.partition)] > r.start for r in ranges)
        self.plugin.put(to_sink_records(rows))
        self.plugin.flush(offsets)
        try:
            member.commit(offsets)
        except Exception:
            self.log.warning("sink_commit_failed", exc_info=True)
        self._sizer.observe(len(rows))
        self.log.debug("batch_consumed", records=len(rows), partitions=len(ranges))
        return progressed

    def _read(self, ranges: list[OffsetRange]) -> list[RangeResult]:
        read = functools.partial(read_ranges, self._reader_conf)
        context = self._spark.context
        slices = min(len(ranges), self._spark.parallelism())
        results: list[RangeResult] = (
            context.parallelize(ranges, slices).mapPartitions(read).collect()
        )
        return results

    def close(self) -> None:
        member, self._member = self._member, None
        if member is not None:
            member.close()
