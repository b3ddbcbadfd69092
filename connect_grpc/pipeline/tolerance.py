"""Error handling of the record pipeline (KIP-298), as Kafka Connect's
RetryWithToleranceOperator: every converter and transformation call of a record runs
through one operator, which retries ``RetriableError`` within ``errors.retry.timeout``,
tolerates failures as ``errors.tolerance`` says for the stage, and hands each failed record
to the task's reporters (the log, the dead-letter queue) before anything is thrown.

Pure of I/O but for the reporters it is given; time and sleep are injected for tests.
"""

from __future__ import annotations

import enum
import importlib
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import structlog

from connect_grpc.connectors.api import SinkRecord, SourceRecord, TimestampType
from connect_grpc.data.errors import DataError, RetriableError, SchemaBuilderError
from connect_grpc.kernel.domain import TaskId
from connect_grpc.kernel.errors import ConnectError
from connect_grpc.kernel.traces import summary
from connect_grpc.metrics.worker_metrics import ErrorCounts
from connect_grpc.pipeline.config import ErrorHandling

log = structlog.get_logger(__name__)

T = TypeVar("T")

#: The first retry's delay; attempt n waits ``RETRIES_DELAY_MIN_MS << (n - 1)``.
RETRIES_DELAY_MIN_MS = 300

TOLERANCE_EXCEEDED = "Tolerance exceeded in error handler"
UNHANDLED = "Unhandled exception in error handler"


class Stage(enum.Enum):
    """Where in the pipeline a record failed (Kafka Connect's names, which the
    ``__connect.errors.stage`` header and the log carry)."""

    TASK_POLL = "TASK_POLL"
    TASK_PUT = "TASK_PUT"
    TRANSFORMATION = "TRANSFORMATION"
    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    KAFKA_PRODUCE = "KAFKA_PRODUCE"
    KAFKA_CONSUME = "KAFKA_CONSUME"


#: Stages where ``errors.tolerance=all`` tolerates any exception; elsewhere only a
#: RetriableError is tolerated.
TOLERATES_ANY = frozenset(
    {Stage.TRANSFORMATION, Stage.KEY_CONVERTER, Stage.VALUE_CONVERTER, Stage.HEADER_CONVERTER}
)

#: The class Kafka Connect names for records an ErrantRecordReporter reports.
SINK_TASK_CLASS = "org.apache.kafka.connect.sink.SinkTask"
#: The class Kafka Connect names for source records the broker refused (KIP-779).
WORKER_SOURCE_TASK_CLASS = "org.apache.kafka.connect.runtime.WorkerSourceTask"


class ErrorHandlerError(ConnectError):
    """The pipeline's error handler gave up on a record: the task fails with it (its cause is
    the plugin's own exception), as Kafka Connect's ConnectException."""

    reason = "ERROR_HANDLER"


#: The record a failure is about: the raw record read (sink) or the record the task polled
#: (source), before any conversion or transformation.
OriginalRecord = SinkRecord | SourceRecord


@dataclass(slots=True)
class ProcessingContext:
    """One record's way through the pipeline: where it is, and the failure that ended it."""

    original: OriginalRecord
    stage: Stage | None = None
    executing_class: str = ""
    error: BaseException | None = None
    attempts: int = 0
    #: Source records: the topic the record was meant for (after transforms, if they ran).
    target_topic: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None

    def position(self, stage: Stage, executing: object) -> None:
        self.stage = stage
        self.executing_class = class_name(executing)


class ErrorReporter(Protocol):
    """Told about every record that failed (Kafka Connect's ErrorReporter)."""

    def report(self, context: ProcessingContext) -> object:
        """Handles one failed record (what it returns is the reporter's own business)."""

    def close(self) -> None: ...


# ---- class names as Kafka Connect prints them ---------------------------------------------

_BUILTIN_REGISTRIES = (
    ("connect_grpc.data.converters", "BUILTIN_CONVERTERS"),
    ("connect_grpc.data.transforms", "BUILTIN_TRANSFORMS"),
    ("connect_grpc.data.predicates", "BUILTIN_PREDICATES"),
)
_kafka_names: dict[type, str] | None = None
_kafka_names_lock = threading.Lock()


