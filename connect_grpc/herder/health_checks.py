"""KIP-1017's two health checks of a worker: liveness and (for a cluster's worker) readiness.

Liveness: the herder's loops have gone round within a bound.

Each loop of the control plane (the distributed worker's reconciler and leader threads; a
standalone worker's control-plane lock, which its calls take as Kafka's StandaloneHerder
takes its monitor) beats a ``Heartbeat`` once per iteration: one monotonic timestamp, so
the loops pay nothing for it. ``LoopHeartbeats.report`` says NOT_SERVING, naming the loop,
once one of them has not beaten for longer than ``health.liveness.timeout.ms``.

A loop waits on Kafka only within a deadline shorter than the smallest bound the worker
accepts, so a broker outage slows a round but never silences a loop for that long: it makes
the worker not ready (``readiness``), never not live, and no liveness probe restarts a
whole cluster because Kafka is down. A loop that has not beaten yet (the worker is still
starting) is not counted: starting is readiness's matter too.

Readiness (``group_readiness``): a distributed worker has started, is a member of its group
and has read, in the config topic, an assignment that names it; each herder adds Kafka's
reachability to it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection

from connect_grpc.kernel.domain import HealthReport

#: Where the seconds come from: ``time.monotonic`` but in the tests.
Clock = Callable[[], float]

#: ``HealthReport.cause`` of a loop that went silent for longer than the bound.
LOOP_STUCK = "loop_stuck"


class Heartbeat:
    """When one loop last went round. ``beat`` is what the loop calls, each iteration."""

    def __init__(self, name: str, clock: Clock) -> None:
        self.name = name
        self._clock = clock
        #: Written by the loop's thread only; a float store is atomic under the GIL.
        self._last: float | None = None

    def beat(self) -> None:
        self._last = self._clock()

    def silent_for(self) -> float | None:
        """Seconds since the last beat; None before the first."""
        last = self._last
        return None if last is None else max(0.0, self._clock() - last)


class LoopHeartbeats:
    """The heartbeats of a worker's loops, and whether every one is within ``bound_ms``."""

    def __init__(self, bound_ms: int, clock: Clock = time.monotonic) -> None:
        self._bound_ms = bound_ms
        self._clock = clock
        self._lock = threading.Lock()
        self._loops: dict[str, Heartbeat] = {}

    def loop(self, name: str) -> Heartbeat:
        """The heartbeat of the loop ``name`` (the same one on every call)."""
        with self._lock:
            return self._loops.setdefault(name, Heartbeat(name, self._clock))

    def report(self) -> HealthReport:
        """NOT_SERVING naming the silent loop(s), else SERVING."""
        with self._lock:
            loops = list(self._loops.values())
        bound_s = self._bound_ms / 1000
        silent = [
            (loop.name, silent_for)
            for loop in loops
            if (silent_for := loop.silent_for()) is not None and silent_for > bound_s
        ]
        if not silent:
            return HealthReport(True)
        named = ", ".join(f"{name} for {seconds:.0f} s" for name, seconds in silent)
        return HealthReport(
            False,
            f"a herder loop is stuck: no round of {named} "
            f"(health.liveness.timeout.ms={self._bound_ms})",
            LOOP_STUCK,
        )


def group_readiness(
    *, started: bool, left_with: str | None, member: bool, assigned: Collection[str],
    worker_id: str,
) -> HealthReport:
    """Whether a distributed worker is ready as far as its group goes: ``started`` (its
    ``start`` read the internal topics to their end), not deposed for good (``left_with``,
    the election's fatal error), a ``member`` of the group now, and named by the last
    assignment it read from the config topic (``assigned``: that assignment's workers), so
    that it read the config topic at least as far as the leader's answer to its joining."""
    if not started:
        return HealthReport(False, "the worker is still starting", "starting")
    if left_with is not None:
        return HealthReport(False, f"this worker left the cluster: {left_with}", "left_group")
    if not member:
        return HealthReport(False, "this worker is not a member of its group now", "not_joined")
    if worker_id not in assigned:
        return HealthReport(
            False,
            "this worker has not read an assignment that names it in the config topic yet",
            "not_assigned",
        )
    return HealthReport(True)


def live_and_ready(liveness: Callable[[], HealthReport],
                   readiness: Callable[[], HealthReport]) -> HealthReport:
    """Both checks at once (``Herder.health``): the first that fails says why."""
    live = liveness()
    return live if not live.serving else readiness()
