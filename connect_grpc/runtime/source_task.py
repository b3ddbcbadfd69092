"""Source tasks' runner: polls a batch where the plugin runs, produces it to Kafka, then
commits the batch's source offsets (at-least-once: offsets are written after every record is
acked; exactly-once: each batch is written in a transaction with its offsets).

The record loop is one, ``source_loop.SourceLoop``, wherever the plugin runs; so is the
runner, ``SourceTaskRunner`` (committing offsets, counting, sizing batches), whose host is
a parameter. On the driver (``DriverHost``) the runner runs the loop in this process and
produces a large batch as a Spark job (``_InProcessLoop``); in a host of its own
(``RemoteTaskHost``: an executor's, ``hosting.source_host``) it calls the loop there, one
round trip a batch, and relays the host's plugin metrics (``_RemoteLoop``).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Sequence
from typing import Protocol, Unpack, cast

from connect_grpc.connectors.api import OffsetReader, SourceRecord, SourceTask
from connect_grpc.kernel.domain import OffsetMap, OffsetPrimitive
from connect_grpc.metrics.worker_metrics import ON_DRIVER, ON_SPARK_JOB
from connect_grpc.pipeline.spec import PipelineSpec
from connect_grpc.runtime.batching import BatchSizer, slice_count
from connect_grpc.runtime.hosting.plugin_metrics import PluginMetricsRelay
from connect_grpc.runtime.kafka_results import KafkaFailure, ProduceResult
from connect_grpc.runtime.produce import DriverProducer, produce_slices
from connect_grpc.runtime.source_batch import check_delivery
from connect_grpc.runtime.source_loop import (
    RemoteSourceLoop,
    SourceLoop,
    SourceLoopCalls,
    SourceMove,
)
from connect_grpc.runtime.spark_rows import group_for_slices, slice_indexes
from connect_grpc.runtime.task import DriverSite, RunnerOptions, TaskRunner, for_cluster
from connect_grpc.runtime.task_host import DriverHost, RemoteTaskHost, TaskHost
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup
from connect_grpc.runtime.topic_creator import topic_creation_spec
from connect_grpc.runtime.transactions import TransactionalProducer
from connect_grpc.storage.base import OffsetStore

__all__ = ["SourceTaskRunner"]


class _LoopPlace(Protocol):
    """Where a source runner's loop runs, as the runner opens, keeps and closes it."""

    @property
    def loop(self) -> SourceLoopCalls: ...

    def open(self) -> None: ...

    def keep_alive(self) -> None: ...

    def close(self) -> None: ...


class SourceTaskRunner(TaskRunner):
    """Runs a SourceTask wherever its plugin runs (``host``): the runner's side of its
    record loop, the same for every host. Each batch's offsets are committed once its
    records were acknowledged (at-least-once; exactly-once, by the batch's transaction),
    the plugin told, the batch size adapted, the task's counts and active topics recorded.

    A ``DriverHost`` runs the loop in this process, each batch produced from the driver when
    it is small, else as a Spark job; any other host is a ``RemoteTaskHost`` that runs the
    loop itself (``executor_hosts.source_host``), called one round trip a batch."""

    plugin: SourceTask

    def __init__(
        self,
        setup: TaskSetup,
        host: TaskHost,
        clients: TaskClients,
        pipeline: PipelineSpec | None = None,
        **options: Unpack[RunnerOptions],
    ) -> None:
        """``pipeline`` builds the connector's converters, transformations and error
        handling (None: records go out as polled, the bytes path); a remote host was given
        it when it was made, and builds it there. With ``clients.transactions``
        (exactly-once) the task starts once ``clients.await_fencing`` returned."""
        self._await_fencing = clients.await_fencing
        self._producer_conf = setup.producer_conf()
        options = for_cluster(options, self._producer_conf, setup.worker_config)
        super().__init__(setup, host, clients, **options)
        self._offsets = clients.offsets()
        self._sizer = BatchSizer.from_config(setup.connector_config)
        self._transactional = clients.transactions is not None
        self._place: _LoopPlace
        if isinstance(host, DriverHost):
            self._in_process = _InProcessLoop(self, setup, clients, pipeline)
            self._place = self._in_process
        else:
            self._place = _RemoteLoop(self, cast(RemoteTaskHost, host))
        #: The task's record loop, where its plugin runs.
        self._record_loop: SourceLoopCalls = self._place.loop

    def prepare(self) -> None:
        self._place.open()

    def keep_alive(self) -> None:
        self._place.keep_alive()

    def run_batch(self) -> bool:
        self.recover_host()
        moved = self._move()
        self.metrics.add_commits(moved.commits)
        self.metrics.add_errors(moved.errors)
        if not moved.records:
            self._sizer.observe(0)
            return False
        self.kafka_ok()
        self.record_topics(moved.topics)
        if not self._transactional:  # else committed by the task's transactions
            if moved.offsets:
                with self.metrics.offset_commit():
                    self._offsets.put(self.id.connector, moved.offsets)
            self._record_loop.committed()
        self._sizer.observe(moved.records)
        return True

    def _move(self) -> SourceMove:
        """The loop's next batch. When it fails, the transaction commits and record errors
        the loop counted before the failure are still counted."""
        try:
            return self._record_loop.move(self._sizer.size)
        except Exception:
            self._take_counts()
            raise

    def _take_counts(self) -> None:
        with contextlib.suppress(Exception):
            if self._transactional:
                self.metrics.add_commits(self._record_loop.take_commits())
            self.metrics.add_errors(self._record_loop.take_errors())

    def wind_down(self) -> None:
        if not self._transactional:
            return
        try:
            commits = self._record_loop.wind_down()
        except Exception:
            self._take_counts()
            raise
        self.metrics.add_commits(commits)

    def _produce(
        self, records: Sequence[SourceRecord], tolerate: bool = False
    ) -> list[tuple[int, KafkaFailure]]:
        """A driver host's: produces the batch, on the driver when it is too small to pay
        for a Spark job, else as a Spark job over up to ``parallelism`` slices. Returns the
        records refused for good (by index), when the task tolerates them (``tolerate``)."""
        return self._in_process.produce(records, tolerate)

    def close(self) -> None:
        self._place.close()


