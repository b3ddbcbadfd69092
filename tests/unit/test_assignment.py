"""The leader's assignment of connectors and tasks to live workers (issue 8, item 7): balanced
within one, nothing lost or doubled, least movement, deterministic. Property-style: seeded
random inputs, checked against the invariants and, for small clusters, against a brute-force
search for the least movement any balanced assignment could achieve."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pytest

from connect_grpc.cluster.assignment import (
    Rebalance,
    WorkerAssignment,
    WorkerChange,
    _computed_whole,
    _without_moves,
    diff,
    rebalance,
    safe_step,
)
from connect_grpc.kernel.domain import TaskId

pytestmark = pytest.mark.timeout(60)

SEEDS = range(400)


def for_each_seed(check: Callable[[int], None]) -> None:
    """Runs ``check`` on every seed; a failure names its seed, so it can be replayed."""
    for seed in SEEDS:
        try:
            check(seed)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}: {exc}") from exc

Connectors = dict[str, list[TaskId]]
Assignment = dict[str, WorkerAssignment]


def connectors_with(**task_counts: int) -> Connectors:
    return {name: [TaskId(name, t) for t in range(n)] for name, n in task_counts.items()}


def instances(assignment: Mapping[str, WorkerAssignment]) -> list[str | TaskId]:
    """Every instance the assignment places, with repeats if any is placed twice."""
    placed: list[str | TaskId] = []
    for held in assignment.values():
        placed.extend(held.connectors)
        placed.extend(held.tasks)
    return placed


def wanted(connectors: Connectors) -> set[str | TaskId]:
    return {*connectors, *(task for tasks in connectors.values() for task in tasks)}


def spread(values: Sequence[int]) -> int:
    return max(values) - min(values) if values else 0


@dataclass(frozen=True)
class Case:
    live: list[str]
    connectors: Connectors
    previous: Assignment


def random_connectors(rng: random.Random) -> Connectors:
    names = rng.sample([f"c{n:02d}" for n in range(12)], rng.randint(0, 8))
    return connectors_with(**{name: rng.randint(0, 6) for name in names})


def random_previous(
    rng: random.Random, workers: Sequence[str], connectors: Connectors
) -> Assignment:
    """Some of the current instances, plus deleted ones, each on one random worker (live or
    dead): what a cluster looks like after joins, deaths, creates and deletes."""
    stale = connectors_with(**{f"gone{n}": rng.randint(0, 2) for n in range(rng.randint(0, 2))})
    placed: dict[str, tuple[set[str], set[TaskId]]] = {w: (set(), set()) for w in workers}
    for pool in (connectors, stale):
        for name, tasks in pool.items():
            if rng.random() < 0.7:
                placed[rng.choice(workers)][0].add(name)
            for task in tasks:
                if rng.random() < 0.7:
                    placed[rng.choice(workers)][1].add(task)
    return {w: WorkerAssignment.of(c, t) for w, (c, t) in placed.items() if c or t}


def random_case(seed: int, max_workers: int = 5) -> Case:
    rng = random.Random(seed)
    everyone = [f"w{n}" for n in range(max_workers + 2)]
    live = rng.sample(everyone, rng.randint(1, max_workers))
    connectors = random_connectors(rng)
    return Case(live, connectors, random_previous(rng, everyone, connectors))


def least_movement(case: Case) -> int:
    """Brute force: over every choice of which workers take the spare connectors and spare
    tasks that keeps totals within one, the fewest existing instances that must leave a
    live owner."""
    live = sorted(case.live)
    names, tasks = wanted_split(case.connectors)
    held_c = {w: len(set(case.previous.get(w, WorkerAssignment()).connectors) & names)
              for w in live}
    held_t = {w: len(set(case.previous.get(w, WorkerAssignment()).tasks) & tasks)
              for w in live}
    base_c, extra_c = divmod(len(names), len(live))
    base_t, extra_t = divmod(len(tasks), len(live))
    best = 0
    for plus_c in itertools.combinations(live, extra_c):
        for plus_t in itertools.combinations(live, extra_t):
            totals = [(w in plus_c) + (w in plus_t) for w in live]
            if spread(totals) > 1:
                continue
            kept = sum(
                min(held_c[w], base_c + (w in plus_c)) + min(held_t[w], base_t + (w in plus_t))
                for w in live
            )
            best = max(best, kept)
    return sum(held_c.values()) + sum(held_t.values()) - best


def wanted_split(connectors: Connectors) -> tuple[set[str], set[TaskId]]:
    return set(connectors), {task for tasks in connectors.values() for task in tasks}


def check_invariants(case: Case, result: Rebalance) -> None:
    assignment = result.assignment
    assert sorted(assignment) == sorted(case.live)
    placed = instances(assignment)
    assert len(placed) == len(set(placed)), "an instance is placed twice"
    assert set(placed) == wanted(case.connectors), "an instance is lost or a deleted one kept"
    held = list(assignment.values())
    assert spread([h.size for h in held]) <= 1
    assert spread([len(h.connectors) for h in held]) <= 1
    assert spread([len(h.tasks) for h in held]) <= 1
    assert result.changes == diff(case.previous, assignment)


def check_changes(previous: Assignment, result: Rebalance) -> None:
    """Applying each worker's change to what it held gives what it holds now."""
    for worker in set(previous) | set(result.assignment):
        before = previous.get(worker, WorkerAssignment())
        change = result.changes.get(worker, WorkerChange())
        after = WorkerAssignment.of(
            (set(before.connectors) - set(change.revoked.connectors))
            | set(change.assigned.connectors),
            (set(before.tasks) - set(change.revoked.tasks)) | set(change.assigned.tasks),
        )
        assert after == result.assignment.get(worker, WorkerAssignment())


