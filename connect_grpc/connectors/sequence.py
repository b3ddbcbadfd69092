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

With ``sequence.partitions=P``, the sequence is split into ``P`` source partitions that do
not depend on the task count: partition ``p`` (``{"partition": p}``) owns the indexes
``i % P == p``, and task ``t`` of ``N`` emits the partitions ``p % N == t``, taking one entry
of each in turn. A partition resumes after its own offset whichever task emits it, so
``tasks.max`` may change while the sequence runs (tasks beyond ``P`` have nothing to do).

With ``sequence.transaction.size=K``, the connector defines its own transactions on a worker
with exactly-once support (``transaction.boundary=connector``): a task asks a commit after
every K-th entry of each of its partitions (the entries counted from the partition's first,
so the points do not depend on where the task resumed) and after the partition's last.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import structlog

from connect_grpc.connectors.api import (
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
    TransactionContext,
)
from connect_grpc.kernel.configdef import (
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
from connect_grpc.kernel.domain import OffsetMap

__all__ = ["SequenceSourceConnector", "SequenceSourceTask", "next_index"]

_log = structlog.get_logger(__name__)

TOPIC_CONFIG = "topic"
COUNT_CONFIG = "sequence.count"
RATE_CONFIG = "sequence.rate"
START_CONFIG = "sequence.start"
TRANSACTION_SIZE_CONFIG = "sequence.transaction.size"
PARTITIONS_CONFIG = "sequence.partitions"
#: Task config keys set by the connector: this task's number and the number of tasks.
TASK_ID_CONFIG = "task.id"
TASKS_CONFIG = "sequence.tasks"

#: Source partition keys (the task number, or with sequence.partitions the partition
#: number) and source offset key (last emitted index).
TASK_FIELD = "task"
PARTITION_FIELD = "partition"
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
        ConfigKey(TRANSACTION_SIZE_CONFIG, ConfigType.LONG,
                  "With transaction.boundary=connector: a task commits a transaction "
                  "after every this many entries of each of its partitions (and after their "
                  "last). Unset: the connector cannot define transaction boundaries.",
                  default=None, importance=Importance.LOW, validator=at_least(1)),
        ConfigKey(PARTITIONS_CONFIG, ConfigType.INT,
                  "Split the sequence into this many source partitions, spread over the "
                  "tasks, that keep their offsets when tasks.max changes. Unset: one "
                  "partition per task ({\"task\": t}).",
                  default=None, importance=Importance.LOW, validator=at_least(1)),
    ]
)


def _is_non_negative_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def partition_field(config: Mapping[str, str]) -> str:
    """The source partition key of a connector with this config: ``partition`` with
    ``sequence.partitions``, else ``task``."""
    return PARTITION_FIELD if (config.get(PARTITIONS_CONFIG) or "").strip() else TASK_FIELD


