"""Sink tasks: the task's group member (``sink_member.SinkMember``, on the driver) owns its
partitions and commits; readers read the ranges [position, end) with plain assigned
consumers; the task puts and flushes them. The member is created once per task and closed
once, when the task stops.

A batch whose read fails (Kafka unreachable, a leader moving) is read again from the same
position; once put and flushed, its records are never read again by this member, even if
the commit fails (the commit is retried before the next batch), so an outage causes no
duplicates short of a rebalance.

A member that stays outside its group while Kafka answers is replaced by a new one (see
``REJOIN_TIMEOUT_S``): a task must not show RUNNING for ever while nobody reads its partitions.

The record loop is one, ``sink_loop.SinkLoop``, wherever the plugin runs; so is the
runner, ``SinkTaskRunner`` (the member, planning ranges, committing), whose host is a
parameter. On the driver (``DriverHost``) the runner runs the loop in this process and reads
a large batch as a Spark job (``_InProcessLoop``); in a host of its own (``RemoteTaskHost``:
an executor's, ``hosting.sink_host``) it calls the loop there, one round trip a batch, and
relays the host's plugin metrics (``_RemoteLoop``).
"""

from __future__ import annotations

import contextlib
import functools
import re
import time
from collections.abc import Mapping
from typing import Protocol, Unpack, cast

from connect_grpc.connectors.api import SinkTask
from connect_grpc.metrics.worker_metrics import ON_DRIVER, ON_SPARK_JOB
from connect_grpc.pipeline.spec import PipelineSpec
from connect_grpc.pipeline.task_pipeline import TaskPipeline
from connect_grpc.runtime.batching import BatchSizer, OffsetRange, clip_ranges
from connect_grpc.runtime.client_settings import member_conf, reader_conf
from connect_grpc.runtime.hosting.plugin_metrics import PluginMetricsRelay
from connect_grpc.runtime.kafka_results import RangeResult, raise_read_failure
from connect_grpc.runtime.range_reader import DriverReader, read_ranges
from connect_grpc.runtime.sink_loop import (
    RemoteSinkLoop,
    SinkLoop,
    SinkLoopCalls,
    TopicPartitionKey,
    put_all,
    read_and_put,
)
from connect_grpc.runtime.sink_member import SinkMember
from connect_grpc.runtime.spark_rows import ConsumedRow, to_sink_records
from connect_grpc.runtime.task import DriverSite, RunnerOptions, TaskRunner, for_cluster
from connect_grpc.runtime.task_host import DriverHost, RemoteTaskHost, TaskHost
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup

__all__ = ["REJOIN_TIMEOUT_S", "SinkTaskRunner", "TopicPartitionKey", "subscription"]

#: Seconds a sink's group member may go without a member id (it never joined, or its session
#: timed out and it has not joined again) while the task has no partitions and Kafka
#: answers, before the task replaces it with a new member. A join takes a round trip or two
#: once the coordinator answers; librdkafka 2.16 can leave a member whose session timed out
#: during a broker restart without a coordinator for good (its log said "broker -1"): it
#: never sent a JoinGroup again, and its task showed RUNNING with nothing read for minutes.
REJOIN_TIMEOUT_S = 20.0
#: The longest an idle sink's turn waits in its member's fetch for a record (it returns as
#: soon as one arrives). confluent-kafka's consumer has no ``wakeup()``, so a stop, or a
#: pause, of a task waiting there is noticed within this; the worker asks all its tasks to
#: stop before it waits for any, so a stop of many waits for it once. As long as the
#: broker holds an empty fetch (``fetch.wait.max.ms``, 500 ms by default) and as an idle
#: task's longest sleep: an idle sink's turns, each with its ListOffsets round trip, come
#: no more often than before.
DATA_WAIT_S = 0.5


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


class _LoopPlace(Protocol):
    """Where a sink runner's loop runs, as the runner opens, keeps and closes it."""

    @property
    def loop(self) -> SinkLoopCalls: ...

    def open(self) -> None: ...

    def keep_alive(self) -> None: ...

    def close(self) -> None: ...


