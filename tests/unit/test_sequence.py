"""Sequence source: task partitioning, resumption after offsets, rate limiting, validation."""

from __future__ import annotations

import pytest

from connect_grpc.connectors.sequence import (
    SequenceSourceConnector,
    SequenceSourceTask,
    next_index,
)
from connect_grpc.runtime.transaction_boundaries import TaskTransactionContext
from connect_grpc.testing.plugins import FakeSourceTaskContext


class FakeClock:
    """Monotonic time that only moves when the task sleeps or the test advances it."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _tasks(
    config: dict[str, str],
    max_tasks: int,
    offsets: dict[int, int] | None = None,
    clock: FakeClock | None = None,
) -> list[SequenceSourceTask]:
    connector = SequenceSourceConnector()
    connector.start({"topic": "seq", **config})
    tasks = []
    for task_config in connector.task_configs(max_tasks):
        task_id = int(task_config["task.id"])
        context = FakeSourceTaskContext(task_id=task_id)
        if offsets and task_id in offsets:
            context.set_offset({"task": task_id}, {"seq": offsets[task_id]})
        task = SequenceSourceTask(clock, clock.sleep) if clock else SequenceSourceTask()
        task.initialize(context)
        task.start(task_config)
        tasks.append(task)
    return tasks


def _drain(task: SequenceSourceTask, batch: int = 3) -> list[str]:
    values: list[str] = []
    while records := task.poll(batch):
        values.extend(str(r.value) for r in records)
    return values


def test_one_task_emits_the_whole_sequence_with_offsets() -> None:
    (task,) = _tasks({"sequence.count": "5"}, 1)
    records = task.poll(10)
    assert [r.value for r in records] == ["0", "1", "2", "3", "4"]
    assert [r.key for r in records] == ["0", "1", "2", "3", "4"]
    assert [r.source_offset for r in records] == [{"seq": i} for i in range(5)]
    assert {r.topic for r in records} == {"seq"}
    assert {tuple(r.source_partition.items()) for r in records} == {(("task", 0),)}
    assert task.poll(10) == []


def test_tasks_partition_the_sequence_without_overlap() -> None:
    tasks = _tasks({"sequence.count": "10", "sequence.start": "100"}, 3)
    produced = [_drain(task) for task in tasks]
    assert produced == [
        ["100", "103", "106", "109"],
        ["101", "104", "107"],
        ["102", "105", "108"],
    ]
    assert sorted(int(v) for values in produced for v in values) == list(range(100, 110))


def test_task_configs_number_every_task() -> None:
    connector = SequenceSourceConnector()
    connector.start({"topic": "seq"})
    configs = connector.task_configs(3)
    assert [c["task.id"] for c in configs] == ["0", "1", "2"]
    assert {c["sequence.tasks"] for c in configs} == {"3"}
    assert all(c["topic"] == "seq" and c["sequence.count"] == "-1" for c in configs)


def test_offset_is_the_last_emitted_index_so_resuming_continues_after_it() -> None:
    (task,) = _tasks({"sequence.count": "10"}, 1, offsets={0: 5})
    assert _drain(task) == ["6", "7", "8", "9"]


def test_resuming_with_several_tasks_skips_to_the_tasks_next_index() -> None:
    tasks = _tasks({"sequence.count": "10"}, 2, offsets={0: 4, 1: 4})
    assert _drain(tasks[0]) == ["6", "8"]
    assert _drain(tasks[1]) == ["5", "7", "9"]


def test_offset_at_the_end_produces_nothing() -> None:
    (task,) = _tasks({"sequence.count": "10"}, 1, offsets={0: 9})
    assert task.poll(100) == []


@pytest.mark.parametrize(
    ("task", "tasks", "last", "expected"),
    [(0, 1, None, 0), (2, 3, None, 2), (0, 1, 5, 6), (1, 3, 4, 7), (1, 3, 0, 1), (2, 3, 2, 5)],
)
def test_next_index(task: int, tasks: int, last: int | None, expected: int) -> None:
    assert next_index(task, tasks, last) == expected


def test_unbounded_sequence_keeps_going() -> None:
    (task,) = _tasks({}, 1)
    assert len(task.poll(1000)) == 1000
    assert task.poll(1)[0].value == "1000"


def test_rate_limit_returns_fewer_records_and_waits_at_most_100_ms() -> None:
    clock = FakeClock()
    (task,) = _tasks({"sequence.rate": "10"}, 1, clock=clock)
    assert len(task.poll(100)) == 1  # one token to start with
    assert clock.sleeps == []
    assert len(task.poll(100)) == 1  # waited one token's time: 0.1 s
    assert clock.sleeps == [pytest.approx(0.1)]
    clock.now += 5.0  # at most one second's worth accumulates
    assert len(task.poll(100)) == 10
    assert all(seconds <= 0.1 for seconds in clock.sleeps)


def test_slow_rate_returns_nothing_rather_than_blocking() -> None:
    clock = FakeClock()
    (task,) = _tasks({"sequence.rate": "0.5"}, 1, clock=clock)
    assert len(task.poll(10)) == 1
    assert task.poll(10) == []
    assert clock.sleeps == [pytest.approx(0.1)]
    clock.now += 2.0
    assert len(task.poll(10)) == 1


def test_config_validation() -> None:
    errors = SequenceSourceConnector().validate(
        {"sequence.count": "-2", "sequence.rate": "x"}
    )
    assert errors["topic"] == [
        'Missing required configuration "topic" which has no default value.'
    ]
    assert errors["sequence.count"] == [
        "Invalid value -2 for configuration sequence.count: Value must be at least -1"
    ]
    assert errors["sequence.rate"] == [
        "Invalid value x for configuration sequence.rate: Not a number of type DOUBLE"
    ]


@pytest.mark.parametrize(
    ("partition", "offset", "message"),
    [
        ({"task": "0"}, {"seq": 1}, "Partition objects should contain the key 'task'"),
        ({"task": -1}, {"seq": 1}, "Partition objects should contain the key 'task'"),
        ({"tsk": 0}, None, "Partition objects should contain the key 'task'"),
        ({"task": 0}, {"seq": -1}, "contain the key 'seq' with a non-negative integer"),
        ({"task": 0}, {"seq": True}, "contain the key 'seq' with a non-negative integer"),
        ({"task": 0}, {"position": 3}, "contain the key 'seq' with a non-negative integer"),
    ],
)
def test_alter_offsets_rejects_malformed_offsets(
    partition: dict[str, object], offset: dict[str, object] | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        SequenceSourceConnector().alter_offsets({}, [(partition, offset)])  # type: ignore[list-item]


def test_alter_offsets_accepts_valid_offsets_and_resets() -> None:
    connector = SequenceSourceConnector()
    assert connector.alter_offsets({}, [({"task": 0}, {"seq": 5}), ({"task": 1}, None)]) is True


def test_task_rejects_a_malformed_committed_offset() -> None:
    with pytest.raises(ValueError, match="'seq'"):
        _tasks_with_raw_offset({"seq": "5"})


def _tasks_with_raw_offset(offset: dict[str, object]) -> None:
    connector = SequenceSourceConnector()
    connector.start({"topic": "seq"})
    context = FakeSourceTaskContext()
    context.set_offset({"task": 0}, offset)
    task = SequenceSourceTask()
    task.initialize(context)
    task.start(connector.task_configs(1)[0])


def _transactional_task(
    size: int, count: int, tasks: int, task_id: int, resume_after: int | None = None
) -> tuple[SequenceSourceTask, TaskTransactionContext]:
    connector = SequenceSourceConnector()
    config = {"topic": "seq", "sequence.count": str(count), "sequence.transaction.size": str(size)}
    connector.start(config)
    transactions = TaskTransactionContext()
    context = FakeSourceTaskContext(task_id=task_id, transaction_context=transactions)
    if resume_after is not None:
        context.set_offset({"task": task_id}, {"seq": resume_after})
    task = SequenceSourceTask()
    task.initialize(context)
    task.start(connector.task_configs(tasks)[task_id])
    return task, transactions


def _commit_points(task: SequenceSourceTask, transactions: TaskTransactionContext) -> list[int]:
    """The values after which the task asked a commit, over polls of 4 records."""
    points = []
    while records := task.poll(4):
        points += [int(str(records[i - 1].value)) for i, _ in transactions.take_splits(records)]
    return points


def test_a_transaction_size_makes_the_task_commit_after_every_kth_entry_of_its_share() -> None:
    task, transactions = _transactional_task(size=3, count=20, tasks=2, task_id=1)
    # task 1 owns 1, 3, 5, …, 19: commits after its 3rd, 6th, 9th entries and its last
    assert _commit_points(task, transactions) == [5, 11, 17, 19]


def test_the_kth_entry_is_counted_from_the_partitions_first_whatever_the_offset() -> None:
    task, transactions = _transactional_task(size=4, count=10, tasks=1, task_id=0, resume_after=5)
    assert _commit_points(task, transactions) == [7, 9]  # entries 3 and 7 of 0..9, then last


def test_only_a_transaction_size_lets_the_connector_define_boundaries() -> None:
    connector = SequenceSourceConnector()
    assert connector.can_define_transaction_boundaries({"topic": "t"}).value == "unsupported"
    supported = connector.can_define_transaction_boundaries(
        {"topic": "t", "sequence.transaction.size": "10"}
    )
    assert supported.value == "supported"
    errors = connector.validate({"topic": "t", "sequence.transaction.size": "0"})
    assert errors["sequence.transaction.size"]


def _partitioned(
    tasks: int, offsets: dict[int, int], count: int = 24, partitions: int = 6
) -> list[SequenceSourceTask]:
    connector = SequenceSourceConnector()
    connector.start(
        {"topic": "seq", "sequence.count": str(count), "sequence.partitions": str(partitions)}
    )
    started = []
    for task_config in connector.task_configs(tasks):
        context = FakeSourceTaskContext(task_id=int(task_config["task.id"]))
        for partition, seq in offsets.items():
            context.set_offset({"partition": partition}, {"seq": seq})
        task = SequenceSourceTask()
        task.initialize(context)
        task.start(task_config)
        started.append(task)
    return started


def _emit(task: SequenceSourceTask, limit: int) -> list[tuple[int, int]]:
    """(partition, index) of up to ``limit`` records, in emission order."""
    emitted: list[tuple[int, int]] = []
    while len(emitted) < limit and (records := task.poll(min(4, limit - len(emitted)))):
        emitted += [(int(str(r.source_partition["partition"])), int(str(r.source_offset["seq"])))
                    for r in records]
    return emitted


def test_partitions_are_spread_over_the_tasks_and_taken_in_turn() -> None:
    first, second, third = _partitioned(3, {})
    assert _emit(first, 5) == [(0, 0), (3, 3), (0, 6), (3, 9), (0, 12)]
    assert _emit(second, 2) == [(1, 1), (4, 4)]
    assert {p for p, _ in _emit(third, 100)} == {2, 5}


def test_partitions_resume_after_their_offsets_whatever_the_task_count() -> None:
    # 3 tasks ran: partition p emitted up to some index; now 5 tasks (and then 1) resume
    offsets = {0: 6, 1: 1, 2: 14, 3: 3, 4: 22, 5: 5}
    for tasks in (5, 1):
        emitted = [pair for task in _partitioned(tasks, offsets) for pair in _emit(task, 100)]
        by_partition = {p: [i for q, i in emitted if q == p] for p in range(6)}
        assert by_partition == {
            p: list(range(offsets[p] + 6, 24, 6)) for p in range(6)
        }, f"{tasks} tasks"


def test_tasks_beyond_the_partition_count_have_nothing_to_do() -> None:
    tasks = _partitioned(8, {}, partitions=6)
    assert [task.poll(10) for task in tasks[6:]] == [[], []]


def test_partitioned_offsets_are_checked_by_their_partition_key() -> None:
    connector = SequenceSourceConnector()
    config = {"topic": "t", "sequence.partitions": "6"}
    assert connector.alter_offsets(config, [({"partition": 5}, {"seq": 11})]) is True
    with pytest.raises(ValueError, match="the key 'partition'"):
        connector.alter_offsets(config, [({"task": 0}, {"seq": 1})])


@pytest.mark.parametrize(("tasks", "offset"), [(1, None), (3, 4), (4, 0)])
def test_a_run_of_one_partition_is_the_records_entry_by_entry(
    tasks: int, offset: int | None
) -> None:
    """The single-partition path builds its records in one go; each is what the task makes
    of that entry on its own (``_record``), and all share the partition's object."""
    offsets = None if offset is None else {1: offset}
    task = _tasks({"sequence.count": "40", "sequence.start": "7"}, tasks, offsets)[
        min(1, tasks - 1)
    ]
    (stream,) = task._streams
    first = stream.next
    records = task.poll(5)
    expected = [task._record(stream, first + k * stream.stride) for k in range(5)]
    assert records == expected
    assert all(r.source_partition is stream.partition for r in records)
    assert stream.next == first + 5 * stream.stride
    assert task.poll(1)[0] == task._record(stream, first + 5 * stream.stride)
