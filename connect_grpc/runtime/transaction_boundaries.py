"""Where an exactly-once source task's transactions end (``transaction.boundary``).

Kafka Connect's three boundaries (KIP-618), decided at three moments:

- **after a record**: only ``connector``, when the task named that record in
  ``commit_transaction(record)`` / ``abort_transaction(record)``;
- **after a batch** (also an empty poll): ``poll`` always commits; ``interval`` commits once
  ``transaction.boundary.interval.ms`` passed since its last commit; ``connector`` does what
  the task asked with ``commit_transaction()`` / ``abort_transaction()``;
- **at the end** (the task is pausing or stopping normally): ``poll`` and ``interval``
  commit what is open; ``connector`` only what the task asked for.

An abort drops the transaction's records but not their offsets: those are committed right
after, in a transaction of their own, so the task does not receive the same records again
(Kafka Connect does the same). Re-sending them is the task's business.
"""

from __future__ import annotations

import abc
import enum
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from connect_grpc.connectors.api import SourceRecord, TransactionBoundary
from connect_grpc.kernel.configdef import java_trim, parse_java_integer

__all__ = [
    "DEFAULT_INTERVAL_MS",
    "Boundary",
    "Decision",
    "TaskTransactionContext",
    "boundary_settings",
    "new_boundary",
]

TRANSACTION_BOUNDARY = "transaction.boundary"
TRANSACTION_BOUNDARY_INTERVAL_MS = "transaction.boundary.interval.ms"
#: ``transaction.boundary.interval.ms`` when unset: Kafka Connect's offset.flush.interval.ms
#: default, which is what it falls back to.
DEFAULT_INTERVAL_MS = 60_000
_LONG_MAX = 2**63 - 1


class Decision(enum.Enum):
    """How an open transaction ends."""

    COMMIT = "commit"
    ABORT = "abort"


def _stronger(first: Decision | None, second: Decision) -> Decision:
    """Abort wins over commit when both are asked for the same point (Kafka Connect's rule)."""
    return Decision.ABORT if Decision.ABORT in (first, second) else Decision.COMMIT


class TaskTransactionContext:
    """The plugin API's ``TransactionContext`` of one task with ``transaction.boundary=
    connector``: it records what the task asks; the task's producer applies it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._after_batch: Decision | None = None
        #: Requests naming a record, by the record's identity (records are not hashable).
        self._after_record: dict[int, tuple[SourceRecord, Decision]] = {}

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        """Commits after ``record`` (it ends the transaction) or, without one, after the
        batch the task is returning records for."""
        self._ask(record, Decision.COMMIT)

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        """Aborts after ``record`` (its transaction's records are dropped, up to and
        including it) or, without one, after the batch; their offsets are still committed."""
        self._ask(record, Decision.ABORT)

    def _ask(self, record: SourceRecord | None, decision: Decision) -> None:
        with self._lock:
            if record is None:
                self._after_batch = _stronger(self._after_batch, decision)
                return
            earlier = self._after_record.get(id(record))
            self._after_record[id(record)] = (
                record, _stronger(None if earlier is None else earlier[1], decision)
            )

    def take_splits(self, records: Sequence[SourceRecord]) -> list[tuple[int, Decision]]:
        """Where the task asked to end a transaction inside ``records``: (index after the
        named record, decision), in order. Forgets those requests."""
        with self._lock:
            if not self._after_record:
                return []
            splits = []
            for index, record in enumerate(records):
                asked = self._after_record.pop(id(record), None)
                if asked is not None and asked[0] is record:
                    splits.append((index + 1, asked[1]))
            return splits

    def take_batch_request(self) -> Decision | None:
        """What the task asked for the end of the batch, if anything; forgets it."""
        with self._lock:
            asked, self._after_batch = self._after_batch, None
            return asked


class Boundary(abc.ABC):
    """One task's rule for ending its transactions."""

    #: The context handed to the plugin (``connector`` boundaries only).
    context: TaskTransactionContext | None = None

    def splits(self, records: Sequence[SourceRecord]) -> list[tuple[int, Decision]]:
        """Transaction ends inside a batch (see ``TaskTransactionContext.take_splits``)."""
        return []

    @abc.abstractmethod
    def after_batch(self) -> Decision | None:
        """How the open transaction ends after a batch (or an empty poll), if it does."""

    @abc.abstractmethod
    def at_end(self) -> Decision | None:
        """How the open transaction ends when the task pauses or stops normally."""


class _PollBoundary(Boundary):
    def after_batch(self) -> Decision | None:
        return Decision.COMMIT

    def at_end(self) -> Decision | None:
        return Decision.COMMIT


class _IntervalBoundary(Boundary):
    def __init__(self, interval_s: float, clock: Callable[[], float]) -> None:
        self._interval_s = interval_s
        self._clock = clock
        self._last_commit = clock()

    def after_batch(self) -> Decision | None:
        now = self._clock()
        if now < self._last_commit + self._interval_s:
            return None
        self._last_commit = now
        return Decision.COMMIT

    def at_end(self) -> Decision | None:
        return Decision.COMMIT


class _ConnectorBoundary(Boundary):
    def __init__(self) -> None:
        self.context = TaskTransactionContext()

    def splits(self, records: Sequence[SourceRecord]) -> list[tuple[int, Decision]]:
        assert self.context is not None
        return self.context.take_splits(records)

    def after_batch(self) -> Decision | None:
        assert self.context is not None
        return self.context.take_batch_request()

    def at_end(self) -> Decision | None:
        return self.after_batch()


def boundary_settings(connector_config: Mapping[str, str]) -> tuple[TransactionBoundary, float]:
    """The connector's ``transaction.boundary`` and its interval in seconds (validated at
    the edge; parsed here as its ConfigDef does: trimmed, case-insensitive, a Java long)."""
    raw = java_trim(connector_config.get(TRANSACTION_BOUNDARY) or "") or "poll"
    boundary = TransactionBoundary(raw.lower())
    raw_interval = java_trim(connector_config.get(TRANSACTION_BOUNDARY_INTERVAL_MS) or "")
    interval_ms = (
        parse_java_integer(raw_interval, 0, _LONG_MAX) if raw_interval else DEFAULT_INTERVAL_MS
    )
    return boundary, interval_ms / 1000


def new_boundary(
    boundary: TransactionBoundary,
    interval_s: float,
    clock: Callable[[], float] = time.monotonic,
) -> Boundary:
    """A task's boundary rule; its ``context`` is the plugin's transaction context."""
    if boundary is TransactionBoundary.INTERVAL:
        return _IntervalBoundary(interval_s, clock)
    if boundary is TransactionBoundary.CONNECTOR:
        return _ConnectorBoundary()
    return _PollBoundary()
