"""The one record loop of a source task, wherever its plugin runs.

``SourceLoop`` polls the plugin, runs the batch through the task's pipeline, creates its
topics and writes it (produced, or in an exactly-once transaction with its offsets), then
answers a ``SourceMove``: what the task's runner commits and counts. It runs in the
driver's process for a task on the driver (``source_task``) and in an executor's Python
worker for a task hosted there (``hosting.source_host``). What differs between the two
places is behind ``SourceSite``: how a stop is signalled, where offsets are read, where the
records are produced and where their counts go.

The runner (``source_task.SourceTaskRunner``) drives the loop through ``SourceLoopCalls``:
the loop itself on the driver, or ``RemoteSourceLoop``, which makes each call one round
trip to the task's host; so the runner's side (committing offsets, statuses, metrics,
batch sizes) is one piece of code for every host.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from connect_grpc.connectors.api import OffsetReader, SourceRecord, SourceTask
from connect_grpc.kernel.domain import TaskId
from connect_grpc.metrics.worker_metrics import ON_SPARK_TASK, CommitTally, ErrorCounts, TaskMetrics
from connect_grpc.pipeline.spec import PipelineSpec
from connect_grpc.pipeline.task_pipeline import TaskPipeline, start_pipeline
from connect_grpc.runtime.kafka_results import KafkaFailure
from connect_grpc.runtime.source_batch import (
    Batch,
    commit_dropped,
    create_topics,
    delivered_topics,
    notify_commit,
    poll_batch,
    skip_refused,
)
from connect_grpc.runtime.spark_rows import latest_offsets
from connect_grpc.runtime.task_contexts import SourceTaskContext
from connect_grpc.runtime.task_host import LoopSite, RemoteTaskHost
from connect_grpc.runtime.topic_creator import (
    TopicCreationSpec,
    TopicCreator,
    start_topic_creation,
)
from connect_grpc.runtime.transactions import TransactionalProducer
from connect_grpc.storage.base import OffsetEntry

__all__ = [
    "RemoteSourceLoop",
    "SourceLoop",
    "SourceLoopCalls",
    "SourceMove",
    "SourceSite",
]

#: Records the broker refused for good, by their index among a batch's outgoing records.
Refused = Sequence[tuple[int, KafkaFailure]]


@dataclass(frozen=True, slots=True)
class SourceMove:
    """What one turn of a source's loop answers its runner (picklable: a hosted loop's
    answer crosses the task's connection)."""

    #: Records of the batch moved (0: the plugin had nothing to poll).
    records: int
    #: Their latest offsets, for the runner to commit (none with exactly-once: the
    #: batch's transaction holds them).
    offsets: list[OffsetEntry]
    #: The exactly-once transactions committed (or failed) since the last answer.
    commits: CommitTally
    #: The record errors counted since the last answer.
    errors: ErrorCounts = field(default_factory=ErrorCounts)
    #: The topics the batch's records were written to (KIP-558's active topics).
    topics: frozenset[str] = frozenset()
    #: Records polled and written since the last answer that the loop's site could not
    #: count itself (a host's: the driver counts them); 0 where the site counts them.
    polled: int = 0
    written: int = 0


class SourceSite(LoopSite, Protocol):
    """What a source's loop needs of the place it runs in (the driver, or an executor's
    Python worker)."""

    def await_fencing(self) -> None:
        """Exactly-once: returns once the task's transactional id may be claimed."""

    def refresh_offsets(self) -> None:
        """Exactly-once, after the claim: the offsets read from now on are the latest."""

    def offset_reader(self) -> OffsetReader:
        """Where the plugin reads its committed offsets."""

    def produce(self, records: Sequence[SourceRecord], tolerate: bool) -> Refused | None:
        """Produces the records and counts them written; raises ``DeliveryError`` unless
        each was delivered or (with ``tolerate``) refused for good. Returns the refused."""

    def count_polled(self, records: int) -> None:
        """The plugin's ``poll`` returned ``records`` records."""

    def count_written(self, records: int, seconds: float) -> None:
        """A batch's transaction wrote ``records`` records in ``seconds``."""


