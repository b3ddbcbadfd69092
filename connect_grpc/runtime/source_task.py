"""Source tasks: poll a batch on the driver, produce it to Kafka from executors, then commit
the batch's source offsets (at-least-once: offsets are written after every record is acked).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence

from connect_grpc.connectors.api import OffsetReader, SourceRecord, SourceTask
from connect_grpc.domain import OffsetMap, OffsetPrimitive, TaskId
from connect_grpc.runtime.batching import BatchSizer, slice_count
from connect_grpc.runtime.connector import StatusListener
from connect_grpc.runtime.kafka_io import ProduceResult, produce_slices, producer_conf
from connect_grpc.runtime.records import group_for_slices, latest_offsets
from connect_grpc.runtime.spark import SparkRuntime
from connect_grpc.runtime.task import TaskRunner
from connect_grpc.storage.base import OffsetStore
from connect_grpc.worker_config import WorkerConfig


class DeliveryError(RuntimeError):
    """Some records of a batch were not written to Kafka."""


class _OffsetReader:
    def __init__(self, store: OffsetStore, connector: str) -> None:
        self._store = store
        self._connector = connector

    def offset(self, partition: OffsetMap) -> dict[str, OffsetPrimitive] | None:
        return self._store.get(self._connector, partition)


class _SourceTaskContext:
    def __init__(self, task_id: TaskId, store: OffsetStore) -> None:
        self._id = task_id
        self._reader = _OffsetReader(store, task_id.connector)

    @property
    def task_id(self) -> int:
        return self._id.task

    @property
    def connector_name(self) -> str:
        return self._id.connector

    @property
    def offset_reader(self) -> OffsetReader:
        return self._reader


def check_delivery(results: Sequence[ProduceResult], expected: int) -> None:
    """Raises DeliveryError unless every slice delivered every record."""
    produced = sum(r[0] for r in results)
    errors = sum(r[1] for r in results)
    if errors or produced != expected:
        messages = [m for r in results for m in r[2]]
        raise DeliveryError(
            f"{errors} of {expected} records failed delivery ({produced} produced): "
            + "; ".join(messages)
        )


class SourceTaskRunner(TaskRunner):
    """Runs a SourceTask as a loop of poll → produce job → commit offsets."""

    plugin: SourceTask

    def __init__(
        self,
        task_id: TaskId,
        plugin: SourceTask,
        worker_id: str,
        listener: StatusListener,
        spark: SparkRuntime,
        *,
        worker_config: WorkerConfig,
        connector_config: Mapping[str, str],
        offset_store: OffsetStore,
    ) -> None:
        super().__init__(task_id, plugin, worker_id, listener, spark)
        self._offsets = offset_store
        self._sizer = BatchSizer.from_config(connector_config)
        self._producer_conf = producer_conf(
            worker_config, connector_config, f"connect-{task_id.connector}-{task_id.task}"
        )

    def prepare(self) -> None:
        self.plugin.initialize(_SourceTaskContext(self.id, self._offsets))

    def run_batch(self) -> bool:
        records = self.plugin.poll(self._sizer.size)
        if not records:
            self._sizer.observe(0)
            return False
        self._produce(records)
        self._offsets.put(self.id.connector, latest_offsets(records))
        self.plugin.commit()
        self._sizer.observe(len(records))
        return True

    def _produce(self, records: Sequence[SourceRecord]) -> None:
        begun = time.monotonic()
        context = self._spark.context
        slices = group_for_slices(records, slice_count(len(records), self._spark.parallelism()))
        produce = functools.partial(produce_slices, self._producer_conf)
        results = context.parallelize(slices, len(slices)).mapPartitions(produce).collect()
        check_delivery(results, len(records))
        self.log.debug(
            "batch_produced",
            records=len(records),
            slices=len(slices),
            elapsed_ms=round((time.monotonic() - begun) * 1000),
        )
