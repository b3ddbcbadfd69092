"""Source tasks: poll a batch on the driver, produce it to Kafka from executors, then commit
the batch's source offsets (at-least-once: offsets are written after every record is acked).
What a source's batch is, wherever its plugin runs, and the runner of a task whose plugin
runs on the driver (``DriverHost``); a plugin hosted in an executor: ``source_hosted``.

A batch whose produce fails on a retriable error (Kafka unreachable, a leader moving) is
kept and produced again by the next attempt, before the task is polled for more: records
the plugin returned are never dropped (some may be written twice).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Unpack

import structlog

from connect_grpc.connectors.api import (
    OffsetReader,
    SourceRecord,
    SourceTask,
    TransactionContext,
)
from connect_grpc.connectors.plugin_metrics import PluginMetrics
from connect_grpc.kernel.domain import OffsetMap, OffsetPrimitive, TaskId
from connect_grpc.kernel.kafka_clients import KafkaIoError
from connect_grpc.metrics.worker_metrics import ON_DRIVER, ON_SPARK_JOB
from connect_grpc.pipeline.spec import PipelineSpec
from connect_grpc.pipeline.task_pipeline import TaskPipeline, start_pipeline
from connect_grpc.pipeline.tolerance import event_sleep
from connect_grpc.runtime.batching import BatchSizer, slice_count
from connect_grpc.runtime.kafka_results import (
    KafkaFailure,
    ProduceResult,
    RecordRefusedError,
)
from connect_grpc.runtime.produce import DriverProducer, produce_slices
from connect_grpc.runtime.spark_rows import group_for_slices, latest_offsets, slice_indexes
from connect_grpc.runtime.task import RunnerOptions, TaskRunner, for_cluster
from connect_grpc.runtime.task_host import TaskHost
from connect_grpc.runtime.task_setup import TaskClients, TaskSetup
from connect_grpc.runtime.topic_creator import (
    TopicCreator,
    start_topic_creation,
    topic_creation_spec,
)
from connect_grpc.runtime.transactions import TransactionalProducer
from connect_grpc.storage.base import OffsetStore

log = structlog.get_logger(__name__)

_TOPIC = attrgetter("topic")

#: Seconds a batch may keep filling from further polls once the first poll returned records.
POLL_LINGER_S = 0.25


class DeliveryError(KafkaIoError):
    """Some records of a batch were not written to Kafka (retriable iff every failure was)."""


@dataclass(slots=True)
class Batch:
    """Records polled from the plugin and not yet committed (kept across retries)."""

    records: Sequence[SourceRecord]
    produced: bool = False
    #: What goes to Kafka: the records themselves, or what the task's pipeline made of
    #: those it did not drop (converted once, when polled).
    outgoing: Sequence[SourceRecord] = ()
    #: With a pipeline: each polled record as it goes out, None where it was dropped.
    converted: list[SourceRecord | None] | None = None
    #: The topics the outgoing records go to (gathered once per batch).
    topics: frozenset[str] = frozenset()
    #: Once produced: the topics the broker took records of it for (KIP-558 records a topic
    #: on a successful send only).
    delivered: frozenset[str] = frozenset()

    def through(self, pipeline: TaskPipeline | None) -> Batch:
        """The batch after the task's pipeline (dropped records' offsets are then not
        committed, except by an exactly-once transaction, which commits the batch's)."""
        if pipeline is None or pipeline.pass_through:
            self.outgoing = self.records
        else:
            self.converted = pipeline.apply_source(self.records)
            self.outgoing = [record for record in self.converted if record is not None]
        self.topics = frozenset(map(_TOPIC, self.outgoing))
        return self

    def dropped(self) -> list[SourceRecord]:
        """The polled records the pipeline dropped."""
        converted = self.converted
        if converted is None or len(self.outgoing) == len(self.records):
            return []
        return [r for r, out in zip(self.records, converted, strict=True) if out is None]

    def originals_of(self, outgoing: Sequence[int]) -> list[SourceRecord]:
        """The polled records the ``outgoing`` records (by index) were made of."""
        converted = self.converted
        if converted is None:
            return [self.records[index] for index in outgoing]
        kept = [i for i, out in enumerate(converted) if out is not None]
        return [self.records[kept[index]] for index in outgoing]


