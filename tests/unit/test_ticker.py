"""run_ticks (the herder threads' loop): a woken step first waits ``settle_s``, and the wakes
that come meanwhile (the other records of one write) are carried out by that same step."""

from __future__ import annotations

import threading

import structlog

from connect_grpc.herder.ticker import run_ticks

SETTLE_S = 0.25


class _Stopping(threading.Event):
    """The loop's stop event; records the settle waits and, in each, lets another wake in
    (a record read while the step settles)."""

    def __init__(self, wake: threading.Event) -> None:
        super().__init__()
        self.wake = wake
        self.settles = 0

    def wait(self, timeout: float | None = None) -> bool:
        if timeout == SETTLE_S:
            self.settles += 1
            self.wake.set()
        return super().wait(timeout)


def _run(wake: threading.Event, stopping: _Stopping, tick_s: float) -> list[bool]:
    """Runs the loop until its first step; what ``wake`` was when that step ran."""
    seen: list[bool] = []

    def step() -> None:
        seen.append(wake.is_set())
        stopping.set()

    run_ticks(step, wake=wake, stopping=stopping, tick_s=tick_s,
              log=structlog.get_logger(), failure_event="step_failed", settle_s=SETTLE_S)
    return seen


def test_a_woken_step_settles_and_takes_the_wakes_that_came_meanwhile() -> None:
    wake = threading.Event()
    stopping = _Stopping(wake)
    wake.set()

    seen = _run(wake, stopping, tick_s=30.0)

    assert stopping.settles == 1
    assert seen == [False], "the wake of the settle time was taken by this step"


def test_a_step_on_the_tick_does_not_settle() -> None:
    wake = threading.Event()
    stopping = _Stopping(wake)

    seen = _run(wake, stopping, tick_s=0.01)

    assert stopping.settles == 0 and seen == [False]


def _hurried_loop() -> tuple[threading.Event, threading.Event, threading.Event, threading.Thread]:
    """A loop settling 30 s when woken, with a hurry; its step sets ``ran`` and stops it.
    Returns (wake, hurry, ran, the loop's thread), the thread started."""
    wake, hurry, stopping, ran = (threading.Event() for _ in range(4))

    def step() -> None:
        ran.set()
        stopping.set()

    loop = threading.Thread(target=run_ticks, args=(step,), kwargs={
        "wake": wake, "stopping": stopping, "tick_s": 30.0, "log": structlog.get_logger(),
        "failure_event": "step_failed", "settle_s": 30.0, "hurry": hurry,
    }, daemon=True)
    loop.start()
    return wake, hurry, ran, loop


def test_a_hurried_wake_does_not_settle() -> None:
    wake, hurry, ran, loop = _hurried_loop()
    hurry.set()
    wake.set()
    assert ran.wait(5), "the step waited out the settle time"
    loop.join(5)
    assert not hurry.is_set(), "the loop clears the hurry it took"


def test_a_hurry_during_the_settle_ends_it() -> None:
    wake, hurry, ran, loop = _hurried_loop()
    wake.set()
    assert not ran.wait(0.2)  # settling
    hurry.set()
    assert ran.wait(5)
    loop.join(5)
