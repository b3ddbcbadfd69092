"""Nothing but a task's own failure ends its loop (issue 23, item 1): a status report that
raises while Kafka is away (the status topic's ``_MSG_TIMED_OUT``) leaves the task retrying
and is reported again once it can be; a loop that ends all the same shows FAILED with its
trace; the watchdog notices a loop that is gone while the task's status says it runs."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from connect_grpc.kernel.domain import InstanceStatus, State, TargetState, TaskId
from connect_grpc.kernel.errors import ConnectError
from connect_grpc.runtime.retry import RetryPolicy
from tests.unit.test_task_retry import (
    FAST,
    ScriptedRunner,
    runners,  # noqa: F401 - the fixture
    start,
    transient,
    wait_for,
)

pytestmark = pytest.mark.timeout(20)


class FlakyRecorder:
    """A listener whose reports raise, as a status write to an unreachable Kafka did."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.failing = threading.Event()
        self.refused = 0

    def on_task_status(self, task: TaskId, status: InstanceStatus) -> None:
        if self.failing.is_set():
            self.refused += 1
            raise ConnectError("write to connect-status failed: Local: Message timed out")
        self.inner.on_task_status(task, status)

    def on_connector_status(self, connector: str, status: InstanceStatus) -> None:
        return None

    def on_reconfiguration_requested(self, connector: str) -> None:
        return None


def flaky(runner: ScriptedRunner) -> FlakyRecorder:
    listener = FlakyRecorder(runner.recorder)
    runner._listener = listener
    return listener


def test_a_status_report_that_raises_does_not_end_the_loop(
    runners: list[ScriptedRunner],  # noqa: F811
) -> None:
    # retrying never times out here: on a loaded machine 10 quick retries may take seconds
    patient = RetryPolicy(timeout_s=600, backoff_max_s=0.02, backoff_initial_s=0.01)
    runner = ScriptedRunner([True, *[transient() for _ in range(100_000)]], retry_policy=patient)
    listener = flaky(runner)
    # failing from the start: set after it, the first RETRYING could be reported before
    # (every retry's status is the same, so none after it is reported again)
    listener.failing.set()
    start(runners, runner)
    wait_for(lambda: runner.batches >= 10 and listener.refused >= 2, timeout=30)
    assert runner._thread is not None and runner._thread.is_alive()
    assert runner.state is State.RETRYING
    listener.failing.clear()
    runner.outcomes.clear()  # the next batch succeeds
    wait_for(lambda: runner.state is State.RUNNING, timeout=30)
    assert runner._thread.is_alive()
    # the report that failed was made again: the last status reported is the current one
    wait_for(lambda: runner.recorder.last().state is State.RUNNING, timeout=30)


def test_a_report_that_failed_is_made_again_by_the_watchdog(
    runners: list[ScriptedRunner],  # noqa: F811
) -> None:
    runner = ScriptedRunner([transient(), *[False] * 1000], retry_policy=FAST)
    listener = flaky(runner)
    listener.failing.set()
    assert runner.start({}, TargetState.STARTED)
    runners.append(runner)
    wait_for(lambda: runner.batches >= 3)
    assert runner.recorder.statuses == []  # every report so far failed
    listener.failing.clear()
    runner.watch()
    assert runner.recorder.last().state is State.RUNNING


def test_a_loop_ending_on_an_unexpected_error_shows_failed_with_its_trace(
    runners: list[ScriptedRunner],  # noqa: F811
) -> None:
    runner = ScriptedRunner([True], retry_policy=FAST)

    def broken_retry(exc: Exception) -> bool:
        raise MemoryError("out of memory while handling the failure")

    runner._retry_later = broken_retry  # type: ignore[method-assign]
    runner.outcomes.append(transient())
    start(runners, runner)
    wait_for(lambda: runner.state is State.FAILED)
    trace = runner.recorder.last().trace
    assert "loop ended on an unexpected error" in trace and "MemoryError" in trace


def test_the_watchdog_fails_a_task_whose_loop_is_gone(
    runners: list[ScriptedRunner],  # noqa: F811
) -> None:
    runner = ScriptedRunner([], retry_policy=FAST)
    start(runners, runner)
    runner.watch()
    assert runner.state is State.RUNNING  # alive: nothing to say
    # a loop thread that vanished without a word (as a thread killed from outside would)
    runner._stopping.set()
    assert runner._thread is not None
    runner._thread.join(2)
    runner._stopping.clear()
    runner.watch()
    assert runner.state is State.FAILED
    assert "no longer running" in runner.recorder.last().trace



def test_the_watchdog_leaves_a_task_that_is_still_starting_alone() -> None:
    # the worker lists a runner before its start returns (a hosted task connecting to its
    # host): a report now would show the PAUSED a runner is born with (a flicker seen
    # between RESTARTING and the restart's outcome)
    runner = ScriptedRunner([], retry_policy=FAST)
    runner.watch()
    assert runner.recorder.statuses == []
    assert runner.state is State.PAUSED  # what it would have shown


def test_the_watchdog_leaves_a_stopping_task_alone(
    runners: list[ScriptedRunner],  # noqa: F811
) -> None:
    runner = start(runners, ScriptedRunner([], retry_policy=FAST))
    reported = len(runner.recorder.statuses)
    runner.request_stop()
    assert runner._thread is not None
    runner._thread.join(2)
    runner._reported = None  # as if its last report had failed
    runner.watch()
    assert len(runner.recorder.statuses) == reported