class _OffsetReader:
    def __init__(self, store: OffsetStore, connector: str) -> None:
        self._store = store
        self._connector = connector

    def offset(self, partition: OffsetMap) -> dict[str, OffsetPrimitive] | None:
        return self._store.get(self._connector, partition)


class SourceTaskContext:
    def __init__(
        self,
        task_id: TaskId,
        reader: OffsetReader,
        transaction_context: TransactionContext | None = None,
        plugin_metrics: PluginMetrics | None = None,
    ) -> None:
        self._id = task_id
        self._reader = reader
        self._transaction_context = transaction_context
        self._plugin_metrics = plugin_metrics or PluginMetrics({})

    @property
    def plugin_metrics(self) -> PluginMetrics:
        return self._plugin_metrics

    @property
    def task_id(self) -> int:
        return self._id.task

    @property
    def connector_name(self) -> str:
        return self._id.connector

    @property
    def offset_reader(self) -> OffsetReader:
        return self._reader

    @property
    def transaction_context(self) -> TransactionContext | None:
        return self._transaction_context


#: A record the broker refused for good: (its slice's index, its index in the slice, why).
Refusal = tuple[int, int, KafkaFailure]


def check_delivery(results: Sequence[ProduceResult], expected: int) -> list[Refusal]:
    """The records refused for good (only when the slices were written for a task that
    tolerates them, ``errors.tolerance=all``, and every failure is such a refusal). Raises
    DeliveryError unless every slice delivered, or refused, every record."""
    produced = sum(r.produced for r in results)
    errors = sum(r.failed for r in results)
    if produced == expected and all(r.only_refusals for r in results):
        return [(n, index, why) for n, r in enumerate(results) for index, why in r.refused]
    if errors or produced != expected:
        messages = [m for r in results for m in r.messages]
        raise DeliveryError(
            f"{errors} of {expected} records failed delivery ({produced} produced): "
            + "; ".join(messages),
            retriable=all(r.retriable for r in results),
        )
    return []


def commit_dropped(plugin: SourceTask, records: Sequence[SourceRecord], logger: Any) -> None:
    """``commit_record(record, None)`` for each record not written (dropped by the pipeline,
    or refused), as Kafka Connect: a failure is logged and does not fail the task."""
    if type(plugin).commit_record is SourceTask.commit_record:
        return  # the plugin does not listen: no call per record
    for record in records:
        try:
            plugin.commit_record(record, None)
        except Exception:
            logger.warning("source_task_commit_record_failed", exc_info=True)


def skip_refused(
    batch: Batch,
    refused: Sequence[tuple[int, KafkaFailure]],
    pipeline: TaskPipeline | None,
    plugin: SourceTask,
    logger: Any,
) -> None:
    """Skips each outgoing record (by index) the broker refused for good, under
    ``errors.tolerance=all`` (KIP-779): reported and counted by the task's pipeline, the
    plugin's ``commit_record`` told, and its offset committed with the batch's (once the
    dead-letter queue's writes of them are answered: ``TaskPipeline.await_dead_letters``)."""
    if not refused or pipeline is None:
        return
    originals = batch.originals_of([index for index, _ in refused])
    for original, (index, failure) in zip(originals, refused, strict=True):
        topic = batch.outgoing[index].topic
        pipeline.skip_refused(original, topic, RecordRefusedError(failure))
    commit_dropped(plugin, originals, logger)


def delivered_topics(batch: Batch, refused: Sequence[tuple[int, KafkaFailure]]) -> frozenset[str]:
    """The batch's topics less those whose every record the broker refused (by index)."""
    if not refused:
        return batch.topics
    skipped = {index for index, _ in refused}
    return frozenset(r.topic for i, r in enumerate(batch.outgoing) if i not in skipped)