def _builtin_names() -> dict[type, str]:
    """Each built-in plugin class → its Kafka Connect class name (read once)."""
    global _kafka_names
    names = _kafka_names
    if names is not None:
        return names
    with _kafka_names_lock:
        if _kafka_names is None:
            found: dict[type, str] = {}
            for module_name, registry in _BUILTIN_REGISTRIES:
                try:
                    module = importlib.import_module(module_name)
                except ImportError:  # the data room's plugins are optional to the runtime
                    continue
                for kafka_name, cls in getattr(module, registry, {}).items():
                    found.setdefault(cls, kafka_name)
            _kafka_names = found
        return _kafka_names


def class_name(executing: object) -> str:
    """The name of the class a stage ran: a string as it is, a built-in plugin by Kafka
    Connect's class name, any other class (or instance) as ``module.QualName``."""
    if isinstance(executing, str):
        return executing
    cls = executing if isinstance(executing, type) else type(executing)
    builtin = _builtin_names().get(cls)
    if builtin is not None:
        return builtin
    return f"{cls.__module__}.{cls.__qualname__}"


#: The data room's errors by the names of the Kafka Connect exceptions they stand for, as
#: ``__connect.errors.exception.class.name`` shows them (a tool filtering a dead-letter
#: queue on Kafka's names keeps working).
KAFKA_EXCEPTION_NAMES: dict[type, str] = {
    DataError: "org.apache.kafka.connect.errors.DataException",
    SchemaBuilderError: "org.apache.kafka.connect.errors.SchemaBuilderException",
    RetriableError: "org.apache.kafka.connect.errors.RetriableException",
    ErrorHandlerError: "org.apache.kafka.connect.errors.ConnectException",
}


def exception_class_name(error: BaseException) -> str:
    """Kafka Connect's name for the data room's own errors, else ``module.QualName``."""
    cls = type(error)
    kafka_name = KAFKA_EXCEPTION_NAMES.get(cls)
    if kafka_name is not None:
        return kafka_name
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


# ---- the operator -------------------------------------------------------------------------


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class StopAwareSleep:
    """Sleeps for a back-off unless the task is stopping; tells whether it was asked to."""

    def __init__(self, stopping: Callable[[], bool], slice_s: float = 0.1) -> None:
        self._stopping = stopping
        self._slice_s = slice_s

    def __call__(self, delay_ms: int) -> bool:
        end = time.monotonic() + delay_ms / 1000
        while not self._stopping():
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, self._slice_s))
        return True


def _plain_sleep(delay_ms: int) -> bool:
    time.sleep(delay_ms / 1000)
    return False


def event_sleep(event: threading.Event) -> Callable[[int], bool]:
    """A back-off that ends early when ``event`` (the task's stop request) is set."""
    return lambda delay_ms: event.wait(delay_ms / 1000)


