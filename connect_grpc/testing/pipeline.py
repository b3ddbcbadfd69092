"""A connector config's record pipeline run in-process on given records, for unit tests.

``run_source_pipeline`` runs a source connector's transformations (each behind its
predicate) and then its header, key and value converters on records as a task would poll
them; ``run_sink_pipeline`` runs a sink connector's key, value and header converters and
then its transformations on records as a task's consumer reads them (key, value and headers
as bytes). Nothing is written and no worker, broker or Spark is needed.

The pipeline is the task's own (``pipeline.build.build_pipeline`` and
``pipeline.task_pipeline.TaskPipeline``), with the connector's ``errors.*`` handling: a
failure is tolerated (the record skipped) or fails the task as on a worker, and with
``errors.deadletterqueue.topic.name`` the records a task would write to the dead-letter
queue are kept, with their ``__connect.errors.*`` headers, instead of being produced. Two
differences, since a test must neither wait nor stop at the first failure unseen:

- a ``RetriableError`` is not retried: the record ends as it would once
  ``errors.retry.timeout`` ran out;
- when a failure fails the task, the records after it are not run (their results are None)
  and the result says so (``task_failure``), where a worker would fail the task.

Records are run one at a time, in order, through one pipeline: a stateful transformation
sees them as a task would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from connect_grpc.config.worker import WorkerConfig
from connect_grpc.connectors.api import SinkRecord, SourceRecord
from connect_grpc.connectors.plugins import Plugins
from connect_grpc.data.plugins import Transformation
from connect_grpc.kernel.domain import TaskId
from connect_grpc.pipeline.build import PipelinePlugins, TransformStage, build_pipeline
from connect_grpc.pipeline.config import PipelineConfigError
from connect_grpc.pipeline.task_pipeline import TaskPipeline
from connect_grpc.pipeline.tolerance import (
    ErrorHandlerError,
    ProcessingContext,
    exception_class_name,
)
from connect_grpc.pipeline.validation import validate_pipeline

__all__ = [
    "DeadLetter",
    "RecordFailure",
    "SinkPipelineResult",
    "SourcePipelineResult",
    "run_sink_pipeline",
    "run_source_pipeline",
]

#: The worker properties a test need not give: the broker is never contacted.
_WORKER_DEFAULTS = {"bootstrap.servers": "localhost:9092"}
#: The connector name a config without one runs under (it only shows in the log).
_DEFAULT_NAME = "pipeline-test"


@dataclass(frozen=True, slots=True)
class RecordFailure:
    """A record that failed in a stage, as the connector's error handling saw it."""

    #: The failed record's position in the records given.
    index: int
    #: Kafka Connect's name of the stage (``TRANSFORMATION``, ``KEY_CONVERTER``,
    #: ``VALUE_CONVERTER``, ``HEADER_CONVERTER``), as ``__connect.errors.stage`` has it.
    stage: str
    #: The failing plugin's class, as ``__connect.errors.class.name`` has it.
    executing_class: str
    #: The exception's class, as ``__connect.errors.exception.class.name`` has it.
    exception_class: str
    message: str
    #: True: the record was skipped (``errors.tolerance=all``); False: the task fails.
    tolerated: bool
    #: The exception the plugin raised.
    error: BaseException


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A record as the dead-letter queue's producer would write it."""

    topic: str
    key: bytes | None
    value: bytes | None
    #: The record's headers, then the ``__connect.errors.*`` context headers when
    #: ``errors.deadletterqueue.context.headers.enable`` is true.
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp_ms: int | None


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What a run of either side reports besides its records."""

    failures: tuple[RecordFailure, ...]
    dead_letters: tuple[DeadLetter, ...]
    #: ``errors.deadletterqueue.topic.name``, or None when the connector sets none.
    dead_letter_topic: str | None

    @property
    def task_failure(self) -> RecordFailure | None:
        """The failure that fails the task (``errors.tolerance=none``), if one did."""
        return next((f for f in self.failures if not f.tolerated), None)


@dataclass(frozen=True, slots=True)
class SourcePipelineResult(_Outcome):
    """What a source task's pipeline made of each record polled (in the order given)."""

    #: Each record after the transformations and predicates, its data still Connect data;
    #: None where a transformation dropped it or failed it (a record a converter failed is
    #: here, and None in ``produced``).
    transformed: tuple[SourceRecord | None, ...]
    #: Each record as the producer gets it: its key, value and headers converted to bytes;
    #: None where it was dropped or failed.
    produced: tuple[SourceRecord | None, ...]

    @property
    def records(self) -> list[SourceRecord]:
        """The records that go to Kafka, in order."""
        return [record for record in self.produced if record is not None]


