"""A source task's host, in the executor's Python worker (``serving``): polls its plugin,
runs the task's pipeline and produces each batch with a producer it keeps until the task
stops; the driver commits the offsets it answers with (``source_hosted``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import structlog

from connect_grpc.connectors.api import SourceTask
from connect_grpc.kernel.domain import OffsetMap, OffsetPrimitive, TaskId
from connect_grpc.metrics.worker_metrics import CommitTally, ErrorCounts
from connect_grpc.pipeline.spec import PipelineSpec
from connect_grpc.pipeline.task_pipeline import TaskPipeline, start_pipeline
from connect_grpc.pipeline.tolerance import StopAwareSleep
from connect_grpc.runtime.hosting.link import REFRESH_OFFSETS
from connect_grpc.runtime.hosting.plugin_metrics import monitor_hosted
from connect_grpc.runtime.hosting.serving import HostSession, PluginHost, build
from connect_grpc.runtime.produce import DriverProducer
from connect_grpc.runtime.source_task import (
    Batch,
    SourceTaskContext,
    check_delivery,
    commit_dropped,
    create_topics,
    delivered_topics,
    notify_commit,
    poll_batch,
    skip_refused,
)
from connect_grpc.runtime.spark_rows import latest_offsets
from connect_grpc.runtime.topic_creator import (
    TopicCreationSpec,
    TopicCreator,
    start_topic_creation,
)
from connect_grpc.runtime.transactions import TransactionalProducer, Transactions
from connect_grpc.storage.base import OffsetEntry

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class HostedBatch:
    """What a hosted source's ``move`` answers the driver (picklable)."""

    #: Records polled and written (0: the plugin had nothing to poll).
    records: int
    #: Their latest offsets, for the driver to commit (none with exactly-once: the
    #: batch's transaction holds them).
    offsets: list[OffsetEntry]
    #: The exactly-once transactions committed (or failed) since the last answer.
    commits: CommitTally
    #: The record errors counted since the last answer.
    errors: ErrorCounts = field(default_factory=ErrorCounts)
    #: The topics the batch's records were written to (KIP-558's active topics).
    topics: frozenset[str] = frozenset()


class _AskingOffsetReader:
    """A hosted task's offset reader: asks the driver, which reads its offset store."""

    def __init__(self, session: HostSession) -> None:
        self._session = session

    def offset(self, partition: OffsetMap) -> dict[str, OffsetPrimitive] | None:
        answer: dict[str, OffsetPrimitive] | None = self._session.ask("offset", dict(partition))
        return answer


