"""A sink task's host, in the executor's Python worker (``serving``): reads the ranges the
driver plans with a reader it keeps until the task stops, runs the task's pipeline and puts
and flushes the records; the driver commits (``sink_hosted``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from connect_grpc.connectors.api import SinkTask
from connect_grpc.kernel.domain import TaskId
from connect_grpc.metrics.worker_metrics import ErrorCounts
from connect_grpc.pipeline.spec import PipelineSpec
from connect_grpc.pipeline.task_pipeline import TaskPipeline, start_pipeline
from connect_grpc.pipeline.tolerance import StopAwareSleep
from connect_grpc.runtime.batching import OffsetRange
from connect_grpc.runtime.hosting.plugin_metrics import monitor_hosted
from connect_grpc.runtime.hosting.serving import HostSession, PluginHost, build
from connect_grpc.runtime.range_reader import DriverReader
from connect_grpc.runtime.sink_task import SinkTaskContext, TopicPartitionKey, read_and_put


class HostedSinkBatch(NamedTuple):
    """What a hosted sink's ``move`` answers the driver (picklable)."""

    offsets: dict[TopicPartitionKey, int]
    records: int
    errors: ErrorCounts


class SinkHost(PluginHost):
    """A sink task in its Spark task (``hosting.serving.serve_host``): reads the ranges the driver
    plans with a consumer it keeps until the task stops, then puts and flushes them."""

    def __init__(
        self,
        session: HostSession,
        task_class: str,
        task_id: TaskId,
        conf: Mapping[str, str],
        dlq_base_conf: Mapping[str, str] | None = None,
        pipeline: PipelineSpec | None = None,
    ) -> None:
        self._session = session
        self._id = task_id
        self._plugin: SinkTask = build(task_class)
        self._reader = DriverReader(conf)
        self._dlq_base_conf = dlq_base_conf or {}
        self._pipeline_spec = pipeline
        self._pipeline: TaskPipeline | None = None
        super().__init__(self._plugin, self._reader)

    def start(self, config: Mapping[str, str]) -> None:
        if self._pipeline is None:
            self._pipeline = start_pipeline(
                self._pipeline_spec,
                self._id,
                is_sink=True,
                producer_conf=self._dlq_base_conf,
                sleep=StopAwareSleep(self._session.stopping),
                stopping=self._session.stopping,
            )
            monitor_hosted(self._pipeline, self._id)
        errant = None if self._pipeline is None else self._pipeline.errant
        self._plugin.initialize(SinkTaskContext(self._id, errant))
        self._plugin.start(config)

    def move(self, ranges: list[OffsetRange]) -> HostedSinkBatch:
        """As ``SinkTaskRunner._move``, in the host; with the record errors counted since
        the last answer that carried them."""
        offsets, count = read_and_put(
            self._reader, ranges, self._session.stopping, self._plugin, self._pipeline
        )
        return HostedSinkBatch(offsets, count, self.take_errors())

    def take_errors(self) -> ErrorCounts:
        """The record errors counted since they were last taken."""
        return ErrorCounts() if self._pipeline is None else self._pipeline.take_counts()

    def forget_dead_letters(self, partitions: list[TopicPartitionKey]) -> None:
        """The driver's member lost ``partitions`` (see ``SinkTaskRunner._revoked``)."""
        if self._pipeline is not None:
            self._pipeline.forget_dead_letters(partitions)

    def stop(self, connector_deleted: bool) -> None:
        try:
            super().stop(connector_deleted)
        finally:
            pipeline, self._pipeline = self._pipeline, None
            if pipeline is not None:
                pipeline.close()


#: The factory ``hosting.serving.serve_host`` builds a sink task's host with.
SINK_HOST = f"{__name__}:{SinkHost.__qualname__}"