@dataclass(frozen=True, slots=True)
class SinkPipelineResult(_Outcome):
    """What a sink task's pipeline made of each record read (in the order given)."""

    #: Each record as the task's ``put`` gets it: converted, then transformed; None where a
    #: transformation dropped it or it failed.
    delivered: tuple[SinkRecord | None, ...]

    @property
    def records(self) -> list[SinkRecord]:
        """The records ``put`` gets, in order."""
        return [record for record in self.delivered if record is not None]


def run_source_pipeline(
    config: Mapping[str, str],
    records: Sequence[SourceRecord],
    *,
    worker_properties: Mapping[str, str] | None = None,
    plugins: Sequence[type] = (),
) -> SourcePipelineResult:
    """Runs a source connector config's transformations, predicates and converters on
    ``records``, as its task would on records it polled.

    Args:
        config: the connector config (its pipeline keys: ``transforms``, ``predicates``,
            the converters, ``errors.*``; other keys are ignored).
        records: the records, as the task's ``poll`` would return them.
        worker_properties: the worker's properties whose converters apply where the config
            sets none (``key.converter``, …) and whose ``plugin.path`` plugins are loaded
            from, as on a worker.
        plugins: transformation, predicate and converter classes the config may name by
            their dotted name (``module.Class``) without a ``plugin.path``.

    Raises:
        PipelineConfigError: a pipeline key is invalid (every error, by key), or a plugin
            failed to be created or configured.
    """
    seen = _Seen()
    with _Run(config, worker_properties, plugins, is_sink=False, last=seen) as run:
        transformed: list[SourceRecord | None] = []
        produced: list[SourceRecord | None] = []
        for index, record in enumerate(records):
            seen.record = None
            [out] = run.each(index, run.pipeline.apply_source, record, [None])
            produced.append(out)
            # set once the record came through every transformation (a converter may still
            # have failed it)
            transformed.append(seen.record)
        return SourcePipelineResult(
            *run.outcome(), transformed=tuple(transformed), produced=tuple(produced)
        )


def run_sink_pipeline(
    config: Mapping[str, str],
    records: Sequence[SinkRecord],
    *,
    worker_properties: Mapping[str, str] | None = None,
    plugins: Sequence[type] = (),
) -> SinkPipelineResult:
    """Runs a sink connector config's converters, transformations and predicates on
    ``records``, as its task would on records its consumer read.

    Args:
        config: the connector config (its pipeline keys; other keys are ignored).
        records: the records as read from Kafka: key, value and header values as bytes
            (``SinkRecord("orders", 0, 42, b"key", b"value")``).
        worker_properties: as :func:`run_source_pipeline`'s.
        plugins: as :func:`run_source_pipeline`'s.

    Raises:
        PipelineConfigError: as :func:`run_source_pipeline`.
    """
    with _Run(config, worker_properties, plugins, is_sink=True) as run:
        delivered: list[SinkRecord | None] = []
        for index, record in enumerate(records):
            out = run.each(index, run.pipeline.apply_sink, record, [])
            delivered.append(out[0] if out else None)
        return SinkPipelineResult(*run.outcome(), delivered=tuple(delivered))


# ---- the run ----------------------------------------------------------------------------