@dataclass
class RetryWithToleranceOperator:
    """Runs a record's pipeline stages with retries and tolerance; one per task (its count
    of failures, which ``errors.tolerance=none`` checks, never resets).

    ``sleep(ms)`` backs off and returns True if the task was asked to stop meanwhile (the
    record then fails with its last error); ``clock_ms`` is a monotonic clock in ms.
    """

    errors: ErrorHandling
    reporters: Sequence[ErrorReporter]
    counts: ErrorCounts = field(default_factory=ErrorCounts)
    sleep: Callable[[int], bool] = field(default=lambda ms: _plain_sleep(ms))
    clock_ms: Callable[[], int] = field(default=lambda: time.monotonic_ns() // 1_000_000)
    wall_ms: Callable[[], int] = wall_clock_ms
    random_below: Callable[[int], int] = field(default=lambda n: random.randrange(max(n, 1)))
    total_failures: int = 0

    def execute(
        self,
        context: ProcessingContext,
        operation: Callable[[], T],
        stage: Stage,
        executing: object,
    ) -> T | None:
        """The operation's result; None if the record failed (and was tolerated, or retried
        out). Raises ErrorHandlerError when the failure is not tolerated, after reporting.
        ``executing`` names the stage's class (a str as it is, else ``class_name``)."""
        context.stage = stage
        context.executing_class = executing if isinstance(executing, str) else class_name(executing)
        if context.error is not None:
            return None
        try:  # the path of every record that does not fail: one call, nothing else
            return operation()
        except Exception as error:
            first = error
        return self.after_failure(context, operation, stage, first)

    def after_failure(
        self,
        context: ProcessingContext,
        operation: Callable[[], T],
        stage: Stage,
        first: Exception,
    ) -> T | None:
        """What ``execute`` does once the operation raised ``first`` (the context positioned
        at the stage): retries, tolerates or raises, and reports a record that failed. For
        callers that ran the operation themselves (a pipeline's fast path)."""
        try:
            return self._exec_and_handle_error(context, operation, stage, first)
        finally:
            if context.failed:
                self.counts.errors += 1
                self._report(context)

    def execute_failed(
        self, context: ProcessingContext, stage: Stage, executing: object, error: BaseException
    ) -> None:
        """A record failed outside ``execute`` (an errant record a sink task reports, a
        failed write): marks it failed, reports it, and raises ErrorHandlerError
        ("Tolerance exceeded…") with ``errors.tolerance=none``."""
        self._mark_failed()
        context.position(stage, executing)
        context.error = error
        self.counts.errors += 1
        self._report(context)
        if not self.errors.tolerate_all:
            raise ErrorHandlerError(TOLERANCE_EXCEEDED) from error

    def skip_failed(
        self, context: ProcessingContext, stage: Stage, executing: object, error: BaseException
    ) -> None:
        """A record that failed outside ``execute`` and is skipped (a write the broker
        refused under ``errors.tolerance=all``, KIP-779): reported as ``execute_failed``
        reports, and counted as a failed attempt and a skipped record as well as an error
        (Kafka Connect counts the failed attempt only; here it counts as any record a
        tolerated failure skips). Raises ErrorHandlerError with ``errors.tolerance=none``."""
        self.counts.failures += 1
        self.execute_failed(context, stage, executing, error)
        self.counts.skipped += 1

    def within_tolerance_limits(self) -> bool:
        return self.errors.tolerate_all or self.total_failures == 0

    def _exec_and_handle_error(
        self,
        context: ProcessingContext,
        operation: Callable[[], T],
        stage: Stage,
        first: Exception,
    ) -> T | None:
        try:
            result = self._exec_and_retry(context, operation, first)
        except Exception as error:
            self.counts.failures += 1
            self._mark_failed()
            context.error = error
            if stage not in TOLERATES_ANY and not isinstance(error, RetriableError):
                raise ErrorHandlerError(UNHANDLED) from error
            if not self.within_tolerance_limits():
                raise ErrorHandlerError(TOLERANCE_EXCEEDED) from error
            self.counts.skipped += 1
            return None
        if context.failed:  # retried out: skipped whatever the tolerance (as Kafka Connect)
            self._mark_failed()
            self.counts.skipped += 1
        return result

    def _exec_and_retry(
        self, context: ProcessingContext, operation: Callable[[], T], first: Exception
    ) -> T | None:
        """After the operation's ``first`` failure: retries a RetriableError within
        ``errors.retry.timeout``, counted from the first failure (Kafka counts from the first
        attempt's start: the difference is that one call, which keeps the clock off the path
        of records that do not fail); re-raises any other error."""
        retry_timeout = self.errors.retry_timeout_ms
        start = self.clock_ms()
        deadline = None if retry_timeout < 0 else start + retry_timeout
        error, attempt = first, 1
        while True:
            context.attempts = attempt
            if not isinstance(error, RetriableError):
                raise error
            self.counts.failures += 1
            if deadline is not None and self.clock_ms() - start >= retry_timeout:
                context.error = error
                return None
            if self.sleep(self._backoff_ms(attempt, deadline)):
                context.error = error  # the task is stopping
                return None
            self.counts.retries += 1
            attempt += 1
            try:
                return operation()
            except Exception as exc:
                error = exc

    def _backoff_ms(self, attempt: int, deadline: int | None) -> int:
        delay = RETRIES_DELAY_MIN_MS << (attempt - 1)
        max_delay = self.errors.retry_delay_max_ms
        if delay > max_delay:
            delay = self.random_below(max_delay)
        if deadline is not None:
            delay = min(delay, deadline - self.clock_ms())
        return max(delay, 0)

    def _mark_failed(self) -> None:
        self.total_failures += 1
        self.counts.last_error_ms = self.wall_ms()

    def _report(self, context: ProcessingContext) -> None:
        for reporter in self.reporters:
            reporter.report(context)

    def close(self) -> None:
        for reporter in self.reporters:
            try:
                reporter.close()
            except Exception:
                log.warning("error_reporter_close_failed", exc_info=True)


# ---- the log reporter ---------------------------------------------------------------------


class LogReporter:
    """Logs every failed record at ERROR (``errors.log.enable``) in Kafka Connect's words,
    the task, the stage and its class, with the exception summed up on the same line
    (``error``: its type and message, and its root cause's); the record itself is described
    only with ``errors.log.include.messages``. Resolved secret values are masked by the log
    pipeline.

    Kafka Connect's line carries the exception's stack trace; here the traceback is a
    DEBUG event of its own (``record_failure_traceback``, this module's logger): one failed
    record of thousands must not cost a screen of log, and a traceback of the record's
    processing can quote the record, which a user who left include.messages off did not
    ask to see."""

    def __init__(self, task: TaskId, errors: ErrorHandling, counts: ErrorCounts) -> None:
        self._task = task
        self._errors = errors
        self._counts = counts
        self._log = log.bind(connector=task.connector, task=task.task)

    def report(self, context: ProcessingContext) -> None:
        if not self._errors.log_enable or context.error is None:
            return
        self._counts.logged += 1
        self._log.error(
            "record_failed",
            message=self.message(context),
            stage=context.stage.name if context.stage else "",
            executing_class=context.executing_class,
            error=summary(context.error),
        )
        self._log.debug("record_failure_traceback", exc_info=context.error)

    def message(self, context: ProcessingContext) -> str:
        stage = context.stage.name if context.stage else ""
        details = self._details(context.original) if self._errors.log_include_messages else ""
        return (
            f"Error encountered in task {self._task.connector}-{self._task.task}. "
            f"Executing stage '{stage}' with class '{context.executing_class}'{details}."
        )

    @staticmethod
    def _details(original: OriginalRecord) -> str:
        if isinstance(original, SinkRecord):
            return f", where consumed record is {describe_consumed(original)}"
        return f", where source record is = {describe_source(original)}"

    def close(self) -> None:
        return


def describe_consumed(record: SinkRecord) -> str:
    """A consumed record as Kafka Connect's log line shows it: its timestamp and the
    timestamp's type only for a create or log-append time."""
    text = (
        f"{{topic='{record.topic}', partition={record.kafka_partition}, "
        f"offset={record.kafka_offset}"
    )
    timestamp_type = record.timestamp_type
    if record.timestamp_ms is not None and timestamp_type is not TimestampType.NO_TIMESTAMP_TYPE:
        text += f", timestamp={record.timestamp_ms}, timestampType={timestamp_type.value}"
    return text + "}"


def describe_source(record: SourceRecord) -> str:
    """A source record in the shape of Kafka Connect's SourceRecord.toString."""
    return (
        f"SourceRecord{{sourcePartition={_java_map(record.source_partition)}, "
        f"sourceOffset={_java_map(record.source_offset)}}} "
        f"ConnectRecord{{topic='{record.topic}', kafkaPartition={_java(record.kafka_partition)}, "
        f"key={_java(record.key)}, keySchema={_java(record.key_schema)}, "
        f"value={_java(record.value)}, valueSchema={_java(record.value_schema)}, "
        f"timestamp={_java(record.timestamp_ms)}, headers={_headers_text(record.headers)}}}"
    )


def _java(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return _java_map(value)
    return str(value)


def _java_map(mapping: Any) -> str:
    return "{" + ", ".join(f"{k}={_java(v)}" for k, v in dict(mapping).items()) + "}"


def _headers_text(headers: Any) -> str:
    pairs = ", ".join(f"{key}={_java(value)}" for key, value in headers)
    return f"ConnectHeaders(headers={pairs})"
