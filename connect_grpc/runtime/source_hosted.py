"""The runner of a source task whose plugin lives in a host of its own (``RemoteTaskHost``:
an executor's, ``hosting.source_host``): the host polls, runs the pipeline and produces;
the driver commits each batch's offsets and keeps the task's state machine."""

from __future__ import annotations

import contextlib
import time
from typing import Unpack

from connect_grpc.metrics.worker_metrics import ON_SPARK_TASK, CommitTally
from connect_grpc.runtime.batching import BatchSizer
from connect_grpc.runtime.hosting.source_host import HostedBatch
from connect_grpc.runtime.task import RunnerOptions, TaskRunner, for_cluster
from connect_grpc.runtime.task_host import RemoteTaskHost
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup


class HostedSourceTaskRunner(TaskRunner):
    """A source task whose plugin polls and produces in a process of its own (a
    ``RemoteTaskHost``: an executor's, see ``executor_hosts``); the driver commits each
    batch's offsets (after every record was acknowledged) and keeps the task's state
    machine."""

    host: RemoteTaskHost

    def __init__(
        self,
        setup: TaskSetup,
        host: RemoteTaskHost,
        clients: TaskClients,
        **options: Unpack[RunnerOptions],
    ) -> None:
        """With ``clients.transactions`` as for SourceTaskRunner; the pipeline spec went to
        the host (``executor_hosts.source_host``), which builds the pipeline."""
        self._await_fencing = clients.await_fencing
        options = for_cluster(options, setup.producer_conf(), setup.worker_config)
        super().__init__(setup, host, clients, **options)
        self._offsets = clients.offsets()
        self._sizer = BatchSizer.from_config(setup.connector_config)
        self._transactional = clients.transactions is not None
        #: Whether the host may hold an open transaction (a batch moved since the last
        #: wind-down): paused turns then skip the round trip.
        self._moved_since_wind_down = False

    def prepare(self) -> None:
        if self._transactional:
            self._await_fencing()
        self.host.open()

    def run_batch(self) -> bool:
        self.recover_host()
        began = time.monotonic()
        moved = self._move()
        self.metrics.add_commits(moved.commits)
        self.metrics.add_errors(moved.errors)
        if not moved.records:
            self._sizer.observe(0)
            return False
        self.metrics.polled(moved.records)
        self.metrics.written(moved.records, time.monotonic() - began, ON_SPARK_TASK)
        self.kafka_ok()
        self.record_topics(moved.topics)
        self._moved_since_wind_down = True
        if not self._transactional:  # else committed by the task's transactions
            if moved.offsets:
                with self.metrics.offset_commit():
                    self._offsets.put(self.id.connector, moved.offsets)
            self.host.call("committed")
        self._sizer.observe(moved.records)
        return True

    def _move(self) -> HostedBatch:
        """The host's next batch. When it fails, the transaction commits the host counted
        before the failure are still counted (one more round trip, after failures only)."""
        try:
            moved: HostedBatch = self.host.call("move", self._sizer.size)
        except Exception:
            if not self.host.broken:
                with contextlib.suppress(Exception):
                    if self._transactional:
                        self.metrics.add_commits(self.host.call("take_commits"))
                    self.metrics.add_errors(self.host.call("take_errors"))
            raise
        return moved

    def wind_down(self) -> None:
        if self._transactional and self._moved_since_wind_down and not self.host.broken:
            commits: CommitTally = self.host.call("wind_down")
            self.metrics.add_commits(commits)
            self._moved_since_wind_down = False