class SourceHost(PluginHost):
    """A source task in its Spark task (``hosting.serving.serve_host``): polls its plugin and
    produces each batch with a producer it keeps until the task stops."""

    def __init__(
        self,
        session: HostSession,
        task_class: str,
        task_id: TaskId,
        conf: Mapping[str, str],
        transactions: Transactions | None = None,
        pipeline: PipelineSpec | None = None,
        topic_creation: TopicCreationSpec | None = None,
    ) -> None:
        self._session = session
        self._topic_creation_spec = topic_creation
        self._topics: TopicCreator | None = None
        self._id = task_id
        self._conf = conf
        self._pipeline_spec = pipeline
        self._pipeline: TaskPipeline | None = None
        self._plugin: SourceTask = build(task_class)
        #: At-least-once: the driver commits the offsets after the records are acked.
        self._producer = DriverProducer(conf)
        #: Exactly-once: each batch one transaction with its offsets (see ``transactions``).
        self._transactional = (
            None if transactions is None else TransactionalProducer(conf, transactions)
        )
        super().__init__(self._plugin, self._transactional or self._producer)
        self._pending: Batch | None = None

    def start(self, config: Mapping[str, str]) -> None:
        if self._topics is None:
            self._topics = start_topic_creation(self._topic_creation_spec, self._id)
        if self._pipeline is None:
            self._pipeline = start_pipeline(
                self._pipeline_spec,
                self._id,
                is_sink=False,
                producer_conf=self._conf,
                sleep=StopAwareSleep(self._session.stopping),
                stopping=self._session.stopping,
            )
            monitor_hosted(self._pipeline, self._id)
        transactional = self._transactional
        if transactional is not None:
            transactional.claim()  # before reading offsets: see TransactionalProducer
            self._session.ask(REFRESH_OFFSETS)
        reader = _AskingOffsetReader(self._session)
        context = None if transactional is None else transactional.boundary.context
        self._plugin.initialize(SourceTaskContext(self._id, reader, context))
        self._plugin.start(config)

    def move(self, wanted: int) -> HostedBatch:
        """Polls a batch (or takes the one a failure left) and writes it: the number of
        records (0 if idle) and their latest offsets, to be committed by the driver
        (exactly-once: committed by the task's transactions, and the plugin told here)."""
        transactional = self._transactional
        batch = self._pending or self._poll(wanted)
        if batch is None:
            if transactional is not None and transactional.idle(self._session.stopping):
                notify_commit(self._plugin, log)
            return HostedBatch(0, [], self.take_commits(), self.take_errors())
        self._pending = batch
        if self._pipeline is not None:
            self._pipeline.await_dead_letters()
        create_topics(self._topics, batch)
        stopping = self._session.stopping
        if transactional is not None:  # the offsets are written by the transaction
            if transactional.write(batch.records, stopping, batch.converted):
                notify_commit(self._plugin, log)
            self._pending = None
            return HostedBatch(
                len(batch.records), [], self.take_commits(), self.take_errors(), batch.topics
            )
        if not batch.produced:
            if batch.outgoing:
                pipeline = self._pipeline
                tolerate = pipeline is not None and pipeline.tolerates_all
                result = self._producer.produce(batch.outgoing, stopping, tolerate)
                refusals = check_delivery([result], len(batch.outgoing))
                refused = [(index, why) for _, index, why in refusals]
                batch.delivered = delivered_topics(batch, refused)
                skip_refused(batch, refused, pipeline, self._plugin, log)
            batch.produced = True
            if self._pipeline is not None:  # the refused records' queue writes
                self._pipeline.await_dead_letters()
        offsets = latest_offsets(batch.outgoing)
        return HostedBatch(
            len(batch.records), offsets, CommitTally(), self.take_errors(), batch.delivered
        )

    def _poll(self, wanted: int) -> Batch | None:
        batch = poll_batch(self._plugin, wanted, self._session.stopping)
        if batch is None:
            return None
        batch.through(self._pipeline)
        if self._transactional is None:
            commit_dropped(self._plugin, batch.dropped(), log)
        return batch

    def take_errors(self) -> ErrorCounts:
        """The record errors counted since they were last taken."""
        return ErrorCounts() if self._pipeline is None else self._pipeline.take_counts()

    def stop(self, connector_deleted: bool) -> None:
        try:
            super().stop(connector_deleted)
        finally:
            pipeline, self._pipeline = self._pipeline, None
            if pipeline is not None:
                pipeline.close()
            if self._topics is not None:
                self._topics.close()

    def take_commits(self) -> CommitTally:
        """The exactly-once transaction commits since the last answer that carried them."""
        if self._transactional is None:
            return CommitTally()
        return self._transactional.commits.take()

    def committed(self) -> None:
        """The driver committed the batch's offsets: tells the plugin (a failure is logged)."""
        if self._transactional is None:
            self._pending = None
            notify_commit(self._plugin, log)

    def wind_down(self) -> CommitTally:
        """The task pauses or stops normally: ends its open transaction as its boundary
        says. Returns the transaction commits since the last answer."""
        if self._transactional is not None and self._transactional.wind_down(
            self._session.stopping
        ):
            notify_commit(self._plugin, log)
        return self.take_commits()


#: The factory ``hosting.serving.serve_host`` builds a source task's host with.
SOURCE_HOST = f"{__name__}:{SourceHost.__qualname__}"
