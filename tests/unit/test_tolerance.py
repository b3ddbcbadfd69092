"""RetryWithToleranceOperator and LogReporter: Kafka Connect's retries, back-off, tolerance
per stage, messages, and reporting before the throw (reference §1.4, §1.6)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import structlog

from connect_grpc.connectors.api import SinkRecord, SourceRecord, TimestampType
from connect_grpc.data.errors import DataError, RetriableError
from connect_grpc.kernel.domain import TaskId
from connect_grpc.metrics.worker_metrics import ErrorCounts, WorkerMetrics
from connect_grpc.pipeline.config import ErrorHandling
from connect_grpc.pipeline.tolerance import (
    ErrorHandlerError,
    LogReporter,
    ProcessingContext,
    RetryWithToleranceOperator,
    Stage,
    class_name,
)
from connect_grpc.testing.pipeline_plugins import PoisonTransformation, Utf8Converter

NONE = ErrorHandling(
    retry_timeout_ms=0,
    retry_delay_max_ms=60000,
    tolerate_all=False,
    log_enable=False,
    log_include_messages=False,
    dlq_topic="",
    dlq_replication_factor=3,
    dlq_context_headers=False,
)
ALL = replace(NONE, tolerate_all=True)
TASK = TaskId("conn", 2)


class FakeClock:
    """Milliseconds that pass only when the operator sleeps."""

    def __init__(self) -> None:
        self.now = 0
        self.sleeps: list[int] = []
        self.stop_after: int | None = None

    def sleep(self, ms: int) -> bool:
        self.sleeps.append(ms)
        self.now += ms
        return self.stop_after is not None and len(self.sleeps) >= self.stop_after


class Recorder:
    def __init__(self) -> None:
        self.reported: list[tuple[Stage | None, str, BaseException | None]] = []

    def report(self, context: ProcessingContext) -> None:
        self.reported.append((context.stage, context.executing_class, context.error))

    def close(self) -> None:
        return


def operator(
    errors: ErrorHandling, clock: FakeClock | None = None, reporter: Recorder | None = None
) -> RetryWithToleranceOperator:
    clock = clock or FakeClock()
    return RetryWithToleranceOperator(
        errors,
        [reporter or Recorder()],
        sleep=clock.sleep,
        clock_ms=lambda: clock.now,
        wall_ms=lambda: 1_700_000_000_000,
        random_below=lambda n: n // 2,
    )


def sink_context() -> ProcessingContext:
    return ProcessingContext(SinkRecord("orders", 0, 42, b"k", b"not json", 1_700_000_000_000))


def failing(error: Exception, times: int = -1) -> Any:
    calls = {"n": 0}

    def operation() -> str:
        calls["n"] += 1
        if times < 0 or calls["n"] <= times:
            raise error
        return "ok"

    operation.calls = calls  # type: ignore[attr-defined]
    return operation


def test_success_returns_the_result_and_reports_nothing() -> None:
    reporter = Recorder()
    op = operator(NONE, reporter=reporter)
    assert op.execute(sink_context(), lambda: 7, Stage.VALUE_CONVERTER, Utf8Converter()) == 7
    assert reporter.reported == []
    assert not op.counts


def test_tolerance_none_reports_then_raises_tolerance_exceeded() -> None:
    reporter = Recorder()
    op = operator(NONE, reporter=reporter)
    error = DataError("bad bytes")
    with pytest.raises(ErrorHandlerError, match=r"^Tolerance exceeded in error handler$") as raised:
        op.execute(sink_context(), failing(error), Stage.VALUE_CONVERTER, Utf8Converter())
    assert raised.value.__cause__ is error
    assert reporter.reported == [
        (Stage.VALUE_CONVERTER, "connect_grpc.testing.pipeline_plugins.Utf8Converter", error)
    ]
    assert (op.counts.failures, op.counts.errors, op.counts.skipped) == (1, 1, 0)
    assert op.counts.last_error_ms == 1_700_000_000_000


def test_tolerance_all_skips_a_converter_or_transform_failure() -> None:
    reporter = Recorder()
    op = operator(ALL, reporter=reporter)
    for stage in (Stage.TRANSFORMATION, Stage.KEY_CONVERTER, Stage.HEADER_CONVERTER):
        context = sink_context()
        assert op.execute(context, failing(ValueError("x")), stage, PoisonTransformation()) is None
        assert context.failed
    assert len(reporter.reported) == 3
    assert (op.counts.failures, op.counts.errors, op.counts.skipped) == (3, 3, 3)
    assert op.within_tolerance_limits()


@pytest.mark.parametrize("stage", [Stage.TASK_PUT, Stage.KAFKA_PRODUCE, Stage.TASK_POLL])
def test_other_stages_do_not_tolerate_non_retriable_errors(stage: Stage) -> None:
    reporter = Recorder()
    op = operator(ALL, reporter=reporter)
    with pytest.raises(ErrorHandlerError, match=r"^Unhandled exception in error handler$"):
        op.execute(sink_context(), failing(DataError("x")), stage, "cls")
    assert len(reporter.reported) == 1  # reported before the throw


def test_a_failed_context_skips_later_stages() -> None:
    op = operator(ALL)
    context = sink_context()
    op.execute(context, failing(DataError("x")), Stage.KEY_CONVERTER, "k")
    called: list[int] = []
    assert op.execute(context, lambda: called.append(1), Stage.VALUE_CONVERTER, "v") is None
    assert called == []
    assert context.stage is Stage.VALUE_CONVERTER


def test_retriable_is_retried_with_kafka_backoff_until_the_deadline() -> None:
    clock = FakeClock()
    op = operator(replace(NONE, retry_timeout_ms=6000), clock)
    operation = failing(RetriableError("later"))
    context = sink_context()
    assert op.execute(context, operation, Stage.TRANSFORMATION, "t") is None
    assert clock.sleeps == [300, 600, 1200, 2400, 1500]
    assert operation.calls["n"] == 6
    assert (op.counts.failures, op.counts.retries, op.counts.skipped) == (6, 5, 1)


def test_retriable_that_succeeds_returns_its_result() -> None:
    clock = FakeClock()
    op = operator(replace(NONE, retry_timeout_ms=60000), clock)
    context = sink_context()
    assert op.execute(context, failing(RetriableError("x"), 3), Stage.KEY_CONVERTER, "k") == "ok"
    assert clock.sleeps == [300, 600, 1200]
    assert not context.failed


def test_retried_out_is_skipped_even_with_tolerance_none_but_counts_as_a_failure() -> None:
    reporter = Recorder()
    op = operator(NONE, reporter=reporter)  # errors.retry.timeout 0: no retry
    assert (
        op.execute(sink_context(), failing(RetriableError("x")), Stage.VALUE_CONVERTER, "v") is None
    )
    assert len(reporter.reported) == 1
    with pytest.raises(ErrorHandlerError, match="Tolerance exceeded"):
        op.execute(sink_context(), failing(DataError("y")), Stage.VALUE_CONVERTER, "v")


def test_delay_above_the_maximum_is_random_below_it() -> None:
    clock = FakeClock()
    op = operator(replace(NONE, retry_timeout_ms=100_000, retry_delay_max_ms=1000), clock)
    op.execute(sink_context(), failing(RetriableError("x"), 4), Stage.TRANSFORMATION, "t")
    assert clock.sleeps == [300, 600, 500, 500]  # 1200 and 2400 > 1000: random(0, 1000)


def test_infinite_timeout_retries_until_a_stop_request() -> None:
    clock = FakeClock()
    clock.stop_after = 7
    op = operator(replace(NONE, retry_timeout_ms=-1, retry_delay_max_ms=10**9), clock)
    context = sink_context()
    assert op.execute(context, failing(RetriableError("x")), Stage.TRANSFORMATION, "t") is None
    assert clock.sleeps == [300 << n for n in range(7)]
    assert isinstance(context.error, RetriableError)


def test_execute_failed_reports_and_raises_with_none_only() -> None:
    reporter = Recorder()
    op = operator(ALL, reporter=reporter)
    op.execute_failed(
        sink_context(), Stage.TASK_PUT, "org.apache.kafka.connect.sink.SinkTask", DataError("z")
    )
    assert reporter.reported[0][:2] == (Stage.TASK_PUT, "org.apache.kafka.connect.sink.SinkTask")
    strict = operator(NONE)
    with pytest.raises(ErrorHandlerError, match="Tolerance exceeded"):
        strict.execute_failed(sink_context(), Stage.TASK_PUT, "c", DataError("z"))


def test_class_name_of_a_string_a_class_and_an_instance() -> None:
    assert class_name("a.B") == "a.B"
    assert (
        class_name(Utf8Converter)
        == class_name(Utf8Converter())
        == ("connect_grpc.testing.pipeline_plugins.Utf8Converter")
    )


def failed_context(original: Any, stage: Stage = Stage.VALUE_CONVERTER) -> ProcessingContext:
    context = ProcessingContext(original)
    context.position(stage, "org.apache.kafka.connect.json.JsonConverter")
    context.error = DataError("Converting byte[] to Kafka Connect data failed")
    return context


def test_log_reporter_message_as_kafka_connect() -> None:
    counts = ErrorCounts()
    reporter = LogReporter(TaskId("sink", 0), replace(ALL, log_enable=True), counts)
    context = failed_context(SinkRecord("orders", 0, 42, None, b"not json", 1_700_000_000_000))
    assert reporter.message(context) == (
        "Error encountered in task sink-0. Executing stage 'VALUE_CONVERTER' with class "
        "'org.apache.kafka.connect.json.JsonConverter'."
    )
    detailed = LogReporter(TaskId("sink", 0), replace(ALL, log_include_messages=True), counts)
    assert detailed.message(context).endswith(
        "JsonConverter', where consumed record is {topic='orders', partition=0, offset=42, "
        "timestamp=1700000000000, timestampType=CreateTime}."
    )
    log_append = SinkRecord(
        "orders", 0, 42, None, b"x", 1_700_000_000_000,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
    )
    assert detailed.message(failed_context(log_append)).endswith(
        "offset=42, timestamp=1700000000000, timestampType=LogAppendTime}."
    )
    # no timestamp, or one of no known type: neither is shown, as Kafka Connect
    no_type = TimestampType.NO_TIMESTAMP_TYPE
    for untimed in (
        SinkRecord("orders", 0, 42, None, b"x", None, timestamp_type=no_type),
        SinkRecord("orders", 0, 42, None, b"x", 5, timestamp_type=no_type),
    ):
        assert detailed.message(failed_context(untimed)).endswith(
            "where consumed record is {topic='orders', partition=0, offset=42}."
        )
    source = failed_context(SourceRecord({"f": "a"}, {"position": 3}, "t", "v"))
    assert detailed.message(source).endswith(
        ", where source record is = SourceRecord{sourcePartition={f=a}, sourceOffset={position=3}} "
        "ConnectRecord{topic='t', kafkaPartition=null, key=null, keySchema=null, value=v, "
        "valueSchema=null, timestamp=null, headers=ConnectHeaders(headers=)}."
    )


def test_log_reporter_logs_only_when_enabled_and_counts() -> None:
    counts = ErrorCounts()
    context = failed_context(SinkRecord("orders", 0, 42, None, b"x"))
    with structlog.testing.capture_logs() as logs:
        LogReporter(TASK, ALL, counts).report(context)
        LogReporter(TASK, replace(ALL, log_enable=True), counts).report(context)
    assert [e["event"] for e in logs] == ["record_failed", "record_failure_traceback"]
    assert logs[0]["log_level"] == "error"
    assert logs[0]["message"].startswith("Error encountered in task conn-2.")
    assert counts.logged == 1


def test_error_counts_reach_the_task_error_metrics() -> None:
    metrics = WorkerMetrics()
    task = metrics.task(TASK)
    task.add_errors(
        ErrorCounts(
            failures=3,
            errors=2,
            skipped=2,
            logged=1,
            dlq_requests=2,
            dlq_failures=1,
            last_error_ms=1234,
        )
    )
    labels = {"connector": "conn", "task": "2"}
    sample = metrics.registry.get_sample_value
    assert sample("kafka_connect_task_error_total_record_failures_total", labels) == 3
    assert sample("kafka_connect_task_error_total_record_errors_total", labels) == 2
    assert sample("kafka_connect_task_error_total_records_skipped_total", labels) == 2
    assert sample("kafka_connect_task_error_total_errors_logged_total", labels) == 1
    assert sample("kafka_connect_task_error_deadletterqueue_produce_requests_total", labels) == 2
    assert sample("kafka_connect_task_error_deadletterqueue_produce_failures_total", labels) == 1
    assert sample("kafka_connect_task_error_last_error_timestamp", labels) == 1234
    metrics.forget_task(TASK)
    assert sample("kafka_connect_task_error_total_record_errors_total", labels) is None


def test_exception_class_names_are_kafka_s_for_the_data_room_s_errors() -> None:
    from connect_grpc.pipeline.tolerance import exception_class_name

    assert exception_class_name(DataError("x")) == "org.apache.kafka.connect.errors.DataException"
    assert exception_class_name(RetriableError("x")) == (
        "org.apache.kafka.connect.errors.RetriableException"
    )
    assert exception_class_name(ValueError("x")) == "ValueError"
    assert exception_class_name(ErrorHandlerError("x")) == (
        "org.apache.kafka.connect.errors.ConnectException"
    )


def test_back_off_sleeps_end_early_on_a_stop_request() -> None:
    import threading
    import time

    from connect_grpc.pipeline.tolerance import StopAwareSleep, event_sleep

    stop = threading.Event()
    assert event_sleep(stop)(1) is False
    stop.set()
    began = time.monotonic()
    assert event_sleep(stop)(60_000) is True
    calls = {"n": 0}

    def stopping() -> bool:
        calls["n"] += 1
        return calls["n"] > 1

    assert StopAwareSleep(stopping, slice_s=0.01)(60_000) is True
    assert StopAwareSleep(lambda: False)(1) is False
    assert time.monotonic() - began < 5