class _Seen(Transformation[SourceRecord]):
    """The last stage of a source run: keeps the record the transformations made, and hands
    it on unchanged (a transformation that cannot fail)."""

    def __init__(self) -> None:
        self.record: SourceRecord | None = None

    def apply(self, record: SourceRecord) -> SourceRecord:
        self.record = record
        return record


class _Failures:
    """A reporter of the task's operator: keeps each failed record's context."""

    def __init__(self) -> None:
        self.contexts: list[ProcessingContext] = []

    def report(self, context: ProcessingContext) -> None:
        self.contexts.append(context)

    def close(self) -> None:
        return


class _DeadLetterProducer:
    """Stands in for the dead-letter queue's producer: keeps what it is given, each write
    acknowledged at once."""

    def __init__(self) -> None:
        self.written: list[DeadLetter] = []

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        *,
        on_delivery: Callable[[Any, Any], None] | None = None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        timestamp: int | None = None,
    ) -> None:
        self.written.append(DeadLetter(topic, key, value, tuple(headers), timestamp))
        if on_delivery is not None:
            on_delivery(None, None)

    def poll(self, timeout: float = 0) -> int:
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0

    def purge(self) -> None:
        return


def _never_retry(delay_ms: int) -> bool:
    return True  # "the task is stopping": a retriable failure ends at once


class _Run:
    """One pipeline built from the config, run record by record, closed at the end."""

    def __init__(
        self,
        config: Mapping[str, str],
        worker_properties: Mapping[str, str] | None,
        plugin_classes: Sequence[type],
        *,
        is_sink: bool,
        last: Transformation[Any] | None = None,
    ) -> None:
        worker = WorkerConfig.from_properties({**_WORKER_DEFAULTS, **(worker_properties or {})})
        plugins = Plugins(worker.plugin_path, registered=plugin_classes)
        # What a create would refuse, refused here too, every error at once.
        errors = [
            f"{key}: {' '.join(messages)}"
            for key, messages in validate_pipeline(config, plugins).errors.items()
            if messages
        ]
        if errors:
            raise PipelineConfigError("; ".join(errors))
        built = build_pipeline(config, worker, plugins, is_sink=is_sink)
        if last is not None:
            built = _with_last_stage(built, last)
        self._producer = _DeadLetterProducer()
        self._failures = _Failures()
        self.pipeline = TaskPipeline.create(
            TaskId(config.get("name", _DEFAULT_NAME), 0),
            built,
            is_sink=is_sink,
            producer_conf={},
            sleep=_never_retry,
            producer_factory=lambda conf: self._producer,
        )
        operator = self.pipeline.operator
        operator.reporters = [*operator.reporters, self._failures]
        self._recorded: list[RecordFailure] = []
        self._failed = False

    def __enter__(self) -> _Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pipeline.close()

    def each(
        self, index: int, apply: Callable[[list[Any]], list[Any]], record: Any, none: list[Any]
    ) -> list[Any]:
        """``apply``'s result for ``record``, the one at ``index``; ``none`` once the task
        failed."""
        if self._failed:
            return none
        before = len(self._failures.contexts)
        try:
            result = apply([record])
        except ErrorHandlerError:
            self._failed = True
            result = none
        for context in self._failures.contexts[before:]:
            self._recorded.append(_failure(index, context, tolerated=not self._failed))
        return result

    def outcome(self) -> tuple[tuple[RecordFailure, ...], tuple[DeadLetter, ...], str | None]:
        topic = self.pipeline.plugins.errors.dlq_topic or None
        return tuple(self._recorded), tuple(self._producer.written), topic


def _with_last_stage(built: PipelinePlugins, last: Transformation[Any]) -> PipelinePlugins:
    stage = TransformStage("", last, None, False)
    return replace(built, stages=[*built.stages, stage])


def _failure(index: int, context: ProcessingContext, *, tolerated: bool) -> RecordFailure:
    error = context.error
    assert error is not None and context.stage is not None
    return RecordFailure(
        index,
        context.stage.value,
        context.executing_class,
        exception_class_name(error),
        str(error),
        tolerated,
        error,
    )