def test_random_inputs_are_balanced_complete_and_move_the_least() -> None:
    def check(seed: int) -> None:
        case = random_case(seed)

        result = rebalance(case.live, case.connectors, case.previous)

        check_invariants(case, result)
        check_changes(case.previous, result)
        assert result.moved == least_movement(case)

    for_each_seed(check)


def test_an_unchanged_input_moves_nothing() -> None:
    def check(seed: int) -> None:
        case = random_case(seed)
        first = rebalance(case.live, case.connectors, case.previous)

        again = rebalance(case.live, case.connectors, first.assignment)

        assert again.changes == {} and again.assignment == first.assignment

    for_each_seed(check)


def test_the_same_input_in_any_order_gives_the_same_output() -> None:
    def check(seed: int) -> None:
        case = random_case(seed)
        rng = random.Random(seed)
        shuffled_live = rng.sample(case.live, len(case.live))
        shuffled_connectors = {
            name: rng.sample(case.connectors[name], len(case.connectors[name]))
            for name in rng.sample(sorted(case.connectors), len(case.connectors))
        }

        first = rebalance(case.live, case.connectors, case.previous)
        second = rebalance(shuffled_live, shuffled_connectors, case.previous)

        assert first == second

    for_each_seed(check)


def test_a_joining_worker_moves_only_what_balance_needs() -> None:
    def check(seed: int) -> None:
        rng = random.Random(seed)
        live = [f"w{n}" for n in range(rng.randint(1, 4))]
        connectors = random_connectors(rng)
        settled = rebalance(live, connectors, {}).assignment
        joined = Case([*live, "w9"], connectors, dict(settled))

        result = rebalance(joined.live, connectors, joined.previous)

        check_invariants(joined, result)
        assert result.moved == least_movement(joined)
        total = len(wanted(connectors))
        assert result.moved <= -(-total // len(joined.live)), "more than the joiner's share moved"
        assert all(not change.assigned.size for w, change in result.changes.items() if w != "w9")

    for_each_seed(check)


def test_a_dead_workers_instances_are_reassigned_and_nothing_else_moves_needlessly() -> None:
    def check(seed: int) -> None:
        rng = random.Random(seed)
        live = [f"w{n}" for n in range(rng.randint(2, 5))]
        connectors = random_connectors(rng)
        settled = rebalance(live, connectors, {}).assignment
        dead = rng.choice(live)
        survivors = Case([w for w in live if w != dead], connectors, dict(settled))

        result = rebalance(survivors.live, connectors, survivors.previous)

        check_invariants(survivors, result)
        if settled[dead].size:
            assert result.changes[dead] == WorkerChange(revoked=settled[dead])
        assert result.moved == least_movement(survivors)

    for_each_seed(check)


def test_duplicated_and_deleted_instances_are_cleaned_up() -> None:
    connectors = connectors_with(a=2)
    previous = {
        "w1": WorkerAssignment.of(["a", "old"], [TaskId("a", 0), TaskId("old", 0)]),
        "w2": WorkerAssignment.of(["a"], [TaskId("a", 0), TaskId("a", 1)]),
    }

    result = rebalance(["w1", "w2"], connectors, previous)

    check_invariants(Case(["w1", "w2"], connectors, previous), result)
    assert "old" in result.changes["w1"].revoked.connectors
    assert TaskId("old", 0) in result.changes["w1"].revoked.tasks


def test_a_first_assignment_spreads_each_connectors_tasks() -> None:
    connectors = connectors_with(a=3, b=3, c=3)

    result = rebalance(["w1", "w2", "w3"], connectors, {})

    assert [held.size for held in result.assignment.values()] == [4, 4, 4]
    for name in connectors:
        owners = [w for w, held in result.assignment.items()
                  for task in held.tasks if task.connector == name]
        assert len(set(owners)) == 3, f"{name}'s tasks share a worker"
    assert all(not change.revoked.size for change in result.changes.values())


def test_a_fourth_worker_takes_three_tasks_and_nothing_else_moves() -> None:
    connectors = connectors_with(a=3, b=3, c=3)
    settled = rebalance(["w1", "w2", "w3"], connectors, {}).assignment

    result = rebalance(["w1", "w2", "w3", "w4"], connectors, settled)

    assert result.moved == 3
    assert result.assignment["w4"].size == 3 and not result.assignment["w4"].connectors
    assert sorted(held.size for held in result.assignment.values()) == [3, 3, 3, 3]


def test_with_no_live_worker_everything_is_revoked() -> None:
    previous = {"w1": WorkerAssignment.of(["a"], [TaskId("a", 0)])}

    result = rebalance([], connectors_with(a=1), previous)

    assert result.assignment == {}
    assert result.changes == {"w1": WorkerChange(revoked=previous["w1"])}
    assert result.moved == 0


def test_no_connectors_means_empty_assignments() -> None:
    result = rebalance(["w2", "w1"], {}, {})

    assert result.assignment == {"w1": WorkerAssignment(), "w2": WorkerAssignment()}
    assert result.changes == {}


def test_an_equal_input_gets_the_last_answer_and_a_changed_one_is_computed() -> None:
    def instances() -> dict[str, list[TaskId]]:
        return {"a": [TaskId("a", 0)], "b": [TaskId("b", 0), TaskId("b", 1)]}

    first = rebalance(["w1", "w2"], instances(), {})
    assert rebalance(["w1", "w2"], instances(), {}) is first
    alone = rebalance(["w1"], instances(), first.assignment)
    assert alone is not first and alone.assignment["w1"].size == 5
    step = safe_step(first.assignment, {})
    step.pop("w1")
    assert set(safe_step(first.assignment, {})) == {"w1", "w2"}


def _safe_step_by_definition(
    target: dict[str, WorkerAssignment], current: dict[str, WorkerAssignment]
) -> dict[str, WorkerAssignment]:
    """What safe_step must give: each worker's target less what another worker holds."""
    step = {}
    for worker, wanted in target.items():
        elsewhere = {i for w, a in current.items() if w != worker
                     for i in (*a.connectors, *a.tasks)}
        step[worker] = WorkerAssignment.of(
            [c for c in wanted.connectors if c not in elsewhere],
            [t for t in wanted.tasks if t not in elsewhere],
        )
    return step


@pytest.mark.parametrize("seed", range(20))
def test_safe_step_withholds_exactly_what_another_worker_holds(seed: int) -> None:
    """Also for an instance listed under two workers (withheld from both, and the rest)."""
    rng = random.Random(seed)
    workers = ["w1", "w2", "w3"]
    names = [f"c{n}" for n in range(8)]
    tasks = [TaskId(name, n) for name in names for n in range(2)]

    def some() -> dict[str, WorkerAssignment]:
        return {w: WorkerAssignment.of(rng.sample(names, 3), rng.sample(tasks, 5))
                for w in rng.sample(workers, rng.randint(0, 3))}

    target, current = some(), some()
    assert safe_step(target, current) == _safe_step_by_definition(target, current)


def test_a_rebalance_tells_its_changes_from_the_assignment_it_started_from() -> None:
    previous = {"w1": WorkerAssignment.of(["a", "b"])}
    result = rebalance(["w1", "w2"], {"a": [], "b": []}, previous)
    assert result.previous == previous
    assert result.changes == diff(previous, result.assignment)
    assert result.moved == 1


def evolved_case(seed: int) -> tuple[Case, bool]:
    """A settled cluster (a rebalance's answer, carried out) after what happens between two
    runs of the leader's loop: connectors created (with or without their tasks), tasks added
    or dropped, connectors deleted, sometimes a worker joining or leaving; and whether only
    instances were added (the members and everything else unchanged)."""
    rng = random.Random(seed)
    everyone = [f"w{n}" for n in range(6)]
    live = rng.sample(everyone, rng.randint(1, 5))
    connectors = random_connectors(rng)
    settled = dict(rebalance(live, connectors, {}).assignment)
    changed = {name: list(tasks) for name, tasks in connectors.items()}
    for n in range(rng.randint(0, 3)):
        changed[f"new{n}"] = [TaskId(f"new{n}", t) for t in range(rng.randint(0, 3))]
    only_added = True
    if changed and rng.random() < 0.3:
        name = rng.choice(sorted(changed))
        changed[name] = changed[name][: rng.randint(0, len(changed[name]))]
        only_added = False
    if changed and rng.random() < 0.3:
        del changed[rng.choice(sorted(changed))]
        only_added = False
    if rng.random() < 0.2:
        live = [w for w in live if w != live[0]] or live
        live.append(rng.choice([w for w in everyone if w not in live]))
        only_added = False
    previous = {w: a for w, a in settled.items() if w in live}
    return Case(live, changed, previous), only_added


def test_a_change_that_moves_nothing_is_placed_alone_with_the_whole_computations_answer() -> None:
    """``_without_moves`` (new instances placed alone) answers exactly as the whole
    computation does, or declines; it does not decline when only instances were added."""
    placed_alone = 0

    def check(seed: int) -> None:
        nonlocal placed_alone
        case, only_added = evolved_case(seed)
        live = sorted(case.live)

        alone = _without_moves(live, case.connectors, case.previous)
        whole = _computed_whole(live, case.connectors, case.previous)

        if alone is not None:
            placed_alone += 1
            assert alone == whole
            result = rebalance(case.live, case.connectors, case.previous)
            check_invariants(case, result)
            assert result.moved == 0 == least_movement(case)
        else:
            assert not only_added, "declined a change that only added instances"
            assert Rebalance(whole, case.previous).moved > 0, "declined though nothing moves"
        for worker, share in (alone or {}).items():
            if share == case.previous.get(worker):
                assert share is case.previous[worker], "an unchanged share is a new object"

    for_each_seed(check)
    assert placed_alone > len(SEEDS) // 2


def test_placing_alone_declines_an_instance_held_twice() -> None:
    twice = {"w1": WorkerAssignment.of(["a"]), "w2": WorkerAssignment.of(["a"])}
    assert _without_moves(["w1", "w2"], {"a": [], "b": []}, twice) is None
