"""The cluster layer's own records (leader, assignment, worker address) and the two-step
assignment that never runs an instance on two workers at once."""

from __future__ import annotations

from typing import Any

import pytest

from connect_grpc.cluster.assignment import WorkerAssignment, rebalance, safe_step
from connect_grpc.cluster.extension_records import (
    ASSIGNMENT_KEY,
    AssignmentRecord,
    LeaderRecord,
    WorkerRecord,
    assignment_in,
    worker_key,
    worker_records,
)
from connect_grpc.kernel.domain import TaskId


def test_leader_record_round_trips() -> None:
    record = LeaderRecord("w1", "10.0.0.1:8083", 3)
    assert LeaderRecord.from_json(record.to_json()) == record
    for authenticates in (True, False):
        said = LeaderRecord("w1", "10.0.0.1:8083", 3, authenticates)
        assert LeaderRecord.from_json(said.to_json()) == said
    # an older leader's record does not say; anything but a boolean is not saying either
    assert LeaderRecord.from_json({"id": "w1", "address": "a", "term": 1}).authenticates is None
    odd = {"id": "w1", "address": "a", "term": 1, "authenticates": "no"}
    assert LeaderRecord.from_json(odd) == LeaderRecord("w1", "a", 1)


@pytest.mark.parametrize(
    "value",
    [None, [], {"id": "w1", "address": "a"}, {"id": 1, "address": "a", "term": 1},
     {"id": "w1", "address": "a", "term": -1}, {"id": "w1", "address": "a", "term": True}],
)
def test_malformed_leader_record_reads_as_none(value: Any) -> None:
    assert LeaderRecord.from_json(value) is None


def test_assignment_record_round_trips_and_names_owners() -> None:
    record = AssignmentRecord(
        7,
        "w1",
        {
            "w1": WorkerAssignment.of(["a"], [TaskId("b", 1)]),
            "w2": WorkerAssignment.of([], [TaskId("a", 0), TaskId("a-b", 2)]),
        },
    )
    assert AssignmentRecord.from_json(record.to_json()) == record
    assert record.owner_of("a") == "w1"
    assert record.owner_of(TaskId("a", 0)) == "w2"
    assert record.owner_of(TaskId("a", 5)) is None
    assert record.of("w3") is None


@pytest.mark.parametrize(
    "value",
    [
        {"generation": 1, "leader": "w1"},
        {"generation": 1, "leader": "w1", "workers": {"w1": {"connectors": [1], "tasks": []}}},
        {"generation": 1, "leader": "w1", "workers": {"w1": {"connectors": [], "tasks": [["a"]]}}},
        {"generation": "1", "leader": "w1", "workers": {}},
    ],
)
def test_malformed_assignment_reads_as_none(value: Any) -> None:
    assert AssignmentRecord.from_json(value) is None


class _Snapshot:
    def __init__(self, extensions: dict[str, Any]) -> None:
        self.extensions = extensions


def test_an_assignment_value_is_parsed_once_and_a_new_one_again() -> None:
    value = AssignmentRecord(3, "w1", {"w1": WorkerAssignment.of(["a"])}).to_json()
    first = assignment_in(_Snapshot({ASSIGNMENT_KEY: value}))
    assert assignment_in(_Snapshot({ASSIGNMENT_KEY: value})) is first
    same_content = AssignmentRecord(3, "w1", {"w1": WorkerAssignment.of(["a"])}).to_json()
    assert assignment_in(_Snapshot({ASSIGNMENT_KEY: same_content})) == first
    newer = AssignmentRecord(4, "w1", {"w2": WorkerAssignment.of(["a"])}).to_json()
    second = assignment_in(_Snapshot({ASSIGNMENT_KEY: newer}))
    assert (second.generation, second.of("w2"), second.of("w1")) == (
        4, WorkerAssignment.of(["a"]), None
    )
    assert assignment_in(_Snapshot({})) == AssignmentRecord()
    assert assignment_in(_Snapshot({ASSIGNMENT_KEY: {"generation": -1}})) == AssignmentRecord()


