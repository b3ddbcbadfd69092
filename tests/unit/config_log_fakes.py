"""A config log without a broker, for the leader's writes in unit tests: each record is
applied to a real KafkaConfigStore as it is sent, at the next offset, and the store's
listener told at once (each record a batch of its own), unless the log is told to hold
records back (a tail that lags the acknowledgement), until :meth:`AppliedLog.catch_up`.
A transaction checked before its commit (``before_commit``) is held back while the check
runs, the records before it read, as a read_committed tail reads up to an open
transaction; a failed check aborts it (its records are never applied)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from connect_grpc.storage.config_codec import RawRecord, term_marker_record
from connect_grpc.storage.kafka_config import KafkaConfigStore
from connect_grpc.storage.log_records import LogRecord


class AppliedLog:
    """Applies each record to the store as it is sent, at the next offset; a new leader's
    term marker (of ``next_term``) goes in before the record at ``marker_before`` of the
    next write."""

    def __init__(self, apply: Any, after_batch: Any) -> None:
        self._apply = apply
        self._after_batch = after_batch
        self.records: list[LogRecord] = []
        self.marker_before: int | None = None
        self.next_term = 0
        #: While set, records are written but not applied (the tail has not read them).
        self.holding = False
        self._applied = 0
        self._caught_up = threading.Condition()
        self.read_backs = 0
        self.reads_to_end = 0
        #: Offsets of records of aborted transactions (never applied).
        self.aborted: set[int] = set()

    def send_all(
        self,
        records: Sequence[RawRecord],
        *,
        headers: Sequence[tuple[str, bytes]] = (),
        carrier_headers: Sequence[tuple[str, bytes]] = (),
        carrier_index: int = -1,
        timeout: float | None = None,
    ) -> list[LogRecord]:
        carrier = range(len(records))[carrier_index] if records else None
        written = []
        for index, (key, value) in enumerate(records):
            if index == self.marker_before:
                self._append(*term_marker_record(self.next_term), ())
            extra = tuple(carrier_headers) if index == carrier else ()
            written.append(self._append(key, value, (*headers, *extra)))
        self.marker_before = None
        return written

    def _append(self, key: bytes, value: bytes | None, headers: tuple[Any, ...]) -> LogRecord:
        record = LogRecord(key, value, 0, len(self.records), headers=headers)
        self.records.append(record)
        if not self.holding:
            self.catch_up()
        return record

    def catch_up(self, until: int | None = None) -> None:
        """The tail reads every record written so far (or those before offset ``until``)."""
        end = len(self.records) if until is None else min(until, len(self.records))
        with self._caught_up:
            for record in self.records[self._applied:end]:
                if record.offset not in self.aborted:
                    self._apply(record)
                    self._after_batch()
            self._applied = max(self._applied, end)
            self._caught_up.notify_all()

    def read_past(
        self,
        records: Sequence[LogRecord],
        timeout: float | None = None,
        *,
        before_batch_end: bool = False,
    ) -> None:
        """Counted; records held back are applied first (the tail reads them)."""
        self.read_backs += 1
        self.catch_up()

    def read_to_end(self, timeout: float | None = None) -> None:
        """Counted; the tail reads every record written so far."""
        self.reads_to_end += 1
        self.catch_up()

    def read_until(
        self,
        positions: Mapping[int, int],
        timeout: float | None = None,
        *,
        before_batch_end: bool = False,
    ) -> None:
        """Waits until the records before ``positions[0]`` are applied (by ``catch_up``)."""
        with self._caught_up:
            self._caught_up.wait_for(lambda: self._applied >= positions[0], timeout)

    def on_tail_thread(self) -> bool:
        return False


class WholeWriter:
    """The fenced writer: one transaction, applied whole (after ``before_commit``, if any,
    passed: a failed check aborts it)."""

    def __init__(self, log: AppliedLog) -> None:
        self._log = log
        #: Called with a checked transaction's records before they are checked (a test's
        #: other writer, say, whose record then comes before them).
        self.on_open: Any = None

    def send_all(
        self, records: list[RawRecord], timeout: float, *, before_commit: Any = None
    ) -> list[LogRecord]:
        if before_commit is None:
            return self._log.send_all(records)
        holding, self._log.holding = self._log.holding, True
        try:
            if self.on_open is not None:
                self.on_open()
            written = self._log.send_all(records)
            self._log.catch_up(until=written[0].offset if written else None)
            try:
                before_commit(written)
            except BaseException:
                self._log.aborted.update(record.offset for record in written)
                raise
        finally:
            self._log.holding = holding
        if not holding:
            self._log.catch_up()
        return written


def applied_store(on_change: Any = None) -> tuple[KafkaConfigStore, AppliedLog]:
    """A config store whose log is an :class:`AppliedLog` (no broker), telling
    ``on_change`` of each change."""
    store = KafkaConfigStore({"bootstrap.servers": "127.0.0.1:1"}, "configs", on_change=on_change)
    log = AppliedLog(store._apply, store._tell_listener)
    store._log = log  # type: ignore[assignment]  # no broker
    return store, log
