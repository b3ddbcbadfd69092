"""Batch sizing: how many records one micro-batch moves, and how it is split into slices.

A Spark job costs ≈ 0.1-0.2 s however small it is, so batches grow while the backlog keeps
them full and shrink back when the source runs dry. Pure code: no Spark, no Kafka.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from connect_grpc.kernel.configdef import INT_MAX, java_trim, parse_java_integer

DEFAULT_INITIAL_RECORDS = 10_000
DEFAULT_MAX_RECORDS = 100_000
#: Below this many records per slice, splitting a batch costs more than it saves.
MIN_RECORDS_PER_SLICE = 5000

#: Connector config key overriding the largest batch (records).
BATCH_MAX_RECORDS_KEY = "batch.max.records"


class BatchSizer:
    """Adaptive batch size: doubles while batches come back full, halves when mostly empty."""

    def __init__(
        self, initial: int = DEFAULT_INITIAL_RECORDS, maximum: int = DEFAULT_MAX_RECORDS
    ) -> None:
        if maximum < 1:
            raise ValueError("maximum batch size must be at least 1")
        self._maximum = maximum
        self._minimum = max(1, min(initial, maximum))
        self._size = self._minimum

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> BatchSizer:
        """Reads ``batch.max.records`` (a positive int) from a connector config."""
        raw = config.get(BATCH_MAX_RECORDS_KEY)
        if raw is None or not raw.strip():
            return cls()
        try:
            maximum = parse_java_integer(java_trim(raw), 1, INT_MAX)
        except ValueError:
            raise ValueError(
                f"{BATCH_MAX_RECORDS_KEY} must be an integer from 1 to {INT_MAX}, got {raw}"
            ) from None
        return cls(maximum=maximum)

    @property
    def size(self) -> int:
        """How many records the next batch may take."""
        return self._size

    @property
    def maximum(self) -> int:
        return self._maximum

    def observe(self, moved: int) -> None:
        """Adapts to a batch that moved ``moved`` records out of ``size`` allowed."""
        if moved >= self._size:
            self._size = min(self._size * 2, self._maximum)
        elif moved * 4 < self._size:
            self._size = max(self._size // 2, self._minimum)


def slice_count(records: int, parallelism: int, per_slice: int = MIN_RECORDS_PER_SLICE) -> int:
    """How many Spark partitions a batch of ``records`` gets: at most ``parallelism``."""
    if records <= 0:
        return 1
    return max(1, min(parallelism, math.ceil(records / per_slice)))


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Records [start, end) of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def clip_ranges(ranges: Sequence[OffsetRange], max_records: int) -> list[OffsetRange]:
    """Drops empty ranges and shortens the others so they hold about ``max_records`` together.

    Each non-empty range keeps at least one record and at most an equal share of the budget,
    so one busy partition does not starve the others.
    """
    pending = [r for r in ranges if r.size > 0]
    if not pending:
        return []
    share = max(1, math.ceil(max_records / len(pending)))
    return [
        OffsetRange(r.topic, r.partition, r.start, min(r.end, r.start + share)) for r in pending
    ]
