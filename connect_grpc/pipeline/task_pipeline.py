"""A task's record pipeline, applied to each batch where the batch already is (the driver's
loop, or the Spark task hosting the task): never an extra Spark job.

Its records go through its converters and transformations (``record_stages``, on the
transformation stages of ``chain``, with the pass-through converters of ``converting``), a
stage's failure through error handling (``tolerance``, ``dead_letter``); a sink task reports
the records it cannot write through KIP-610's reporter (``errant``). ``start_pipeline``
builds it from its ``spec`` where the task runs.

Offsets, as Kafka Connect: a dropped or failed source record's offset is not committed
(the batch's offsets are those of the records that go out), except with exactly-once, whose
transaction commits the offsets of the whole batch; a skipped sink record still advances
its partition's committed offset (the ranges read are committed whole).

When the pipeline has no converter and no transformation (``is_pass_through``), the task's
runner never runs records through it: records move as bytes on the bytes path, at its
speed (a source task keeps it to skip refused records with, under ``errors.tolerance=all``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import structlog

from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.kernel.domain import TaskId
from connect_grpc.metrics.worker_metrics import ErrorCounts
from connect_grpc.pipeline.build import PipelinePlugins
from connect_grpc.pipeline.dead_letter import (
    DeadLetterQueueReporter,
    SourceRecordSerializer,
    dlq_producer_conf,
    ensure_topic,
)
from connect_grpc.pipeline.errant import ErrantRecordReporter
from connect_grpc.pipeline.record_stages import RecordStages
from connect_grpc.pipeline.spec import PipelineSpec
from connect_grpc.pipeline.tolerance import (
    SINK_TASK_CLASS,
    WORKER_SOURCE_TASK_CLASS,
    ErrorReporter,
    LogReporter,
    ProcessingContext,
    RetryWithToleranceOperator,
    Stage,
)

__all__ = ["TaskPipeline", "start_pipeline"]

log = structlog.get_logger(__name__)


class TaskPipeline(RecordStages):
    """One task's converters, transformations and error handling (operator, log reporter,
    dead-letter queue). Used by the task's one thread; its ``errant`` reporter may be called
    from any of the task plugin's threads."""

    def __init__(
        self,
        task: TaskId,
        plugins: PipelinePlugins,
        *,
        reporters: Sequence[ErrorReporter],
        operator: RetryWithToleranceOperator,
        dead_letters: DeadLetterQueueReporter | None,
    ) -> None:
        self.task = task
        self.counts = operator.counts
        self.dead_letters = dead_letters
        self._reporters = reporters
        super().__init__(plugins, operator)
        self.errant = self._new_errant_reporter()

    @classmethod
    def create(
        cls,
        task: TaskId,
        plugins: PipelinePlugins,
        *,
        is_sink: bool,
        producer_conf: Mapping[str, str],
        sleep: Callable[[int], bool],
        producer_factory: Callable[[Mapping[str, Any]], Any] | None = None,
        stopping: Callable[[], bool] = lambda: False,
    ) -> TaskPipeline:
        """The task's pipeline: Kafka Connect's reporters (the log; a sink's dead-letter
        queue) and, beyond it, a source's dead-letter queue with the same settings.
        ``stopping`` says whether the task is asked to stop (waits for the queue end)."""
        errors = plugins.errors
        counts = ErrorCounts()
        reporters: list[ErrorReporter] = [LogReporter(task, errors, counts)]
        dead_letters = None
        if errors.dlq_topic:
            serializer = (
                None
                if is_sink
                else SourceRecordSerializer(
                    plugins.key_converter, plugins.value_converter, plugins.header_converter
                )
            )
            dead_letters = DeadLetterQueueReporter(
                task,
                errors.dlq_topic,
                dlq_producer_conf(producer_conf, task),
                counts,
                context_headers_enabled=errors.dlq_context_headers,
                serializer=serializer,
                producer_factory=producer_factory,
                stopping=stopping,
            )
            reporters.append(dead_letters)
        operator = RetryWithToleranceOperator(errors, reporters, counts, sleep=sleep)
        return cls(task, plugins, reporters=reporters, operator=operator, dead_letters=dead_letters)

    def open(self, admin_conf: Mapping[str, str]) -> None:
        """Creates the dead-letter queue's topic if absent (the task fails to start when it
        cannot)."""
        dead_letters = self.dead_letters
        if dead_letters is not None:
            errors = self.plugins.errors
            ensure_topic(admin_conf, dead_letters.topic, errors.dlq_replication_factor)

    @property
    def tolerates_all(self) -> bool:
        """``errors.tolerance=all``: a record the broker refuses is skipped (KIP-779)."""
        return self.plugins.errors.tolerate_all

    def skip_refused(self, original: SourceRecord, topic: str, error: BaseException) -> None:
        """A source record the broker refused for good (``errors.tolerance=all``): reported
        at stage KAFKA_PRODUCE with Kafka Connect's WorkerSourceTask as the class, to the
        log and, beyond Kafka Connect, to the source's dead-letter queue (``topic``, the one
        it was meant for, in its ``__connect.errors.topic``), and counted as skipped."""
        context = ProcessingContext(original, target_topic=topic)
        self.operator.skip_failed(context, Stage.KAFKA_PRODUCE, WORKER_SOURCE_TASK_CLASS, error)

    def await_dead_letters(self, partitions: Iterable[tuple[str, int]] | None = None) -> None:
        """Waits (bounded, and not once the task is stopping) for the dead-letter queue's
        writes of records of ``partitions`` (a sink batch's; None: every write so far):
        called before the offsets of the records they came from are committed."""
        if self.dead_letters is not None:
            self.dead_letters.await_writes(partitions)

    def forget_dead_letters(self, partitions: Iterable[tuple[str, int]]) -> None:
        """The task lost ``partitions``: their dead-letter queue writes are not awaited."""
        if self.dead_letters is not None:
            self.dead_letters.forget(partitions)

    def take_counts(self) -> ErrorCounts:
        return self.counts.take()

    def _new_errant_reporter(self) -> ErrantRecordReporter | None:
        """KIP-610's reporter for a sink task's context: None unless the connector has a
        dead-letter queue or logs errors (``errors.log.enable``), as Kafka Connect."""
        errors = self.plugins.errors
        if not errors.dlq_topic and not errors.log_enable:
            return None
        return ErrantRecordReporter(self)

    def report_errant(self, original: SinkRecord, error: BaseException) -> Future[None] | None:
        """Reports a record the sink task could not write (KIP-610) at stage TASK_PUT with
        Kafka Connect's SinkTask as the class: to the log and the dead-letter queue. The
        queue's write (None without a queue). Raises ErrorHandlerError with
        ``errors.tolerance=none``. Called by one thread at a time (the reporter's lock)."""
        context = ProcessingContext(original)
        dead_letters = self.dead_letters
        if dead_letters is not None:
            dead_letters.last_future = None
        self.operator.execute_failed(context, Stage.TASK_PUT, SINK_TASK_CLASS, error)
        return None if dead_letters is None else dead_letters.last_future

    def close(self) -> None:
        self.operator.close()
        self.plugins.close()


def start_pipeline(
    spec: PipelineSpec | None,
    task: TaskId,
    *,
    is_sink: bool,
    producer_conf: Mapping[str, str],
    sleep: Callable[[int], bool],
    stopping: Callable[[], bool] = lambda: False,
) -> TaskPipeline | None:
    """Builds the task's pipeline and creates its dead-letter queue's topic. None when the
    task needs none: no spec, or a pass-through pipeline that neither a sink task can
    report errant records through nor a source task skips refused records with
    (``errors.tolerance=all``); the plugins are then closed at once."""
    if spec is None:
        return None
    plugins = spec.factory()
    errors = plugins.errors
    reports = bool(errors.dlq_topic or errors.log_enable) if is_sink else errors.tolerate_all
    if plugins.is_pass_through() and not reports:
        plugins.close()
        return None
    pipeline = TaskPipeline.create(
        task,
        plugins,
        is_sink=is_sink,
        producer_conf=producer_conf,
        sleep=sleep,
        stopping=stopping,
    )
    try:
        pipeline.open(spec.admin_conf)
    except BaseException:
        pipeline.close()
        raise
    return pipeline
