"""The loop of the cluster herder's background threads: a step when woken, and every tick
anyway, until stopped. A step's failure is logged and the next tick tries again."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from connect_grpc.kernel.errors import ConnectError


def run_ticks(
    step: Callable[[], None],
    *,
    wake: threading.Event,
    stopping: threading.Event,
    tick_s: float,
    log: Any,
    failure_event: str,
    settle_s: float = 0.0,
    hurry: threading.Event | None = None,
    beat: Callable[[], None] | None = None,
) -> None:
    """Runs ``step`` when ``wake`` is set and every ``tick_s`` seconds, until ``stopping``;
    logs a failed step as ``failure_event`` (a ConnectError as a warning, anything else
    with its trace). Woken, it first waits ``settle_s``: the wakes of a burst (the records
    of one write) then make one step. ``hurry``, when set, ends that wait at once (a caller
    waits for the step); the loop clears it. ``beat`` is called at each turn of the loop,
    waiting or not (the loop's liveness heartbeat: ``herder.liveness``)."""
    while not stopping.is_set():
        if beat is not None:
            beat()
        if wake.wait(tick_s) and settle_s > 0:
            (stopping if hurry is None else hurry).wait(settle_s)
        if hurry is not None:
            hurry.clear()
        wake.clear()
        if stopping.is_set():
            return
        try:
            step()
        except ConnectError as exc:
            log.warning(failure_event, error=exc.message)
        except Exception:
            log.exception(failure_event)