def create_topics(creator: TopicCreator | None, batch: Batch) -> None:
    """Creates the missing topics the batch's records go to, after the transformations
    (KIP-158), before any of them is produced; with exactly-once, outside the batch's
    transaction, as Kafka Connect creates them."""
    if creator is not None:
        creator.ensure(batch.topics)


def notify_commit(plugin: SourceTask, logger: Any) -> None:
    """``SourceTask.commit`` is a notification: as in Kafka Connect, its failure is logged
    and does not fail the task (the offsets are already committed)."""
    try:
        plugin.commit()
    except Exception:
        logger.warning("source_task_commit_failed", exc_info=True)


def poll_batch(plugin: SourceTask, wanted: int, stopping: Callable[[], bool]) -> Batch | None:
    """Polls until the batch is full, the plugin has nothing more for now, or the batch
    has been filling for POLL_LINGER_S. A plugin's own cap per poll (FileStreamSource's
    ``batch.size``) does not cap the batch: each batch costs a Spark job or a round trip."""
    records = list(plugin.poll(wanted))
    if not records:
        return None
    give_up_at = time.monotonic() + POLL_LINGER_S
    while len(records) < wanted and time.monotonic() < give_up_at and not stopping():
        more = plugin.poll(wanted - len(records))
        if not more:
            break
        records.extend(more)
    return Batch(records)