class _OffsetReader:
    def __init__(self, store: OffsetStore, connector: str) -> None:
        self._store = store
        self._connector = connector

    def offset(self, partition: OffsetMap) -> dict[str, OffsetPrimitive] | None:
        return self._store.get(self._connector, partition)


class _InProcessLoop:
    """The loop in this process, for a plugin on the driver: its producers, each batch
    produced from the driver when it is small, else as a Spark job."""

    def __init__(
        self,
        runner: SourceTaskRunner,
        setup: TaskSetup,
        clients: TaskClients,
        pipeline: PipelineSpec | None,
    ) -> None:
        self._runner = runner
        conf = runner._producer_conf
        self._local_max = setup.worker_config.local_batch_max_records
        self._driver_producer = DriverProducer(conf)
        transactions = clients.transactions
        #: Exactly-once: every batch one transaction with its offsets, on the driver.
        self._transactional_producer = (
            None if transactions is None else TransactionalProducer(conf, transactions)
        )
        self.loop = self._source_loop = SourceLoop(
            runner.plugin,
            runner.id,
            _DriverSite(runner),
            conf,
            self._transactional_producer,
            pipeline,
            topic_creation_spec(setup.worker_config, setup.connector_config, conf, setup.id),
            runner.log,
        )

    def open(self) -> None:
        self._source_loop.open()

    def keep_alive(self) -> None:
        return None

    def produce(
        self, records: Sequence[SourceRecord], tolerate: bool
    ) -> list[tuple[int, KafkaFailure]]:
        runner = self._runner
        begun = time.monotonic()
        on_driver = len(records) <= self._local_max
        slices: list[list[int]] = []
        if on_driver:
            producer = self._driver_producer
            results = [producer.produce(records, runner._stopping.is_set, tolerate)]
        else:
            results, slices = self._produce_on_spark(records, tolerate)
        refusals = check_delivery(results, len(records))
        refused = [
            (slices[n][index] if slices else index, why) for n, index, why in refusals
        ]
        elapsed = time.monotonic() - begun
        where = ON_DRIVER if on_driver else ON_SPARK_JOB
        runner.metrics.written(len(records) - len(refused), elapsed, where)
        runner.log.debug(
            "batch_produced",
            records=len(records),
            on="driver" if on_driver else "spark",
            elapsed_ms=round(elapsed * 1000),
        )
        return refused

    def _produce_on_spark(
        self, records: Sequence[SourceRecord], tolerate: bool
    ) -> tuple[list[ProduceResult], list[list[int]]]:
        """The results of a Spark job that produces the records, one per slice; with
        ``tolerate``, which record each slice's rows are (by index)."""
        spark = self._runner._spark
        count = slice_count(len(records), spark.parallelism())
        slices = group_for_slices(records, count)
        produce = functools.partial(
            produce_slices, self._runner._producer_conf, tolerate=tolerate
        )
        results: list[ProduceResult] = (
            spark.context.parallelize(slices, len(slices)).mapPartitions(produce).collect()
        )
        members = slice_indexes(records, count) if any(r.refused for r in results) else []
        return results, members

    def close(self) -> None:
        try:
            self._driver_producer.close()
            if self._transactional_producer is not None:
                self._transactional_producer.close()
        finally:
            self._source_loop.close()


class _DriverSite(DriverSite):
    """The driver as the place a source's loop runs (``source_loop.SourceSite``): also the
    task's offset store and the runner's producers."""

    def __init__(self, runner: SourceTaskRunner) -> None:
        super().__init__(runner)
        self._runner = runner

    def await_fencing(self) -> None:
        self._runner._await_fencing()

    def refresh_offsets(self) -> None:
        self._runner._offsets.refresh()

    def offset_reader(self) -> OffsetReader:
        runner = self._runner
        return _OffsetReader(runner._offsets, runner.id.connector)

    def produce(
        self, records: Sequence[SourceRecord], tolerate: bool
    ) -> list[tuple[int, KafkaFailure]]:
        return self._runner._produce(records, tolerate)

    def count_polled(self, records: int) -> None:
        self._runner.metrics.polled(records)

    def count_written(self, records: int, seconds: float) -> None:
        self._runner.metrics.written(records, seconds, ON_DRIVER)


class _RemoteLoop:
    """The loop in a host of its own (a ``RemoteTaskHost``: an executor's, see
    ``executor_hosts``), which polls and produces there; the pipeline spec went to the
    host, which builds the pipeline there."""

    def __init__(self, runner: SourceTaskRunner, host: RemoteTaskHost) -> None:
        self._runner = runner
        self._host = host
        self.loop = RemoteSourceLoop(host, runner.metrics)
        self._plugin_metrics = PluginMetricsRelay(host, runner.metrics, clock=runner._clock)

    def open(self) -> None:
        if self._runner._transactional:
            self._runner._await_fencing()
        self._host.open()

    def keep_alive(self) -> None:
        """Takes the host's plugin metrics when due: on every turn, so that they move
        while the task is idle or paused too, at most once a second."""
        self._plugin_metrics.take()

    def close(self) -> None:
        return None
