"""The one record loop of a sink task, wherever its plugin runs.

The task's runner (``sink_task``) keeps the group membership on the driver, plans each
batch's ranges and commits them; ``SinkLoop``, next to the plugin, reads the ranges, runs
the records through the task's pipeline, puts and flushes them, and answers a ``SinkMove``:
the offsets reached, for the runner to commit. It runs in the driver's process for a task
on the driver and in an executor's Python worker for a task hosted there
(``hosting.sink_host``). What differs between the two places is behind ``SinkSite``: how a
stop is signalled, how a batch's ranges are read (in-process, or as a Spark job when the
driver's batch is large) and where the counts go.

The runner drives the loop through ``SinkLoopCalls``: the loop itself on the driver, or
``RemoteSinkLoop``, which makes each call one round trip to the task's host.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from connect_grpc.connectors.api import SinkRecord, SinkTask
from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.gc_tuning import collector_paused
from connect_grpc.metrics.worker_metrics import ON_SPARK_TASK, ErrorCounts, TaskMetrics
from connect_grpc.pipeline.spec import PipelineSpec
from connect_grpc.pipeline.task_pipeline import TaskPipeline, start_pipeline
from connect_grpc.runtime.batching import OffsetRange
from connect_grpc.runtime.kafka_results import RangeResult, raise_read_failure
from connect_grpc.runtime.range_reader import DriverReader
from connect_grpc.runtime.task_contexts import SinkTaskContext
from connect_grpc.runtime.task_host import LoopSite, RemoteTaskHost

__all__ = [
    "RemoteSinkLoop",
    "SinkLoop",
    "SinkLoopCalls",
    "SinkMove",
    "SinkSite",
    "TopicPartitionKey",
    "put_all",
    "read_and_put",
    "read_records",
]

TopicPartitionKey = tuple[str, int]


def put_all(
    plugin: SinkTask,
    records: list[SinkRecord],
    results: Sequence[RangeResult[Any]],
    pipeline: TaskPipeline | None = None,
) -> tuple[dict[TopicPartitionKey, int], int]:
    """Puts and flushes the records read (through the task's pipeline, if any): the
    offsets reached (to be committed, records the pipeline skipped included) and the number
    of records read. The dead-letter queue's writes of records of the batch's partitions are
    awaited before returning, so before the offsets can be committed (none are returned if
    they are not all answered, in time and before the task is asked to stop)."""
    offsets = {(r.topic, r.partition): r.next_offset for r in results}
    read = len(records)
    if pipeline is None:
        plugin.put(records)
        plugin.flush(offsets)
        return offsets, read
    if not pipeline.pass_through:
        batch = (*sorted((r.topic, r.partition, r.next_offset) for r in results), read)
        records = pipeline.sink_batch(records, batch)
    plugin.put(records)
    errant = pipeline.errant
    if errant is not None:
        errant.maybe_raise()
    plugin.flush(offsets)
    pipeline.await_dead_letters(offsets)
    pipeline.sink_batch_done()
    return offsets, read


def read_and_put(
    reader: DriverReader,
    ranges: list[OffsetRange],
    stopping: Callable[[], bool],
    plugin: SinkTask,
    pipeline: TaskPipeline | None,
) -> tuple[dict[TopicPartitionKey, int], int]:
    """Reads the ranges in process and puts their records (``put_all``), with the cyclic
    collector paused until the batch's records are gone: the collection that follows the
    pause then finds only what outlives the batch, where one right after the read (or the
    pipeline) walked every record of the batch, only for them to be freed by reference
    counting (a tenth of a hosted json-smts FileStreamSink's time in a py-spy profile)."""
    with collector_paused():
        return _read_and_put(reader, ranges, stopping, plugin, pipeline)


def _read_and_put(
    reader: DriverReader,
    ranges: list[OffsetRange],
    stopping: Callable[[], bool],
    plugin: SinkTask,
    pipeline: TaskPipeline | None,
) -> tuple[dict[TopicPartitionKey, int], int]:
    # the records live in this frame only: gone when it returns, inside the pause
    results = reader.read(ranges, stopping)
    return put_all(plugin, read_records(results), results, pipeline)


def read_records(results: Sequence[RangeResult[SinkRecord]]) -> list[SinkRecord]:
    """The records of an in-process read (raises KafkaIoError if a range failed)."""
    raise_read_failure(results)
    if len(results) == 1:
        return results[0].rows  # one partition: no copy
    return [record for result in results for record in result.rows]


class SinkMove(NamedTuple):
    """What one turn of a sink's loop answers its runner (picklable: a hosted loop's
    answer crosses the task's connection)."""

    #: The offsets reached, to be committed (records the pipeline skipped included).
    offsets: dict[TopicPartitionKey, int]
    #: Records read.
    records: int
    #: The record errors counted since the last answer.
    errors: ErrorCounts


class SinkSite(LoopSite, Protocol):
    """What a sink's loop needs of the place it runs in (the driver, or an executor's
    Python worker)."""

    def read_and_put(
        self, ranges: list[OffsetRange], plugin: SinkTask, pipeline: TaskPipeline | None
    ) -> tuple[dict[TopicPartitionKey, int], int]:
        """Reads the ranges and puts their records (``put_all``), counting them: the
        offsets reached and the number of records read."""


class SinkLoopCalls(Protocol):
    """What a sink's runner calls on its loop, in-process or over a host's connection."""

    def move(self, ranges: list[OffsetRange]) -> SinkMove:
        """Reads the ranges, puts and flushes their records."""

    def forget_dead_letters(self, partitions: list[TopicPartitionKey]) -> None:
        """The runner's member lost ``partitions``: their records' dead-letter queue
        writes are not awaited any more (their offsets are not this task's to commit)."""

    def take_errors(self) -> ErrorCounts:
        """The record errors counted since they were last taken."""


class SinkLoop:
    """A sink task's record loop, next to its plugin: read → pipeline → put, flush."""

    def __init__(
        self,
        plugin: SinkTask,
        task_id: TaskId,
        site: SinkSite,
        dlq_base_conf: Mapping[str, str],
        pipeline: PipelineSpec | None,
    ) -> None:
        """``dlq_base_conf``: the dead-letter queue's producer starts from these settings
        (the task's producer's)."""
        self._plugin = plugin
        self._id = task_id
        self._site = site
        self._dlq_base_conf = dlq_base_conf
        self._pipeline_spec = pipeline
        self._pipeline: TaskPipeline | None = None

    def open(self) -> None:
        """Starts the pipeline and initializes the plugin, before its ``start``."""
        site = self._site
        if self._pipeline is None:
            self._pipeline = start_pipeline(
                self._pipeline_spec,
                self._id,
                is_sink=True,
                producer_conf=self._dlq_base_conf,
                sleep=site.backoff,
                stopping=site.stopping,
            )
        pipeline = self._pipeline
        errant = None if pipeline is None else pipeline.errant
        metrics = site.plugin_metrics(pipeline)
        self._plugin.initialize(SinkTaskContext(self._id, errant, metrics))

    def move(self, ranges: list[OffsetRange]) -> SinkMove:
        """Reads the ranges and puts their records: the offsets reached, the number of
        records read, and the record errors counted since the last answer."""
        offsets, count = self._site.read_and_put(ranges, self._plugin, self._pipeline)
        return SinkMove(offsets, count, self.take_errors())

    def forget_dead_letters(self, partitions: list[TopicPartitionKey]) -> None:
        if self._pipeline is not None:
            self._pipeline.forget_dead_letters(partitions)

    def take_errors(self) -> ErrorCounts:
        return ErrorCounts() if self._pipeline is None else self._pipeline.take_counts()

    def close(self) -> None:
        """Closes the pipeline (what ``open`` started)."""
        pipeline, self._pipeline = self._pipeline, None
        if pipeline is not None:
            pipeline.close()


class RemoteSinkLoop:
    """The driver's end of a sink loop that runs in a host of its own (a
    ``RemoteTaskHost``): each call one round trip; the records put are counted, timed by
    the round trip."""

    def __init__(
        self,
        host: RemoteTaskHost,
        metrics: TaskMetrics,
        has_pipeline: bool,
        stopping: Callable[[], bool],
    ) -> None:
        """``has_pipeline``: whether the host was given a pipeline spec (without one it
        counts no errors and has no dead-letter queue to ask about)."""
        self._host = host
        self._metrics = metrics
        self._has_pipeline = has_pipeline
        self._stopping = stopping

    def move(self, ranges: list[OffsetRange]) -> SinkMove:
        began = time.monotonic()
        moved: SinkMove = self._host.call("move", ranges)
        self._metrics.put(moved.records, time.monotonic() - began, ON_SPARK_TASK)
        return moved

    def forget_dead_letters(self, partitions: list[TopicPartitionKey]) -> None:
        """Tells the host (when it may have a dead-letter queue, is reachable and the task
        is not stopping); a host that is not told lets go of those writes when it stops."""
        if not self._has_pipeline or self._host.broken or self._stopping():
            return
        with contextlib.suppress(Exception):
            self._host.call("forget_dead_letters", partitions)

    def take_errors(self) -> ErrorCounts:
        if not self._has_pipeline or self._host.broken:
            return ErrorCounts()
        errors: ErrorCounts = self._host.call("take_errors")
        return errors
