"""A source task's host, in the executor's Python worker (``serving``): the task's record
loop (``source_loop.SourceLoop``) runs here, polling the plugin, running the task's
pipeline and producing each batch with a producer the host keeps until the task stops; the
driver commits the offsets the loop answers with (``source_task.SourceTaskRunner``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import structlog

from connect_grpc.connectors.api import OffsetReader, SourceRecord, SourceTask
from connect_grpc.kernel.domain import OffsetMap, OffsetPrimitive, TaskId
from connect_grpc.metrics.worker_metrics import CommitTally
from connect_grpc.pipeline.spec import PipelineSpec
from connect_grpc.runtime.hosting.link import REFRESH_OFFSETS
from connect_grpc.runtime.hosting.serving import HostSession, HostSite, PluginHost, build
from connect_grpc.runtime.kafka_results import KafkaFailure
from connect_grpc.runtime.produce import DriverProducer
from connect_grpc.runtime.source_batch import check_delivery
from connect_grpc.runtime.source_loop import SourceLoop, SourceMove
from connect_grpc.runtime.topic_creator import TopicCreationSpec
from connect_grpc.runtime.transactions import TransactionalProducer, Transactions

log = structlog.get_logger(__name__)


class _AskingOffsetReader:
    """A hosted task's offset reader: asks the driver, which reads its offset store."""

    def __init__(self, session: HostSession) -> None:
        self._session = session

    def offset(self, partition: OffsetMap) -> dict[str, OffsetPrimitive] | None:
        answer: dict[str, OffsetPrimitive] | None = self._session.ask("offset", dict(partition))
        return answer


class _SourceHostSite(HostSite):
    """The executor as the place a source's loop runs (``source_loop.SourceSite``): offsets
    asked of the driver, records produced with the host's producer, counts handed to the
    driver with the next answer."""

    def __init__(
        self, session: HostSession, task_id: TaskId, plugin: SourceTask, producer: DriverProducer
    ) -> None:
        super().__init__(session, task_id, plugin)
        self._producer = producer
        #: Records polled and written since the last answer (the driver counts them).
        self.polled = 0
        self.written = 0

    def await_fencing(self) -> None:
        return None  # the driver waited before it opened the host

    def refresh_offsets(self) -> None:
        self._session.ask(REFRESH_OFFSETS)

    def offset_reader(self) -> OffsetReader:
        return _AskingOffsetReader(self._session)

    def produce(
        self, records: Sequence[SourceRecord], tolerate: bool
    ) -> list[tuple[int, KafkaFailure]]:
        result = self._producer.produce(records, self.stopping, tolerate)
        refusals = check_delivery([result], len(records))
        self.written += len(records) - len(refusals)
        return [(index, why) for _, index, why in refusals]

    def count_polled(self, records: int) -> None:
        self.polled += records

    def count_written(self, records: int, seconds: float) -> None:
        self.written += records

    def counted(self, moved: SourceMove) -> SourceMove:
        """The answer with the counts since the last one."""
        polled, written, self.polled, self.written = self.polled, self.written, 0, 0
        return replace(moved, polled=polled, written=written)


class SourceHost(PluginHost):
    """A source task in its Spark task (``hosting.serving.serve_host``): its record loop,
    called by the driver's ``source_loop.RemoteSourceLoop``."""

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
        plugin: SourceTask = build(task_class)
        #: At-least-once: the driver commits the offsets after the records are acked.
        producer = DriverProducer(conf)
        #: Exactly-once: each batch one transaction with its offsets (see ``transactions``).
        transactional = (
            None if transactions is None else TransactionalProducer(conf, transactions)
        )
        self._site = _SourceHostSite(session, task_id, plugin, producer)
        self._loop = SourceLoop(
            plugin, task_id, self._site, conf, transactional, pipeline, topic_creation, log
        )
        super().__init__(plugin, self._loop, transactional or producer, self._site)

    def move(self, wanted: int) -> SourceMove:
        """``SourceLoop.move``, with the records polled and written since the last answer."""
        return self._site.counted(self._loop.move(wanted))

    def committed(self) -> None:
        self._loop.committed()

    def wind_down(self) -> CommitTally:
        return self._loop.wind_down()

    def take_commits(self) -> CommitTally:
        return self._loop.take_commits()


#: The factory ``hosting.serving.serve_host`` builds a source task's host with.
SOURCE_HOST = f"{__name__}:{SourceHost.__qualname__}"