class SinkTaskRunner(TaskRunner):
    """Runs a SinkTask wherever its plugin runs (``host``): the runner's side of its record
    loop, the same for every host, a loop of plan ranges → move (the loop reads, puts and
    flushes) → commit. The group member lives here, on the driver.

    A ``DriverHost`` runs the loop in this process, a small batch read in-process, a large
    one as a Spark job over up to ``parallelism`` slices; any other host is a
    ``RemoteTaskHost`` that runs the loop itself (``executor_hosts.sink_host``), called one
    round trip a batch, while the driver keeps the group membership, plans the ranges and
    commits them."""

    plugin: SinkTask

    def __init__(
        self,
        setup: TaskSetup,
        host: TaskHost,
        clients: TaskClients,
        pipeline: PipelineSpec | None = None,
        **options: Unpack[RunnerOptions],
    ) -> None:
        """``pipeline`` builds the connector's converters, transformations and error
        handling (None: records go to the task as read, the bytes path); a remote host was
        given it when it was made (``executor_hosts.sink_host``) and builds it there, the
        driver only knows whether there is one."""
        task_id = setup.id
        worker_config, connector_config = setup.worker_config, setup.connector_config
        self._member_conf = member_conf(
            worker_config, connector_config, task_id.connector, setup.client_id
        )
        options = for_cluster(options, self._member_conf, worker_config)
        super().__init__(setup, host, clients, **options)
        self._subscription_config = {**setup.task_config, **connector_config}
        self._sizer = BatchSizer.from_config(connector_config)
        self._member: SinkMember | None = None
        self._place: _LoopPlace
        if isinstance(host, DriverHost):
            self._in_process = _InProcessLoop(self, setup, pipeline)
            self._place = self._in_process
        else:
            self._place = _RemoteLoop(self, cast(RemoteTaskHost, host), pipeline is not None)
        #: The task's record loop, where its plugin runs.
        self._record_loop: SinkLoopCalls = self._place.loop

    def prepare(self) -> None:
        self._place.open()
        self._member = self._new_member()

    def _new_member(self) -> SinkMember:
        return SinkMember(
            self._member_conf,
            subscription(self._subscription_config),
            self._record_loop.forget_dead_letters,
            self._clock,
        )

    def keep_alive(self) -> None:
        if self._member is not None:
            self._member.poll()
        self._place.keep_alive()

    def run_batch(self) -> bool:
        member = self._member
        if member is None:
            return False
        if not member.assigned:
            self._replace_member_outside_group(member)
            return False
        self._commit(member)
        ranges = clip_ranges(member.pending_ranges(), self._sizer.size)
        self.kafka_ok()
        if not ranges:
            self._sizer.observe(0)
            return False
        member.unwatch()
        offsets, count = self._move(ranges)
        consumed = {r.topic for r in ranges if offsets[(r.topic, r.partition)] > r.start}
        progressed = bool(consumed)
        self.record_topics(consumed)
        member.advance(offsets)
        self._sizer.observe(count)
        self.log.debug("batch_consumed", records=count, partitions=len(ranges))
        self._commit(member)
        return progressed

    def wait_for_work(self, seconds: float) -> None:
        """An idle sink waits in its member's fetch, woken by a record as soon as one
        arrives past the end of its partitions (or after ``DATA_WAIT_S``), as Kafka
        Connect's sink task waits in its consumer's poll; a paused one, one with no
        partitions, or one woken already waits as any task does."""
        member = self._member
        if member is None or self._paused or self._wake.is_set():
            if member is not None:
                member.unwatch()
            super().wait_for_work(seconds)
            return
        began = time.monotonic()
        if member.wait_for_records(DATA_WAIT_S):
            return
        waited = time.monotonic() - began
        if waited < DATA_WAIT_S:  # nothing to watch, or an error ended the fetch's wait
            super().wait_for_work(min(seconds, DATA_WAIT_S - waited))

    def _replace_member_outside_group(self, member: SinkMember) -> None:
        """Replaces a member that has been outside its group for ``REJOIN_TIMEOUT_S`` (only
        asked while Kafka answers: the loop does not run a batch during a known outage)."""
        outside_s = member.outside_group_for()
        if outside_s < REJOIN_TIMEOUT_S:
            return
        self.log.warning(
            "sink_member_replaced",
            outside_group_s=round(outside_s, 1),
            reason="the consumer has not joined its group again although Kafka answers",
        )
        member.retire()
        self._member = self._new_member()

    def _commit(self, member: SinkMember) -> None:
        """Commits what the task put and flushed, counted as an offset commit if there
        was anything to commit."""
        began = time.monotonic()
        try:
            committed = member.commit()
        except Exception:
            self.metrics.commit_failed()
            raise
        if committed:
            self.metrics.commit_succeeded(time.monotonic() - began)

    def _move(self, ranges: list[OffsetRange]) -> tuple[dict[TopicPartitionKey, int], int]:
        """Reads the ranges, puts and flushes their records where the plugin runs. Returns
        the offsets reached (to commit) and the number of records. When it fails, the
        record errors the loop counted before the failure are still counted."""
        self.recover_host()
        loop = self._record_loop
        try:
            moved = loop.move(ranges)
        except Exception:
            with contextlib.suppress(Exception):
                self.metrics.add_errors(loop.take_errors())
            raise
        self.metrics.add_errors(moved.errors)
        return moved.offsets, moved.records

    def close(self) -> None:
        """Leaves the group, then closes the loop (in-process: its reader, its pipeline)."""
        try:
            member, self._member = self._member, None
            if member is not None:
                member.close()
        finally:
            self._place.close()


