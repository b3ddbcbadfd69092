"""How fast a connector starts, and what a worker holds with many tasks running: the measures
``bench/filestream.py --connect-grpc-plugins java`` adds beside its throughput rounds.

``measure_start(status, create, delete, ...)``
    From the create call until the connector is RUNNING, then until its every task is
    RUNNING, read by polling the worker's status every ``STATUS_POLL_S`` (any worker: the
    caller passes its calls). Returns a :class:`StartTiming`.
``tasks_rss(...)``
    Creates ``count`` FileStreamSource connectors (one task each), waits until every task
    is RUNNING, lets them settle and returns the RSS of the worker's process tree.

Both systems' statuses are read as Kafka Connect's REST API writes them
(``{"connector": {"state": ...}, "tasks": [{"state": ...}]}``): connect-grpc's worker in
``bench/filestream.py`` maps its GetConnectorStatus into that shape.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_connect import file_stream_source_config, progress

#: How often a start's status is read: the resolution of the timings.
STATUS_POLL_S = 0.01
#: How long the tasks run before the RSS is read (their buffers and clients settled).
SETTLE_S = 5.0

Status = Callable[[str], Mapping[str, Any] | None]


@dataclass(frozen=True)
class StartTiming:
    """One connector's start, in seconds from the create call."""

    #: Until the create call returned.
    created_s: float
    #: Until the connector was RUNNING.
    connector_s: float
    #: Until its every task (at least one) was RUNNING.
    tasks_s: float


def _running(status: Mapping[str, Any] | None) -> tuple[bool, bool]:
    if status is None:
        return False, False
    connector = status.get("connector", {}).get("state") == "RUNNING"
    tasks = status.get("tasks") or []
    return connector, bool(tasks) and all(task.get("state") == "RUNNING" for task in tasks)


def measure_start(
    status: Status,
    create: Callable[[str, Mapping[str, str]], object],
    delete: Callable[[str], None],
    name: str,
    config: Mapping[str, str],
    timeout: float = 120.0,
) -> StartTiming:
    """Creates ``name``, times its connector's and tasks' RUNNING, deletes it."""
    started = time.monotonic()
    create(name, config)
    created = time.monotonic() - started
    connector_at: float | None = None
    while True:
        connector, tasks = _running(status(name))
        now = time.monotonic() - started
        if connector and connector_at is None:
            connector_at = now
        if connector and tasks:
            break
        if now > timeout:
            raise TimeoutError(f"{name}: not RUNNING with its tasks after {timeout:.0f} s: "
                               f"{status(name)}")
        time.sleep(STATUS_POLL_S)
    delete(name)
    assert connector_at is not None
    return StartTiming(created, connector_at, now)


def start_samples(
    status: Status,
    create: Callable[[str, Mapping[str, str]], object],
    delete: Callable[[str], None],
    root: Path,
    samples: int,
    label: str,
) -> list[StartTiming]:
    """``samples`` starts of a FileStreamSource of a one-line file, one after the other,
    each under a new name (the first one of a worker included: nothing is warmed)."""
    source = root / "start-input.txt"
    source.write_text("one line\n", encoding="utf-8")
    timings = []
    for sample in range(samples):
        name = f"bench-start-{sample}"
        config = file_stream_source_config(source, f"bench-start-{root.name}-{sample}")
        timing = measure_start(status, create, delete, name, config)
        progress(f"{label} start {sample}: create {timing.created_s * 1000:.0f} ms, connector "
                 f"RUNNING {timing.connector_s * 1000:.0f} ms, tasks RUNNING "
                 f"{timing.tasks_s * 1000:.0f} ms")
        timings.append(timing)
        time.sleep(0.5)  # the deleted connector's task stopped before the next
    return timings


def tasks_rss(
    status: Status,
    create: Callable[[str, Mapping[str, str]], object],
    delete: Callable[[str], None],
    rss: Callable[[], int],
    root: Path,
    count: int,
    label: str,
    timeout: float = 300.0,
) -> tuple[int, int]:
    """The process tree's RSS before, then with ``count`` FileStreamSource connectors' tasks
    RUNNING (each tailing a file of its own of 1,000 lines: every task has read its file
    and waits for more)."""
    before = rss()
    names = [f"bench-rss-{i}" for i in range(count)]
    for i, name in enumerate(names):
        source = root / f"rss-input-{i}.txt"
        source.write_text("".join(f"line {n}\n" for n in range(1000)), encoding="utf-8")
        create(name, file_stream_source_config(source, f"bench-rss-{root.name}-{i}"))
    started = time.monotonic()
    while not all(_running(status(name)) == (True, True) for name in names):
        if time.monotonic() - started > timeout:
            states = {name: status(name) for name in names}
            raise TimeoutError(f"{count} connectors not all RUNNING after {timeout:.0f} s: "
                               f"{states}")
        time.sleep(0.2)
    progress(f"{label}: {count} tasks RUNNING {time.monotonic() - started:.1f} s after the "
             f"last create")
    time.sleep(SETTLE_S)
    with_tasks = 0
    for _ in range(3):  # the highest of three reads half a second apart
        with_tasks = max(with_tasks, rss())
        time.sleep(0.5)
    for name in names:
        delete(name)
    return before, with_tasks


def start_table(anchor: list[StartTiming], ours: list[StartTiming]) -> list[str]:
    """The medians of each system's starts, and their ratio (ours / the anchor's)."""
    out = [
        "| from the create call until | Kafka Connect (ms) | connect-grpc (ms) | ratio |",
        "|---|---:|---:|---:|",
    ]
    for label, field in (
        ("the create call returned", "created_s"),
        ("the connector RUNNING", "connector_s"),
        ("its task RUNNING", "tasks_s"),
    ):
        a = statistics.median(getattr(t, field) for t in anchor) * 1000
        b = statistics.median(getattr(t, field) for t in ours) * 1000
        out.append(f"| {label} | {a:,.0f} | {b:,.0f} | **{b / a:.2f}x** |")
    return out


def listed_ms(timings: list[StartTiming]) -> str:
    """Each start's task-RUNNING time, in ms, in order."""
    return ", ".join(f"{t.tasks_s * 1000:,.0f}" for t in timings)
