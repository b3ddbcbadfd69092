"""A deterministic source of integers, for tests and benchmarks.

The sequence has ``sequence.count`` entries (``-1``: unbounded); entry ``i`` (its *index*,
counted from 0) has the value ``sequence.start + i``. With ``N`` tasks (``N = max_tasks``),
task ``t`` owns the indexes ``i`` with ``i % N == t`` — ``t, t+N, t+2N, …`` — so together
the tasks produce every entry exactly once.

Records: key and value are the decimal string of the value; the source partition is
``{"task": t}`` and the source offset is ``{"seq": i}``, the **index of the last entry
emitted** (Kafka style: the offset names what has been sent, and a task resumes right
after it). A task whose partition has offset ``{"seq": k}`` continues with the first index
``j > k`` with ``j % N == t``; without an offset it starts at index ``t``. For example, one
task with ``sequence.count=10`` and offset ``{"seq": 5}`` emits the values of indexes 6, 7,
8 and 9, then nothing. The offset is an index, not a value, so it stays valid if
``sequence.start`` changes; partitions are only meaningful for an unchanged task count.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence

import structlog

from connect_grpc.connectors.api import (
    ExactlyOnceSupport,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
)
from connect_grpc.connectors.config import (
    ConfigDef,
    ConfigKey,
    ConfigType,
    Importance,
    all_of,
    at_least,
    define_all,
    finite,
    single_topic,
)
from connect_grpc.domain import OffsetMap

__all__ = ["SequenceSourceConnector", "SequenceSourceTask", "next_index"]

_log = structlog.get_logger(__name__)

TOPIC_CONFIG = "topic"
COUNT_CONFIG = "sequence.count"
RATE_CONFIG = "sequence.rate"
START_CONFIG = "sequence.start"
#: Task config keys set by the connector: this task's number and the number of tasks.
TASK_ID_CONFIG = "task.id"
TASKS_CONFIG = "sequence.tasks"

#: Source partition key (the task number) and source offset key (last emitted index).
TASK_FIELD = "task"
SEQ_FIELD = "seq"

#: The longest ``poll`` waits for the rate limiter, in seconds.
MAX_POLL_WAIT_SECONDS = 0.1

_UNBOUNDED = 2**62
#: Absorbs float rounding in the token bucket (0.1 s x 10/s must make one token).
_EPSILON = 1e-9


CONFIG = define_all(
    [
        ConfigKey(TOPIC_CONFIG, ConfigType.STRING, "The topic to publish the sequence to.",
                  importance=Importance.HIGH, validator=single_topic("SequenceSourceConnector")),
        ConfigKey(COUNT_CONFIG, ConfigType.LONG,
                  "Number of entries in the sequence, over all tasks; -1 for unbounded.",
                  default=-1, importance=Importance.MEDIUM, validator=at_least(-1)),
        ConfigKey(RATE_CONFIG, ConfigType.DOUBLE,
                  "Maximum records per second per task; 0 for unlimited.",
                  default=0.0, importance=Importance.LOW,
                  validator=all_of(finite, at_least(0))),
        ConfigKey(START_CONFIG, ConfigType.LONG, "The value of the entry of index 0.",
                  default=0, importance=Importance.LOW),
    ]
)


def _is_non_negative_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_offset(
    partition: Mapping[str, object] | None, offset: Mapping[str, object] | None
) -> None:
    """Raises ValueError unless the pair has the sequence source's shape.

    The partition must be ``{"task": <non-negative int>}``; the offset ``None`` (reset) or
    ``{"seq": <non-negative int>}``.
    """
    if partition is None:
        raise ValueError("Partition objects cannot be null")
    if not _is_non_negative_int(partition.get(TASK_FIELD)):
        raise ValueError(
            f"Partition objects should contain the key '{TASK_FIELD}' with a non-negative "
            f"integer value, got {dict(partition)!r}"
        )
    if offset is None:
        return
    if not _is_non_negative_int(offset.get(SEQ_FIELD)):
        raise ValueError(
            f"Offset objects should either be null or contain the key '{SEQ_FIELD}' with a "
            f"non-negative integer value, got {dict(offset)!r}"
        )


def next_index(task: int, tasks: int, last_emitted: int | None) -> int:
    """The first index task ``task`` of ``tasks`` emits after index ``last_emitted``."""
    if last_emitted is None:
        return task
    rounds = (last_emitted - task) // tasks + 1
    return task + max(rounds, 0) * tasks


class SequenceSourceConnector(SourceConnector):
    """Splits a sequence of integers among ``max_tasks`` tasks."""

    def __init__(self) -> None:
        self._config: dict[str, str] = {}

    def config_def(self) -> ConfigDef:
        """``topic``, ``sequence.count``, ``sequence.rate``, ``sequence.start``."""
        return CONFIG

    def start(self, config: Mapping[str, str]) -> None:
        """Parses the config. Raises ValueError when it is invalid."""
        parsed = CONFIG.parse(config)
        self._config = {key: str(value) for key, value in parsed.items()}
        _log.info("sequence_connector_started", count=parsed[COUNT_CONFIG])

    def task_class(self) -> type[Task]:
        """SequenceSourceTask."""
        return SequenceSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Exactly ``max_tasks`` configs; task ``t`` owns the indexes ``i % max_tasks == t``."""
        return [
            {**self._config, TASK_ID_CONFIG: str(task), TASKS_CONFIG: str(max_tasks)}
            for task in range(max_tasks)
        ]

    def stop(self, connector_deleted: bool = False) -> None:
        """Nothing to release."""
        _log.info("sequence_connector_stopped", connector_deleted=connector_deleted)

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """SUPPORTED: a task emits the same values after a committed offset every time."""
        return ExactlyOnceSupport.SUPPORTED

    def alter_offsets(
        self,
        config: Mapping[str, str],
        offsets: Sequence[tuple[OffsetMap, OffsetMap | None]],
    ) -> bool:
        """Checks every pair's shape (see ``check_offset``); raises ValueError if malformed.

        Returns:
            True: the framework's offsets are the connector's only state.
        """
        for partition, offset in offsets:
            check_offset(partition, offset)
        return True


