"""A failed task's status trace opens on one line naming the failure and its root cause
(``Tolerance exceeded in error handler: <type>: <message>``), whether the task runs on the
driver or in a host (whose trace crosses a connection as text), with a short traceback
below it and no local variables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from connect_grpc.connectors.api import SinkRecord
from connect_grpc.kernel.domain import State
from connect_grpc.kernel.traces import MAX_FRAMES, headline, root_cause, status_trace, summary
from connect_grpc.pipeline.config import ErrorHandling
from connect_grpc.pipeline.tolerance import (
    ErrorHandlerError,
    ProcessingContext,
    RetryWithToleranceOperator,
    Stage,
)
from connect_grpc.runtime.hosting.jobs import HostedTaskError, hosted_error
from connect_grpc.testing.pipeline_plugins import PickyBytesConverter
from tests.unit.test_task_retry import (  # noqa: F401 (the fixture)
    FAST,
    ScriptedRunner,
    runners,
    start,
    transient,
    wait_for,
)

ROOT = "connect_grpc.data.errors.DataError: PickyBytesConverter refuses a poisoned value"
TOLERANCE_LINE = f"Tolerance exceeded in error handler: {ROOT}"
RECORD_BYTES = b"poison-RECORD-BYTES-7f3a"

NONE = ErrorHandling(
    retry_timeout_ms=0, retry_delay_max_ms=60000, tolerate_all=False, log_enable=False,
    log_include_messages=False, dlq_topic="", dlq_replication_factor=3,
    dlq_context_headers=False,
)


def tolerance_exceeded() -> ErrorHandlerError:
    """What the pipeline raises for a record a real converter refused, tolerance none."""
    operator = RetryWithToleranceOperator(NONE, [])
    record = SinkRecord("orders", 0, 7, None, RECORD_BYTES)
    converter = PickyBytesConverter()
    try:
        operator.execute(
            ProcessingContext(record),
            lambda: converter.to_connect_data("orders", None, record.value),
            Stage.VALUE_CONVERTER,
            converter,
        )
    except ErrorHandlerError as error:
        return error
    raise AssertionError("the converter accepted a poisoned value")


def test_the_first_line_names_the_wrapper_and_its_root_cause() -> None:
    error = tolerance_exceeded()
    assert str(root_cause(error)) == "PickyBytesConverter refuses a poisoned value"
    assert headline(error) == TOLERANCE_LINE
    trace = status_trace(error)
    first, rest = trace.split("\n", 1)
    assert first == TOLERANCE_LINE
    # the chain below it, cause first, as Python prints it; no frame's locals
    assert "Traceback (most recent call last)" in rest
    assert rest.index(ROOT) < rest.index("ErrorHandlerError: Tolerance exceeded")
    assert RECORD_BYTES.decode() not in trace
    assert summary(error) == (
        f"connect_grpc.pipeline.tolerance.ErrorHandlerError: {TOLERANCE_LINE}"
    )


def test_an_error_without_a_cause_shows_its_type_and_message() -> None:
    assert headline(ValueError("bad value")) == "ValueError: bad value"
    assert headline(KeyError()) == "KeyError"
    assert status_trace(RuntimeError("x"), "The task's loop ended").startswith(
        "The task's loop ended: RuntimeError: x\n"
    )


def test_a_deep_stack_is_cut_to_its_innermost_frames() -> None:
    # 30 distinct functions, each calling the next: Python folds repeated frames itself
    source = "def f30():\n    raise ValueError('deep')\n" + "".join(
        f"def f{n}():\n    f{n + 1}()\n" for n in range(30)
    )
    scope: dict[str, Any] = {}
    exec(compile(source, "<deep>", "exec"), scope)
    try:
        scope["f0"]()
    except ValueError as error:
        trace = status_trace(error)
    assert trace.count('  File "') == MAX_FRAMES
    assert "in f30" in trace and "in f0" not in trace


def test_a_hosted_tasks_trace_keeps_the_hosts_first_line() -> None:
    """The host sends its status trace as text; the driver's error keeps its first line."""
    hosted = hosted_error(status_trace(tolerance_exceeded()), retriable=False)
    assert headline(hosted) == TOLERANCE_LINE
    trace = status_trace(hosted)
    assert trace.split("\n", 1)[0] == TOLERANCE_LINE
    assert "in the Spark task hosting the task" in trace


def test_a_hosted_tasks_status_shows_the_hosts_trace_not_how_its_news_came() -> None:
    """Below the headline comes the trace the host made, where the failure is; the frames
    of the driver that took the host's news and raised it again are not shown."""
    host_trace = status_trace(tolerance_exceeded())
    headline_line, _, host_frames = host_trace.partition("\n")

    def driver_loop_took_the_news() -> None:
        raise hosted_error(host_trace, retriable=False)

    with pytest.raises(HostedTaskError) as caught:
        driver_loop_took_the_news()
    trace = status_trace(caught.value)
    assert trace == f"{headline_line}\nin the Spark task hosting the task:\n{host_frames}"
    assert "driver_loop_took_the_news" not in trace
    assert status_trace(caught.value, "while starting").startswith(
        f"while starting: {headline_line}\nin the Spark task hosting the task:\n")
    # wrapped by another error, the chain is shown as for any other error
    try:
        try:
            driver_loop_took_the_news()
        except HostedTaskError as hosted:
            raise RuntimeError("the task's retries ran out") from hosted
    except RuntimeError as wrapper:
        assert "driver_loop_took_the_news" in status_trace(wrapper)


def failed(runner: ScriptedRunner) -> Callable[[], bool]:
    return lambda: runner.state is State.FAILED


def test_a_failed_tasks_status_opens_on_the_root_cause(
    runners: list[ScriptedRunner],  # noqa: F811
) -> None:
    on_driver = start(runners, ScriptedRunner([tolerance_exceeded()], retry_policy=FAST))
    hosted = start(runners, ScriptedRunner(
        [hosted_error(status_trace(tolerance_exceeded()), retriable=False)], retry_policy=FAST
    ))
    for runner in (on_driver, hosted):
        wait_for(failed(runner))
        assert runner.recorder.last().trace.split("\n", 1)[0] == TOLERANCE_LINE


def test_a_task_that_gave_up_retrying_names_the_last_error_on_its_first_line(
    runners: list[ScriptedRunner],  # noqa: F811
) -> None:
    policy = replace(FAST, timeout_s=0.05)
    runner = start(runners, ScriptedRunner([transient() for _ in range(1000)],
                                           retry_policy=policy))
    wait_for(lambda: runner.state is State.FAILED)
    first = runner.recorder.last().trace.split("\n", 1)[0]
    assert first.startswith("Retried a retriable error for ")
    assert first.endswith("Last error: cimpl.KafkaException: KafkaError{code=NOT_LEADER_FOR_"
                          "PARTITION,val=6,str=\"leader moved\"}")

