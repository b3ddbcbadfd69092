"""The runner of a sink task whose plugin lives in a host of its own (``RemoteTaskHost``:
an executor's, ``hosting.sink_host``): the host reads the ranges, runs the pipeline and
puts; the driver keeps the group membership, plans the ranges and commits them."""

from __future__ import annotations

import contextlib
import time
from typing import Unpack

from connect_grpc.metrics.worker_metrics import ON_SPARK_TASK
from connect_grpc.pipeline.spec import PipelineSpec
from connect_grpc.runtime.batching import OffsetRange
from connect_grpc.runtime.hosting.sink_host import HostedSinkBatch
from connect_grpc.runtime.sink_task import SinkTaskRunner, TopicPartitionKey
from connect_grpc.runtime.task import RunnerOptions
from connect_grpc.runtime.task_host import RemoteTaskHost
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup


class HostedSinkTaskRunner(SinkTaskRunner):
    """A sink task whose plugin reads and puts in a process of its own (a
    ``RemoteTaskHost``: an executor's, see ``executor_hosts``); the driver keeps the group
    membership, plans the ranges and commits them."""

    host: RemoteTaskHost

    def __init__(
        self,
        setup: TaskSetup,
        host: RemoteTaskHost,
        clients: TaskClients,
        pipeline: PipelineSpec | None = None,
        **options: Unpack[RunnerOptions],
    ) -> None:
        """``pipeline`` is the spec the host was given (``executor_hosts.sink_host``): the host
        builds the pipeline, the driver only knows whether there is one."""
        super().__init__(setup, host, clients, pipeline, **options)

    def prepare(self) -> None:
        self.host.open()
        self._member = self._new_member()

    def _revoked(self, partitions: list[TopicPartitionKey]) -> None:
        """Tells the host (when it may have a dead-letter queue, is reachable and the task
        is not stopping); a host that is not told lets go of those writes when it stops."""
        if self._pipeline_spec is None or self.host.broken or self._stopping.is_set():
            return
        with contextlib.suppress(Exception):
            self.host.call("forget_dead_letters", partitions)

    def _move(self, ranges: list[OffsetRange]) -> tuple[dict[TopicPartitionKey, int], int]:
        self.recover_host()
        began = time.monotonic()
        try:
            moved: HostedSinkBatch = self.host.call("move", ranges)
        except Exception:
            if self._pipeline_spec is not None and not self.host.broken:
                with contextlib.suppress(Exception):
                    self.metrics.add_errors(self.host.call("take_errors"))
            raise
        self.metrics.add_errors(moved.errors)
        self.metrics.put(moved.records, time.monotonic() - began, ON_SPARK_TASK)
        return moved.offsets, moved.records