class _RateLimiter:
    """A token bucket: ``rate`` tokens per second, holding at most one second's worth."""

    def __init__(
        self, rate: float, clock: Callable[[], float], sleep: Callable[[float], None]
    ) -> None:
        self._rate = rate
        self._capacity = max(rate, 1.0)
        self._clock = clock
        self._sleep = sleep
        self._tokens = 1.0
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self._capacity, self._tokens + (now - self._last) * self._rate)
        self._last = now

    def acquire(self, wanted: int) -> int:
        """Takes up to ``wanted`` tokens; waits at most MAX_POLL_WAIT_SECONDS for the first."""
        if self._rate <= 0:
            return wanted
        self._refill()
        if self._tokens + _EPSILON < 1.0:
            self._sleep(min((1.0 - self._tokens) / self._rate, MAX_POLL_WAIT_SECONDS))
            self._refill()
        granted = min(wanted, math.floor(self._tokens + _EPSILON))
        self._tokens -= granted
        return max(granted, 0)


class SequenceSourceTask(SourceTask):
    """Emits its share of the sequence, resuming after its committed offset.

    Args:
        clock: monotonic seconds, for the rate limiter (tests pass a fake one).
        sleep: how to wait for the rate limiter (never longer than 100 ms per poll).
    """

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._topic = ""
        self._task = 0
        self._partition: dict[str, int] = {TASK_FIELD: 0}
        self._tasks = 1
        self._count = -1
        self._start = 0
        self._next = 0
        self._limiter = _RateLimiter(0.0, clock, sleep)

    def start(self, config: Mapping[str, str]) -> None:
        """Reads the committed offset of ``{"task": t}`` and resumes right after it.

        Raises:
            ValueError: the config or the committed offset is malformed.
        """
        parsed = CONFIG.parse(config)
        self._topic = str(parsed[TOPIC_CONFIG])
        self._count = int(parsed[COUNT_CONFIG])
        self._start = int(parsed[START_CONFIG])
        self._task = int(config.get(TASK_ID_CONFIG, "0"))
        self._tasks = int(config.get(TASKS_CONFIG, "1"))
        if not 0 <= self._task < self._tasks:
            raise ValueError(f"task.id {self._task} is not in [0, {self._tasks})")
        self._partition = {TASK_FIELD: self._task}  # one object shared by every record
        self._limiter = _RateLimiter(float(parsed[RATE_CONFIG]), self._clock, self._sleep)
        self._next = next_index(self._task, self._tasks, self._committed_seq())
        _log.info("sequence_task_started", task=self._task, next_index=self._next)

    def _committed_seq(self) -> int | None:
        partition = {TASK_FIELD: self._task}
        offset = self.context.offset_reader.offset(partition)
        if offset is None:
            return None
        check_offset(partition, offset)
        seq = offset[SEQ_FIELD]
        assert isinstance(seq, int)  # checked above
        return seq

    @property
    def next_index(self) -> int:
        """The index of the next entry this task emits."""
        return self._next

    def _remaining(self) -> int:
        if self._count < 0:
            return _UNBOUNDED
        if self._next >= self._count:
            return 0
        return (self._count - 1 - self._next) // self._tasks + 1

    def poll(self, max_records: int) -> list[SourceRecord]:
        """Up to ``max_records`` next entries, fewer when rate-limited, [] when done."""
        wanted = min(max_records, self._remaining())
        if wanted <= 0:
            return []
        granted = self._limiter.acquire(wanted)
        records = [self._record(self._next + k * self._tasks) for k in range(granted)]
        self._next += granted * self._tasks
        return records

    def _record(self, index: int) -> SourceRecord:
        text = str(self._start + index)
        return SourceRecord(
            source_partition=self._partition,
            source_offset={SEQ_FIELD: index},
            topic=self._topic,
            value=text,
            key=text,
        )

    def stop(self, connector_deleted: bool = False) -> None:
        """Nothing to release."""
        _log.info("sequence_task_stopped", task=self._task, next_index=self._next,
                  connector_deleted=connector_deleted)