def test_an_assignment_written_unsorted_or_with_duplicates_reads_sorted_and_unique() -> None:
    value = {"generation": 1, "leader": "w1", "workers": {"w1": {
        "connectors": ["b", "a", "b"],
        "tasks": [["b", 0], ["a", 10], ["a", 2], ["a", 2]],
    }}}
    record = AssignmentRecord.from_json(value)
    assert record is not None
    assert record.of("w1") == WorkerAssignment(
        ("a", "b"), (TaskId("a", 2), TaskId("a", 10), TaskId("b", 0))
    )


@pytest.mark.parametrize(
    "task", [["a", True], ["a", -1], ["a", 1, 2], "a1", [1, 1], ("a", 1)]
)
def test_a_malformed_task_id_makes_the_assignment_malformed(task: Any) -> None:
    value = {"generation": 1, "leader": "w1",
             "workers": {"w1": {"connectors": [], "tasks": [["a", 0], task]}}}
    assert AssignmentRecord.from_json(value) is None


def test_a_workers_unchanged_share_is_the_object_the_previous_value_parsed_to() -> None:
    shares = {
        "w1": WorkerAssignment.of(["a"], [TaskId("a", 0)]),
        "w2": WorkerAssignment.of(["b"], [TaskId("b", 0)]),
    }
    first = assignment_in(_Snapshot({ASSIGNMENT_KEY: AssignmentRecord(1, "w1", shares).to_json()}))
    moved = {**shares, "w2": WorkerAssignment.of(["b", "c"], [TaskId("b", 0)])}
    second = assignment_in(_Snapshot({ASSIGNMENT_KEY: AssignmentRecord(2, "w1", moved).to_json()}))
    assert second.of("w1") is first.of("w1")
    assert second.of("w2") == moved["w2"] and second.of("w2") is not first.of("w2")
    broken = AssignmentRecord(3, "w1", moved).to_json()
    broken["workers"]["w2"]["tasks"].append(["c", "0"])
    assert assignment_in(_Snapshot({ASSIGNMENT_KEY: broken})) == AssignmentRecord()


def test_worker_records_skip_other_keys_and_malformed_values() -> None:
    extensions = {
        worker_key("w1"): {"address": "h:1", "generation": 2},
        worker_key("w2"): {"address": "h:2"},
        "connect-grpc-other": {"address": "h:3", "generation": 1},
    }
    assert worker_records(extensions) == {"w1": WorkerRecord("w1", "h:1", 2)}


def test_safe_step_withholds_a_moved_instance_until_its_owner_let_go() -> None:
    t0, t1, t2, t3 = (TaskId("c", n) for n in range(4))
    current = {"w1": WorkerAssignment.of(["c"], [t0, t1]), "w2": WorkerAssignment.of([], [t2, t3])}
    target = rebalance(["w1", "w2", "w3"], {"c": [t0, t1, t2, t3]}, current).assignment
    moved = {t for t in target["w3"].tasks} | set(target["w3"].connectors)
    assert moved, "the new worker gets a share"

    first = safe_step(target, current)
    assert first["w3"] == WorkerAssignment(), "nothing another worker still holds"
    for worker in ("w1", "w2"):
        assert first[worker] == target[worker], "owners already let go of what moves"

    second = safe_step(target, {w: first[w] for w in ("w1", "w2", "w3")})
    assert second == dict(target)


def test_safe_step_gives_a_departed_workers_instances_at_once() -> None:
    t0, t1 = TaskId("c", 0), TaskId("c", 1)
    current = {"w1": WorkerAssignment.of(["c"], [t0])}  # w2, which ran t1, left the group
    target = rebalance(["w1", "w3"], {"c": [t0, t1]}, current).assignment
    assert safe_step(target, current) == dict(target)
