"""KIP-610's ErrantRecordReporter, which a sink task's context hands the task: a record
the task cannot write goes to the log and the dead-letter queue as it was read.

It sees its task's pipeline through ``ErrantRecords`` only, the three things it needs."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Protocol

from connect_grpc.connectors.api import SinkRecord
from connect_grpc.pipeline.tolerance import ErrorHandlerError

__all__ = ["ErrantRecordReporter", "ErrantRecords"]


class ErrantRecords(Protocol):
    """What an ErrantRecordReporter needs of its task's pipeline (``TaskPipeline``)."""

    def original_of(self, record: SinkRecord) -> SinkRecord | None:
        """The raw record a record of the last batch put came from (None if it is not one)."""

    def as_read(self, record: SinkRecord) -> SinkRecord:
        """A record the task made itself, as bytes through the task's converters."""

    def report_errant(self, original: SinkRecord, error: BaseException) -> Future[None] | None:
        """Reports the record at stage TASK_PUT; the dead-letter queue's write (None
        without a queue). Raises ErrorHandlerError with ``errors.tolerance=none``."""


class ErrantRecordReporter:
    """What a sink task reports records it cannot write with (KIP-610): the record goes to
    the log and the dead-letter queue as it was read, and with ``errors.tolerance=none``
    the call raises and the task fails after its ``put``."""

    def __init__(self, pipeline: ErrantRecords) -> None:
        self._pipeline = pipeline
        self._lock = threading.Lock()
        self._first_error: ErrorHandlerError | None = None

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        """Reports ``record``; the Future completes when the dead-letter queue has it (at
        once without a queue). Raises ErrorHandlerError with ``errors.tolerance=none``."""
        pipeline = self._pipeline
        original = pipeline.original_of(record) or pipeline.as_read(record)
        # The task's threads report one at a time: the queue's write of this report is
        # the one the pipeline answers with.
        with self._lock:
            try:
                future = pipeline.report_errant(original, error)
            except ErrorHandlerError as exc:
                if self._first_error is None:
                    self._first_error = exc
                raise
        if future is None:
            future = Future()
            future.set_result(None)
        return future

    def maybe_raise(self) -> None:
        """After ``put``: raises the tolerance error of a report the task swallowed."""
        with self._lock:
            error = self._first_error
        if error is not None:
            raise ErrorHandlerError(str(error)) from error.__cause__