class SourceTaskRunner(TaskRunner):
    """Runs a SourceTask as a loop of poll → produce job → commit offsets."""

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
        handling (None: records go out as polled, the bytes path); with
        ``clients.transactions`` (exactly-once) the task starts once
        ``clients.await_fencing`` returned."""
        self._await_fencing = clients.await_fencing
        self._producer_conf = setup.producer_conf()
        options = for_cluster(options, self._producer_conf, setup.worker_config)
        super().__init__(setup, host, clients, **options)
        self._offsets = clients.offsets()
        self._sizer = BatchSizer.from_config(setup.connector_config)
        self._local_max = setup.worker_config.local_batch_max_records
        self._driver_producer = DriverProducer(self._producer_conf)
        transactions = clients.transactions
        #: Exactly-once: every batch one transaction with its offsets, on the driver.
        self._transactional = (
            None if transactions is None
            else TransactionalProducer(self._producer_conf, transactions)
        )
        #: The batch being moved (kept across retries until its offsets are committed).
        self._pending: Batch | None = None
        self._pipeline_spec = pipeline
        self._pipeline: TaskPipeline | None = None
        self._topic_creation_spec = topic_creation_spec(
            setup.worker_config, setup.connector_config, self._producer_conf, setup.id
        )
        self._topics: TopicCreator | None = None

    def prepare(self) -> None:
        self._topics = start_topic_creation(self._topic_creation_spec, self.id)
        self._pipeline = start_pipeline(
            self._pipeline_spec,
            self.id,
            is_sink=False,
            producer_conf=self._producer_conf,
            sleep=event_sleep(self._stopping),
            stopping=self._stopping.is_set,
        )
        transactional = self._transactional
        if transactional is not None:
            self._await_fencing()
            transactional.claim()  # before reading offsets: see TransactionalProducer
            self._offsets.refresh()
        reader = _OffsetReader(self._offsets, self.id.connector)
        context = None if transactional is None else transactional.boundary.context
        self.plugin.initialize(
            SourceTaskContext(
                self.id, reader, context, self._open_plugin_metrics(self._pipeline)
            )
        )

    def run_batch(self) -> bool:
        try:
            return self._move_batch()
        finally:
            self._count_transaction_commits()
            if self._pipeline is not None:
                self.metrics.add_errors(self._pipeline.take_counts())

    def _move_batch(self) -> bool:
        transactional = self._transactional
        batch = self._pending or self._poll()
        if batch is None:
            if transactional is not None and transactional.idle(self._stopping.is_set):
                notify_commit(self.plugin, self.log)
            return False
        self._pending = batch
        if self._pipeline is not None:
            self._pipeline.await_dead_letters()
        create_topics(self._topics, batch)
        if transactional is not None:
            began = time.monotonic()
            committed = transactional.write(batch.records, self._stopping.is_set, batch.converted)
            self.metrics.written(len(batch.outgoing), time.monotonic() - began, ON_DRIVER)
            self.kafka_ok()
            self.record_topics(batch.topics)
        else:
            if not batch.produced:
                if batch.outgoing:
                    refused = self._produce(batch.outgoing)
                    self.kafka_ok()
                    batch.delivered = delivered_topics(batch, refused)
                    self.record_topics(batch.delivered)
                    skip_refused(batch, refused, self._pipeline, self.plugin, self.log)
                batch.produced = True
                if self._pipeline is not None:  # the refused records' queue writes
                    self._pipeline.await_dead_letters()
            offsets = latest_offsets(batch.outgoing)
            if offsets:
                with self.metrics.offset_commit():
                    self._offsets.put(self.id.connector, offsets)
            committed = True
        self._pending = None
        if committed:
            notify_commit(self.plugin, self.log)
        self._sizer.observe(len(batch.records))
        return True

    def wind_down(self) -> None:
        transactional = self._transactional
        if transactional is None:
            return
        try:
            if transactional.wind_down(self._stopping.is_set):
                notify_commit(self.plugin, self.log)
        finally:
            self._count_transaction_commits()

    def _count_transaction_commits(self) -> None:
        if self._transactional is not None:
            self.metrics.add_commits(self._transactional.commits.take())

    def _poll(self) -> Batch | None:
        batch = poll_batch(self.plugin, self._sizer.size, self._stopping.is_set)
        if batch is None:
            self._sizer.observe(0)
            return None
        self.metrics.polled(len(batch.records))
        batch.through(self._pipeline)
        if self._transactional is None:
            commit_dropped(self.plugin, batch.dropped(), self.log)
        return batch

    def _tolerates_refusals(self) -> bool:
        return self._pipeline is not None and self._pipeline.tolerates_all

    def _produce(self, records: Sequence[SourceRecord]) -> list[tuple[int, KafkaFailure]]:
        """Produces the batch: on the driver when it is too small to pay for a Spark job,
        else as a Spark job over up to ``parallelism`` slices. Returns the records refused
        for good (by index), when the task tolerates them."""
        begun = time.monotonic()
        on_driver = len(records) <= self._local_max
        tolerate = self._tolerates_refusals()
        slices: list[list[int]] = []
        if on_driver:
            producer = self._driver_producer
            results = [producer.produce(records, self._stopping.is_set, tolerate)]
        else:
            results, slices = self._produce_on_spark(records, tolerate)
        refusals = check_delivery(results, len(records))
        refused = [
            (slices[n][index] if slices else index, why) for n, index, why in refusals
        ]
        elapsed = time.monotonic() - begun
        where = ON_DRIVER if on_driver else ON_SPARK_JOB
        self.metrics.written(len(records) - len(refused), elapsed, where)
        self.log.debug(
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
        context = self._spark.context
        count = slice_count(len(records), self._spark.parallelism())
        slices = group_for_slices(records, count)
        produce = functools.partial(produce_slices, self._producer_conf, tolerate=tolerate)
        results: list[ProduceResult] = (
            context.parallelize(slices, len(slices)).mapPartitions(produce).collect()
        )
        members = slice_indexes(records, count) if any(r.refused for r in results) else []
        return results, members

    def close(self) -> None:
        self._driver_producer.close()
        if self._transactional is not None:
            self._transactional.close()
        if self._topics is not None:
            self._topics.close()
        pipeline, self._pipeline = self._pipeline, None
        if pipeline is not None:
            pipeline.close()


