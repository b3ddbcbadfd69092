"""What a batch's Kafka I/O reports to the driver, and how soon it answers a stop.

The functions Spark runs on executors (``produce.produce_slices``,
``range_reader.read_ranges``) never raise for a Kafka error: they report it in their result (a
``KafkaFailure``, picklable, saying whether it is retriable), so the driver can tell a
transient outage from a fatal error without parsing an executor's stack trace; the driver
raises ``KafkaIoError`` from it. Producing and reading both look at whether the task is
stopping between waits of ``FLUSH_SLICE_S``.

A module of its own, below producing and reading: the task loops, the retry policy and
topic creation name these results without importing either; ``KafkaIoError``, which the
dead-letter queue raises too, is the kernel's (``kernel.kafka_clients``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from confluent_kafka import KafkaError

from connect_grpc.kernel.kafka_clients import KafkaIoError, is_retriable

#: How many delivery errors a slice reports in full (the count is always exact).
MAX_REPORTED_ERRORS = 5
#: Seconds of one wait for deliveries or records, between two looks at whether to stop.
FLUSH_SLICE_S = 0.1


class KafkaFailure(NamedTuple):
    """A Kafka error as an executor reports it to the driver."""

    code: int
    name: str
    retriable: bool
    message: str

    @classmethod
    def of(cls, error: KafkaError, context: str = "") -> KafkaFailure:
        prefix = f"{context}: " if context else ""
        return cls(error.code(), error.name(), is_retriable(error), f"{prefix}{error.str()}")


class RecordRefusedError(Exception):
    """The broker (or the client, for the record's size) refused a record for good: what a
    skipped record's report says about it (KIP-779)."""

    def __init__(self, failure: KafkaFailure) -> None:
        super().__init__(f"{failure.name}: {failure.message}")
        self.failure = failure


class ProduceResult(NamedTuple):
    """What a produce slice reports: records handed to the producer, records not delivered
    (errors, or still queued at the flush timeout), the first error messages, whether
    every failure was retriable, and the records the broker (or the client, for their size)
    refused for good, by their index in the slice, when the slice was written one record
    per request (see :func:`produce._hand_one_by_one`)."""

    produced: int
    failed: int
    messages: list[str]
    retriable: bool = True
    refused: tuple[tuple[int, KafkaFailure], ...] = ()

    @property
    def only_refusals(self) -> bool:
        """Every record failed was refused for good, each named (a tolerable outcome)."""
        return self.failed == len(self.refused)


#: What a reader makes of each message: a row to pickle (executors) or a SinkRecord.
R = TypeVar("R")


class RangeResult(NamedTuple, Generic[R]):
    """What reading one range returns: the next offset to consume and the rows read, or the
    failure that stopped the read (then the rows are to be discarded)."""

    topic: str
    partition: int
    next_offset: int
    rows: list[R]
    failure: KafkaFailure | None = None


def raise_read_failure(results: Sequence[RangeResult[Any]]) -> None:
    """Raises KafkaIoError for the first failed range (retriable iff every failure is)."""
    failures = [r.failure for r in results if r.failure is not None]
    if failures:
        raise KafkaIoError(
            "; ".join(f"{f.name}: {f.message}" for f in failures[:MAX_REPORTED_ERRORS]),
            retriable=all(f.retriable for f in failures),
        )


def never() -> bool:
    """The ``stopping`` of a batch that nothing stops."""
    return False
