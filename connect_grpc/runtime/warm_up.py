"""Warming the executors' Python workers: each loads the task runtime once, at start-up.

Above the task modules (it loads them) and beside the worker, which hands
:func:`warm_python_workers` to :meth:`SparkRuntime.start
<connect_grpc.runtime.spark.SparkRuntime.start>`: ``spark`` itself, which the task modules
build on, does not import them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

#: Seconds each warm-up Spark task holds its slot (see ``warm_python_workers``).
WARM_UP_HOLD_S = 0.2
#: Python workers warmed up at most, however many slots Spark offers.
MAX_WARM_WORKERS = 8


def _import_task_hosts(rows: Iterator[object]) -> Iterator[object]:
    """Loads what a hosted task needs into an executor Python worker (kept for reuse)."""
    for _ in rows:
        pass
    from connect_grpc.runtime.hosting import sink_host, source_host  # noqa: F401 - for their cost

    time.sleep(WARM_UP_HOLD_S)
    yield from ()


def warm_python_workers(context: Any, slots: int) -> None:
    """Starts a Python worker per task slot and loads the task runtime into it, so that
    the first hosted tasks connect in milliseconds rather than seconds (``spark.python.
    worker.reuse`` keeps them). Each Spark task holds its slot for WARM_UP_HOLD_S, so that
    they run side by side, one per worker."""
    count = min(slots, MAX_WARM_WORKERS)
    context.parallelize(range(count), count).mapPartitions(_import_task_hosts).collect()