def check_offset(
    partition: Mapping[str, object] | None,
    offset: Mapping[str, object] | None,
    field: str = TASK_FIELD,
) -> None:
    """Raises ValueError unless the pair has the sequence source's shape.

    The partition must be ``{field: <non-negative int>}`` (``field`` is ``task`` or
    ``partition``, see ``partition_field``); the offset ``None`` (reset) or
    ``{"seq": <non-negative int>}``.
    """
    if partition is None:
        raise ValueError("Partition objects cannot be null")
    if not _is_non_negative_int(partition.get(field)):
        raise ValueError(
            f"Partition objects should contain the key '{field}' with a non-negative "
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
        self._config = {key: str(value) for key, value in parsed.items() if value is not None}
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

    def can_define_transaction_boundaries(
        self, config: Mapping[str, str]
    ) -> ConnectorTransactionBoundaries:
        """SUPPORTED when ``sequence.transaction.size`` is set."""
        if (config.get(TRANSACTION_SIZE_CONFIG) or "").strip():
            return ConnectorTransactionBoundaries.SUPPORTED
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def alter_offsets(
        self,
        config: Mapping[str, str],
        offsets: Sequence[tuple[OffsetMap, OffsetMap | None]],
    ) -> bool:
        """Checks every pair's shape (see ``check_offset``); raises ValueError if malformed.

        Returns:
            True: the framework's offsets are the connector's only state.
        """
        field = partition_field(config)
        for partition, offset in offsets:
            check_offset(partition, offset, field)
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


@dataclass(slots=True)
class _Stream:
    """The entries of one source partition: indexes ``first, first + stride, …``."""

    partition: dict[str, int]  # one object shared by every record of the partition
    first: int
    stride: int
    next: int

    def remaining(self, count: int) -> int:
        if count < 0:
            return _UNBOUNDED
        if self.next >= count:
            return 0
        return (count - 1 - self.next) // self.stride + 1


class SequenceSourceTask(SourceTask):
    """Emits its share of the sequence, resuming after its committed offsets.

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
        self._count = -1
        self._start = 0
        self._streams: list[_Stream] = []
        self._limiter = _RateLimiter(0.0, clock, sleep)
        self._transaction_size = 0
        self._transactions: TransactionContext | None = None

    def start(self, config: Mapping[str, str]) -> None:
        """Reads the committed offset of each of its partitions and resumes right after it.

        Raises:
            ValueError: the config or a committed offset is malformed.
        """
        parsed = CONFIG.parse(config)
        self._topic = str(parsed[TOPIC_CONFIG])
        self._count = int(parsed[COUNT_CONFIG])
        self._start = int(parsed[START_CONFIG])
        self._task = int(config.get(TASK_ID_CONFIG, "0"))
        tasks = int(config.get(TASKS_CONFIG, "1"))
        if not 0 <= self._task < tasks:
            raise ValueError(f"task.id {self._task} is not in [0, {tasks})")
        self._limiter = _RateLimiter(float(parsed[RATE_CONFIG]), self._clock, self._sleep)
        size = parsed[TRANSACTION_SIZE_CONFIG]
        self._transaction_size = 0 if size is None else int(size)
        self._transactions = self.context.transaction_context
        partitions = parsed[PARTITIONS_CONFIG]
        if partitions is None:
            self._streams = [self._stream(TASK_FIELD, self._task, tasks)]
        else:
            self._streams = [
                self._stream(PARTITION_FIELD, p, int(partitions))
                for p in range(self._task, int(partitions), tasks)
            ]
        _log.info("sequence_task_started", task=self._task,
                  next_indexes=[stream.next for stream in self._streams])

    def _stream(self, field: str, number: int, stride: int) -> _Stream:
        partition = {field: number}
        offset = self.context.offset_reader.offset(partition)
        last: int | None = None
        if offset is not None:
            check_offset(partition, offset, field)
            seq = offset[SEQ_FIELD]
            assert isinstance(seq, int)  # checked above
            last = seq
        return _Stream(partition, number, stride, next_index(number, stride, last))

    @property
    def next_index(self) -> int:
        """The index of the next entry this task emits (the first task: 0 when it has none)."""
        return min((stream.next for stream in self._streams), default=0)

    def _remaining(self) -> int:
        return sum(stream.remaining(self._count) for stream in self._streams)

    def poll(self, max_records: int) -> list[SourceRecord]:
        """Up to ``max_records`` next entries, fewer when rate-limited, [] when done."""
        wanted = min(max_records, self._remaining())
        if wanted <= 0:
            return []
        granted = self._limiter.acquire(wanted)
        if len(self._streams) == 1:
            records = self._take_run(self._streams[0], granted)
        else:
            records = self._take_in_turn(granted)
        if self._transactions is not None and self._transaction_size:
            self._ask_commits(records, self._transactions)
        return records

    def _take_run(self, stream: _Stream, granted: int) -> list[SourceRecord]:
        """The next ``granted`` entries of one partition, as ``_record`` makes them, built
        inline and positionally: benchmarks ask a million records a second of this source,
        and a call and keyword arguments per record were about 30 % of its CPU a record."""
        partition, topic, stride = stream.partition, self._topic, stream.stride
        first = stream.next
        end = first + granted * stride
        stream.next = end
        values = map(str, range(self._start + first, self._start + end, stride))
        return [
            SourceRecord(partition, {SEQ_FIELD: index}, topic, text, text)
            for index, text in zip(range(first, end, stride), values, strict=True)
        ]

    def _take_in_turn(self, granted: int) -> list[SourceRecord]:
        """One entry of each partition in turn, skipping partitions that are done."""
        records: list[SourceRecord] = []
        while len(records) < granted:
            for stream in self._streams:
                if len(records) < granted and stream.remaining(self._count):
                    records.append(self._record(stream, stream.next))
                    stream.next += stream.stride
        return records

    def _ask_commits(self, records: list[SourceRecord], context: TransactionContext) -> None:
        """Asks a commit after every ``sequence.transaction.size``-th entry of a partition
        (counted from the partition's first entry) and after the partition's last."""
        size, count = self._transaction_size, self._count
        streams = {id(stream.partition): stream for stream in self._streams}
        for record in records:
            stream = streams[id(record.source_partition)]
            index = record.source_offset[SEQ_FIELD]
            assert isinstance(index, int)
            ordinal = (index - stream.first) // stream.stride
            if (ordinal + 1) % size == 0 or 0 <= count <= index + stream.stride:
                context.commit_transaction(record)

    def _record(self, stream: _Stream, index: int) -> SourceRecord:
        text = str(self._start + index)
        return SourceRecord(
            source_partition=stream.partition,
            source_offset={SEQ_FIELD: index},
            topic=self._topic,
            value=text,
            key=text,
        )

    def stop(self, connector_deleted: bool = False) -> None:
        """Nothing to release."""
        _log.info("sequence_task_stopped", task=self._task,
                  next_indexes=[stream.next for stream in self._streams],
                  connector_deleted=connector_deleted)
