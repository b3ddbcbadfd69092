"""A sink task's host, in the executor's Python worker (``serving``): the task's record loop
(``sink_loop.SinkLoop``) runs here, reading the ranges the driver plans with a reader the
host keeps until the task stops, running the task's pipeline and putting and flushing the
records; the driver commits (``sink_task.SinkTaskRunner``)."""

from __future__ import annotations

from collections.abc import Mapping

from connect_grpc.connectors.api import SinkTask
from connect_grpc.kernel.domain import TaskId
from connect_grpc.pipeline.spec import PipelineSpec
from connect_grpc.pipeline.task_pipeline import TaskPipeline
from connect_grpc.runtime.batching import OffsetRange
from connect_grpc.runtime.hosting.serving import HostSession, HostSite, PluginHost, build
from connect_grpc.runtime.range_reader import DriverReader
from connect_grpc.runtime.sink_loop import SinkLoop, SinkMove, TopicPartitionKey, read_and_put


class _SinkHostSite(HostSite):
    """The executor as the place a sink's loop runs (``sink_loop.SinkSite``): every batch
    read in-process with the host's reader; the driver counts what it answers."""

    def __init__(
        self, session: HostSession, task_id: TaskId, plugin: SinkTask, reader: DriverReader
    ) -> None:
        super().__init__(session, task_id, plugin)
        self._reader = reader

    def read_and_put(
        self, ranges: list[OffsetRange], plugin: SinkTask, pipeline: TaskPipeline | None
    ) -> tuple[dict[TopicPartitionKey, int], int]:
        return read_and_put(self._reader, ranges, self.stopping, plugin, pipeline)


class SinkHost(PluginHost):
    """A sink task in its Spark task (``hosting.serving.serve_host``): its record loop,
    called by the driver's ``sink_loop.RemoteSinkLoop``."""

    def __init__(
        self,
        session: HostSession,
        task_class: str,
        task_id: TaskId,
        conf: Mapping[str, str],
        dlq_base_conf: Mapping[str, str] | None = None,
        pipeline: PipelineSpec | None = None,
    ) -> None:
        plugin: SinkTask = build(task_class)
        reader = DriverReader(conf)
        site = _SinkHostSite(session, task_id, plugin, reader)
        self._loop = SinkLoop(plugin, task_id, site, dlq_base_conf or {}, pipeline)
        super().__init__(plugin, self._loop, reader, site)

    def move(self, ranges: list[OffsetRange]) -> SinkMove:
        """``SinkLoop.move``, in the host."""
        return self._loop.move(ranges)

    def forget_dead_letters(self, partitions: list[TopicPartitionKey]) -> None:
        """The driver's member lost ``partitions`` (see ``SinkLoop.forget_dead_letters``)."""
        self._loop.forget_dead_letters(partitions)


#: The factory ``hosting.serving.serve_host`` builds a sink task's host with.
SINK_HOST = f"{__name__}:{SinkHost.__qualname__}"