class SourceLoopCalls(Protocol):
    """What a source's runner calls on its loop, in-process or over a host's connection."""

    def move(self, wanted: int) -> SourceMove:
        """Polls a batch (or takes the one a failure left) and writes it."""

    def committed(self) -> None:
        """At-least-once: the runner committed the last batch's offsets."""

    def wind_down(self) -> CommitTally:
        """Ends the open transaction as its boundary says; the commits since last asked."""

    def take_commits(self) -> CommitTally:
        """The transaction commits counted since the last answer that carried them."""

    def take_errors(self) -> ErrorCounts:
        """The record errors counted since they were last taken."""


class SourceLoop:
    """A source task's record loop, next to its plugin: poll → pipeline → topics → write.

    At-least-once, a batch is kept until the runner says its offsets are committed
    (``committed``), and one whose write failed is written again by the next ``move``
    before the plugin is polled for more. Exactly-once, each batch is written in the
    transactions its boundary says, with its offsets, and the plugin is told of each
    commit here."""

    def __init__(
        self,
        plugin: SourceTask,
        task_id: TaskId,
        site: SourceSite,
        producer_conf: Mapping[str, str],
        transactional: TransactionalProducer | None,
        pipeline: PipelineSpec | None,
        topic_creation: TopicCreationSpec | None,
        logger: Any,
    ) -> None:
        """``transactional`` (exactly-once) is the caller's to close."""
        self._plugin = plugin
        self._id = task_id
        self._site = site
        self._producer_conf = producer_conf
        self._transactional = transactional
        self._pipeline_spec = pipeline
        self._pipeline: TaskPipeline | None = None
        self._topic_creation_spec = topic_creation
        self._topics: TopicCreator | None = None
        self._log = logger
        #: The batch being moved (kept across retries until its offsets are committed).
        self._pending: Batch | None = None

    @property
    def pipeline(self) -> TaskPipeline | None:
        return self._pipeline

    def open(self) -> None:
        """Starts the topic creator and the pipeline, claims the transactional id
        (exactly-once) and initializes the plugin, before its ``start``."""
        site = self._site
        if self._topics is None:
            self._topics = start_topic_creation(self._topic_creation_spec, self._id)
        if self._pipeline is None:
            self._pipeline = start_pipeline(
                self._pipeline_spec,
                self._id,
                is_sink=False,
                producer_conf=self._producer_conf,
                sleep=site.backoff,
                stopping=site.stopping,
            )
        transactional = self._transactional
        if transactional is not None:
            site.await_fencing()
            transactional.claim()  # before reading offsets: see TransactionalProducer
            site.refresh_offsets()
        context = None if transactional is None else transactional.boundary.context
        metrics = site.plugin_metrics(self._pipeline)
        self._plugin.initialize(
            SourceTaskContext(self._id, site.offset_reader(), context, metrics)
        )

    def move(self, wanted: int) -> SourceMove:
        """Polls a batch of up to ``wanted`` records (or takes the one a failure left) and
        writes it: the number of records (0 if idle) and, at-least-once, their latest
        offsets, for the runner to commit (exactly-once: committed by the transactions)."""
        transactional = self._transactional
        stopping = self._site.stopping
        batch = self._pending or self._poll(wanted)
        if batch is None:
            if transactional is not None and transactional.idle(stopping):
                notify_commit(self._plugin, self._log)
            return SourceMove(0, [], self.take_commits(), self.take_errors())
        self._pending = batch
        if self._pipeline is not None:
            self._pipeline.await_dead_letters()
        create_topics(self._topics, batch)
        if transactional is not None:  # the offsets are written by the transaction
            began = time.monotonic()
            committed = transactional.write(batch.records, stopping, batch.converted)
            self._site.count_written(len(batch.outgoing), time.monotonic() - began)
            self._pending = None
            if committed:
                notify_commit(self._plugin, self._log)
            return SourceMove(
                len(batch.records), [], self.take_commits(), self.take_errors(), batch.topics
            )
        if not batch.produced:
            if batch.outgoing:
                refused = self._site.produce(batch.outgoing, self._tolerates_refusals()) or ()
                batch.delivered = delivered_topics(batch, refused)
                skip_refused(batch, refused, self._pipeline, self._plugin, self._log)
            batch.produced = True
            if self._pipeline is not None:  # the refused records' queue writes
                self._pipeline.await_dead_letters()
        return SourceMove(
            len(batch.records),
            latest_offsets(batch.outgoing),
            CommitTally(),
            self.take_errors(),
            batch.delivered,
        )

    def _poll(self, wanted: int) -> Batch | None:
        batch = poll_batch(self._plugin, wanted, self._site.stopping)
        if batch is None:
            return None
        self._site.count_polled(len(batch.records))
        batch.through(self._pipeline)
        if self._transactional is None:
            commit_dropped(self._plugin, batch.dropped(), self._log)
        return batch

    def _tolerates_refusals(self) -> bool:
        return self._pipeline is not None and self._pipeline.tolerates_all

    def committed(self) -> None:
        """The runner committed the batch's offsets: tells the plugin (a failure is logged)."""
        if self._transactional is None:
            self._pending = None
            notify_commit(self._plugin, self._log)

    def wind_down(self) -> CommitTally:
        """The task pauses or stops normally: ends its open transaction as its boundary
        says. Returns the transaction commits since the last answer."""
        if self._transactional is not None and self._transactional.wind_down(
            self._site.stopping
        ):
            notify_commit(self._plugin, self._log)
        return self.take_commits()

    def take_commits(self) -> CommitTally:
        if self._transactional is None:
            return CommitTally()
        return self._transactional.commits.take()

    def take_errors(self) -> ErrorCounts:
        return ErrorCounts() if self._pipeline is None else self._pipeline.take_counts()

    def close(self) -> None:
        """Closes the pipeline and the topic creator (what ``open`` started)."""
        pipeline, self._pipeline = self._pipeline, None
        try:
            if pipeline is not None:
                pipeline.close()
        finally:
            topics, self._topics = self._topics, None
            if topics is not None:
                topics.close()