class _InProcessLoop:
    """The loop in this process, for a plugin on the driver: its reader, a small batch read
    in-process, a large one as a Spark job."""

    def __init__(
        self, runner: SinkTaskRunner, setup: TaskSetup, pipeline: PipelineSpec | None
    ) -> None:
        self._runner = runner
        worker_config = setup.worker_config
        self._reader_conf = reader_conf(worker_config, setup.connector_config, runner.id.connector)
        self._local_max = worker_config.local_batch_max_records
        self._driver_reader = DriverReader(self._reader_conf)
        #: The dead-letter queue's producer starts from the task's producer settings.
        self.loop = self._sink_loop = SinkLoop(
            runner.plugin, runner.id, _DriverSite(self), setup.producer_conf(), pipeline
        )

    def open(self) -> None:
        self._sink_loop.open()

    def keep_alive(self) -> None:
        return None

    def read_and_put(
        self, ranges: list[OffsetRange], plugin: SinkTask, pipeline: TaskPipeline | None
    ) -> tuple[dict[TopicPartitionKey, int], int]:
        runner = self._runner
        began = time.monotonic()
        if sum(r.size for r in ranges) <= self._local_max:
            offsets, count = read_and_put(
                self._driver_reader, ranges, runner._stopping.is_set, plugin, pipeline
            )
            runner.metrics.put(count, time.monotonic() - began, ON_DRIVER)
            return offsets, count
        read = functools.partial(read_ranges, self._reader_conf)
        spark = runner._spark
        slices = min(len(ranges), spark.parallelism())
        rows: list[RangeResult[ConsumedRow]] = (
            spark.context.parallelize(ranges, slices).mapPartitions(read).collect()
        )
        raise_read_failure(rows)
        records = to_sink_records((r.topic, r.partition, r.rows) for r in rows)
        offsets, count = put_all(plugin, records, rows, pipeline)
        runner.metrics.put(count, time.monotonic() - began, ON_SPARK_JOB)
        return offsets, count

    def close(self) -> None:
        try:
            self._driver_reader.close()
        finally:
            self._sink_loop.close()


class _DriverSite(DriverSite):
    """The driver as the place a sink's loop runs (``sink_loop.SinkSite``): also the
    runner's reader, or a Spark job."""

    def __init__(self, place: _InProcessLoop) -> None:
        super().__init__(place._runner)
        self._place = place

    def read_and_put(
        self, ranges: list[OffsetRange], plugin: SinkTask, pipeline: TaskPipeline | None
    ) -> tuple[dict[TopicPartitionKey, int], int]:
        return self._place.read_and_put(ranges, plugin, pipeline)


class _RemoteLoop:
    """The loop in a host of its own (a ``RemoteTaskHost``: an executor's, see
    ``executor_hosts``), which reads and puts there."""

    def __init__(self, runner: SinkTaskRunner, host: RemoteTaskHost, has_pipeline: bool) -> None:
        self._host = host
        self.loop = RemoteSinkLoop(host, runner.metrics, has_pipeline, runner._stopping.is_set)
        self._plugin_metrics = PluginMetricsRelay(host, runner.metrics, clock=runner._clock)

    def open(self) -> None:
        self._host.open()

    def keep_alive(self) -> None:
        """Takes the host's plugin metrics when due: on every turn, so that they move
        while the task is idle or paused too, at most once a second."""
        self._plugin_metrics.take()

    def close(self) -> None:
        return None
