"""How long each phase of a worker's start took, for its ``worker_ready`` log line.

A worker's start crosses several layers (the command line, the herder, the runtime, Spark)
and, in part, several threads; each times its own phases with :func:`start_phase`, which
records into the :class:`StartPhases` the process made current with :func:`recording` (a
context variable: one per process object, so in-process workers of a test do not mix
theirs) and does nothing when none is. A thread started during the start records into the
same one when it runs in a copy of the starting thread's context
(``contextvars.copy_context().run``).
"""

from __future__ import annotations

import contextvars
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)


class StartPhases:
    """The phases of one worker's start, by name, in seconds (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds: dict[str, float] = {}

    def record(self, name: str, seconds: float) -> None:
        """Adds ``seconds`` to the phase ``name`` (a phase run twice counts both)."""
        with self._lock:
            self._seconds[name] = self._seconds.get(name, 0.0) + seconds

    def fields(self) -> dict[str, float]:
        """The phases as log fields, ``<name>_s``, to the hundredth of a second, in the
        order they were first recorded."""
        with self._lock:
            return {f"{name}_s": round(seconds, 2) for name, seconds in self._seconds.items()}


_CURRENT: contextvars.ContextVar[StartPhases | None] = contextvars.ContextVar(
    "connect_grpc_start_phases", default=None
)


@contextmanager
def recording(phases: StartPhases) -> Iterator[StartPhases]:
    """Makes ``phases`` where :func:`start_phase` records, for the block."""
    token = _CURRENT.set(phases)
    try:
        yield phases
    finally:
        _CURRENT.reset(token)


@contextmanager
def start_phase(name: str) -> Iterator[None]:
    """Times the block as the phase ``name`` of the current start (also when it raises);
    nothing when no start is being recorded."""
    phases = _CURRENT.get()
    started = time.monotonic()
    try:
        yield
    finally:
        if phases is not None:
            phases.record(name, time.monotonic() - started)


def process_age_s() -> float | None:
    """Seconds since this process was created (its interpreter's start and imports
    included), or None where ``/proc`` does not tell (not Linux)."""
    try:
        stat = Path("/proc/self/stat").read_text("ascii", errors="replace")
        # the fields after the command's name, which may hold spaces and parentheses;
        # the 22nd field of the line, the start time in clock ticks since boot, is the 20th
        start_ticks = int(stat.rsplit(")", 1)[1].split()[19])
        boot_clock = time.clock_gettime(time.CLOCK_BOOTTIME)
        return max(0.0, boot_clock - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return None


@contextmanager
def running_beside(target: Callable[[], None], name: str) -> Iterator[None]:
    """Runs ``target`` on a thread of its own (named ``name``, in a copy of the caller's
    context: its phases are recorded too) while the block runs, and waits for it when the
    block ends, however it ends: nothing ``target`` started is left running unseen. Then
    raises what ``target`` raised; an exception of the block's own wins, and ``target``'s
    is logged."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as exc:  # handed to the caller's thread
            failures.append(exc)

    thread = threading.Thread(
        target=contextvars.copy_context().run, args=(run,), name=name, daemon=True
    )
    thread.start()
    try:
        yield
    except BaseException:
        thread.join()
        if failures:
            log.warning("start_step_failed", step=name, exc_info=failures[0])
        raise
    thread.join()
    if failures:
        raise failures[0]