class RemoteSourceLoop:
    """The driver's end of a source loop that runs in a host of its own (a
    ``RemoteTaskHost``): each call one round trip. The host's counts of records polled
    and written go to the task's metrics, timed by the round trip."""

    def __init__(self, host: RemoteTaskHost, metrics: TaskMetrics) -> None:
        self._host = host
        self._metrics = metrics
        #: Whether the host may hold an open transaction (a batch moved since the last
        #: wind-down): paused turns then skip the round trip.
        self._moved_since_wind_down = False

    def move(self, wanted: int) -> SourceMove:
        began = time.monotonic()
        moved: SourceMove = self._host.call("move", wanted)
        if moved.polled:
            self._metrics.polled(moved.polled)
        if moved.written:
            self._metrics.written(moved.written, time.monotonic() - began, ON_SPARK_TASK)
        if moved.records:
            self._moved_since_wind_down = True
        return moved

    def committed(self) -> None:
        self._host.call("committed")

    def wind_down(self) -> CommitTally:
        if not self._moved_since_wind_down or self._host.broken:
            return CommitTally()
        commits: CommitTally = self._host.call("wind_down")
        self._moved_since_wind_down = False
        return commits

    def take_commits(self) -> CommitTally:
        if self._host.broken:
            return CommitTally()
        commits: CommitTally = self._host.call("take_commits")
        return commits

    def take_errors(self) -> ErrorCounts:
        if self._host.broken:
            return ErrorCounts()
        errors: ErrorCounts = self._host.call("take_errors")
        return errors
