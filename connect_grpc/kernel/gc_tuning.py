"""The garbage collector's thresholds for processes that build batches of records.

A batch is tens of thousands of short-lived objects (records, their offset maps, rows), and
CPython's default generation-0 threshold (700 allocations) runs a collection every few
hundred of them; each one also traverses the batch built so far. Measured on 100k
``SourceRecord``s: 2.9 µs a record with the defaults, 2.1 µs with a threshold of 50 000
(the driver is where a source's records are built, and it was the busiest process).
Reference cycles are still collected, only in larger steps.

A sink's in-process reader goes further and pauses the collector while it reads a batch
(:func:`collector_paused`): even in large steps, collections walk the batch's records and
the client's message objects again and again while the batch grows, and reading creates no
reference cycles for them to find. Measured on 1M 100-byte records read in batches of 100k
and written by FileStreamSink in one process: 233k records/s with the thresholds above,
283k/s with the collector paused during each read. A sink task's pipeline (converters and
transformations) pauses it too while it makes a batch's records (``TaskPipeline.apply_sink``),
and an in-process sink batch keeps it paused from its read until its records are released
(``sink_loop.read_and_put``, the task's ``put`` included: reference cycles a plugin makes
there wait for the end of the batch).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Generation 0, 1 and 2 thresholds for the worker and its executor Python workers.
BATCH_GC_THRESHOLDS = (50_000, 10, 10)


def tune_for_batches() -> None:
    """Raises the generation-0 threshold to ``BATCH_GC_THRESHOLDS``' unless it is already as
    high (a process may have chosen its own). Idempotent; process-wide."""
    if gc.get_threshold()[0] < BATCH_GC_THRESHOLDS[0]:
        gc.set_threshold(*BATCH_GC_THRESHOLDS)


_pause_lock = threading.Lock()
_pauses = 0
_paused_by_us = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disables the cyclic collector for the block's duration, for code that builds many
    objects and no reference cycles. Concurrent pauses (driver threads) nest: the collector
    is enabled again when the last one ends, and only if a pause disabled it."""
    global _pauses, _paused_by_us
    with _pause_lock:
        if _pauses == 0:
            _paused_by_us = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _paused_by_us:
                gc.enable()
